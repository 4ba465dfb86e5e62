"""The in-memory listing of one folder: a tree of directory nodes kept in step with the disk.

Built once by an `os.scandir` walk; each directory is watched (watch.py) *before* it is listed, so
a change racing the scan is either in the listing or in the event queue. The owner calls `sync()`
at the start of every read, which brings the whole tree up to date:

- with notifications, it drains the events queued since the last read and patches the tree per
  event: a changed, created or removed name is looked up again with one `lstat` (a file's record
  and the totals above it are updated in place, a new directory is scanned, a vanished one is
  dropped), so an edit made by another program in place, without touching any directory, shows at
  the next read; when events were lost (queue overflow, fork) every level is listed again;
- a directory without a watch (notifications unavailable, disabled, or out of watches) has its
  level listed again, with a stat of each entry, at every read: the documented re-stat fallback;
- listed links to files are re-stated at every read, since an edit of their target is reported
  for the target's name, not the link's.

Writes made through the store also patch the tree directly (`note_file`, `note_dir`), so a read
right after a write never waits for its event. The tree is not thread-safe by itself: the owning
Folder holds its lock around every call.
"""
from __future__ import annotations

import os
import stat
from bisect import bisect_left, insort
from typing import Any

from .paths import inside, is_listable_name
from .watch import ENTRY_EVENTS, IN_IGNORED, IN_ISDIR, SELF_EVENTS, Subscription

__all__ = ["DirNode", "FileRec", "ReadOnlyDict", "Tree"]


class ReadOnlyDict(dict):
    """A dict that refuses mutation: index entries are shared with the cache, so editing one in place
    would silently corrupt later listings. Copy with dict(entry) to get a mutable one."""

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("slate index entries are read-only; copy with dict(entry) first")

    __setitem__ = __delitem__ = _refuse
    update = pop = popitem = clear = setdefault = __ior__ = _refuse  # type: ignore[assignment]

    def __reduce__(self) -> tuple:
        return (dict, (dict(self),))

    def __copy__(self) -> dict:
        return dict(self)

    def __deepcopy__(self, memo: dict) -> dict:
        import copy

        return copy.deepcopy(dict(self), memo)


_set = dict.__setitem__


class FileRec:
    """What the cache knows about one file: identity, size, times and its rendered index entry."""

    __slots__ = ("ino", "size", "mtime_ns", "ctime_ns", "birth_ns", "link", "entry")

    def __init__(self, name: str, st: os.stat_result, link: bool = False) -> None:
        self.entry = ReadOnlyDict(name=name, size=st.st_size)
        self.size = st.st_size
        self.update(st, link)

    def same(self, st: os.stat_result, link: bool) -> bool:
        """True when `st` describes the file as recorded."""
        return (self.ino == st.st_ino and self.size == st.st_size and self.mtime_ns == st.st_mtime_ns
                and self.ctime_ns == st.st_ctime_ns and self.link == link)

    def update(self, st: os.stat_result, link: bool) -> None:
        """Record a new stat of the file (the entry object stays the same, so listings share it)."""
        self.ino = st.st_ino
        self.size = st.st_size
        self.mtime_ns = st.st_mtime_ns
        self.ctime_ns = st.st_ctime_ns
        birth = getattr(st, "st_birthtime", None)
        self.birth_ns = int(birth * 1e9) if birth is not None else None
        self.link = link
        if self.entry["size"] != st.st_size:
            _set(self.entry, "size", st.st_size)


class DirNode:
    """One directory: its direct files and subdirectories, and totals of everything below."""

    __slots__ = ("name", "parent", "path", "depth", "ino", "wd", "alive", "files", "dirs", "fnames",
                 "dnames", "tot_size", "tot_files", "entry", "rendered_cache")

    def __init__(self, name: str, parent: DirNode | None, path: str) -> None:
        self.name = name
        self.parent = parent
        self.path = path
        self.depth: int = 0 if parent is None else parent.depth + 1
        self.ino: int | None = None
        self.wd: int | None = None
        self.alive = True
        self.files: dict[str, FileRec] = {}
        self.dirs: dict[str, DirNode] = {}
        self.fnames: list[str] = []
        self.dnames: list[str] = []
        self.tot_size = 0
        self.tot_files = 0
        self.entry = ReadOnlyDict(name=name + "/", size=0, files=0)
        self.rendered_cache: list[ReadOnlyDict] | None = None

    def rendered(self) -> list[ReadOnlyDict]:
        """The node's index entries (files, then subfolders, each sorted by name); cached."""
        out = self.rendered_cache
        if out is None:
            files, dirs = self.files, self.dirs
            out = self.rendered_cache = [files[n].entry for n in self.fnames] + [dirs[n].entry for n in self.dnames]
        return out

    def rel(self) -> str:
        """This directory's path relative to the folder ("" for the folder itself)."""
        parts = []
        node: DirNode | None = self
        while node is not None and node.parent is not None:
            parts.append(node.name)
            node = node.parent
        return "/".join(reversed(parts))

    def set_totals(self, size: int, count: int) -> None:
        """Set the size and file count of everything below this directory."""
        self.tot_size, self.tot_files = size, count
        _set(self.entry, "size", size)
        _set(self.entry, "files", count)


def _stat_dir(path: str, follow: bool = True) -> os.stat_result | None:
    """The directory's stat, or None if it is gone or not a directory. Only the folder itself may
    be reached through a link: below it, a directory swapped for a link is treated as gone."""
    try:
        st = os.stat(path, follow_symlinks=follow)
    except OSError:
        return None
    return st if stat.S_ISDIR(st.st_mode) else None


def _link_target_stat(path: str, base_real: str) -> os.stat_result | None:
    """The stat of a link's target when it is a regular, non-hidden file inside the folder."""
    # Links to directories are not followed, which also rules out cycles.
    real = os.path.realpath(path)
    rel = inside(real, base_real)
    if not rel or any(p.startswith(".") for p in rel.split("/")):
        return None
    try:
        st = os.stat(real)
    except OSError:
        return None
    return st if stat.S_ISREG(st.st_mode) else None


class Tree:
    """The cached listing of one folder directory (see the module docstring)."""

    def __init__(self, path: str, sub: Subscription | None = None) -> None:
        self.path = path
        self.root: DirNode | None = None
        self._sub = sub
        self._root_id: tuple[int, int] | None = None
        self._root_lost = False
        self._base_real = path
        self._by_wd: dict[int, DirNode] = {}
        self._dirty: set[DirNode] = set()       # levels to list again at the next sync
        self._unwatched: set[DirNode] = set()   # levels listed again at every sync
        self._links: set[tuple[DirNode, str]] = set()
        self._flat: list[str] | None = None
        self._flat_set: set[str] | None = None
        self._recs: list[tuple[str, FileRec]] | None = None  # unsorted; records update in place
        self.changes = 0   # bumped by every change the tree takes in (a record's stat, a name, a directory)

    # --- keeping current --------------------------------------------------------------------------
    def sync(self) -> DirNode | None:
        """Bring the cached tree up to date with the disk; the root, or None if the folder is missing."""
        for _ in range(3):  # the folder itself replaced while we look: start over, a bounded number of times
            st = _stat_dir(self.path)
            if st is None:
                self._forget()
                return None
            if self.root is None or self._root_lost or (st.st_dev, st.st_ino) != self._root_id:
                self._forget()
                return self._build(st)
            if self._sub is not None:
                events, lost = self._sub.take()
                if lost:
                    self._events_lost()
                elif events:
                    self._apply(events)
                if self._root_lost:
                    continue
            self._revalidate()
            if not self._root_lost:
                return self.root
        self._forget()
        return None

    def _build(self, st: os.stat_result) -> DirNode | None:
        self._base_real = os.path.realpath(self.path)
        root = DirNode("", None, self.path)
        self.root = root
        self._root_lost = False
        if self._sub is not None:
            self._sub.take()  # events from before this scan are about a tree we no longer have
        if not self._scan_subtree(root):
            self._forget()
            return None
        self._root_id = (st.st_dev, st.st_ino)
        self._structure_changed()
        return root

    def _events_lost(self) -> None:
        """Events were dropped: list every level again (watches a fork invalidated are re-added)."""
        held = self._sub.wds if self._sub is not None else set()
        for node in self._alive_nodes():
            if node.wd is not None and node.wd not in held:
                self._by_wd.pop(node.wd, None)
                node.wd = None
                self._unwatched.add(node)
            self._dirty.add(node)

    def _apply(self, events: list[tuple[int, int, str]]) -> None:
        """Patch the tree for a batch of events: each changed name is looked up once, as it is now."""
        todo: dict[DirNode, set[str]] = {}
        for wd, mask, name in events:
            node = self._by_wd.get(wd)
            if node is None or not node.alive:
                continue
            if mask & SELF_EVENTS:
                if mask & IN_IGNORED:  # the kernel dropped the watch: the directory is gone
                    del self._by_wd[wd]
                    node.wd = None
                    self._unwatched.add(node)
                if node.parent is None:
                    self._root_lost = True
                else:
                    self._dirty.add(node.parent)
                continue
            if not name or not is_listable_name(name):
                continue  # hidden names (.metatags.json, .ladr/) are never listed
            if mask & IN_ISDIR and not mask & ENTRY_EVENTS:
                continue  # a subdirectory's own metadata; its contents have their own watch
            todo.setdefault(node, set()).add(name)
        for node, names in todo.items():
            if node.alive and node not in self._dirty:
                for name in sorted(names):
                    if node.alive:
                        self._reconcile(node, name)

    def _revalidate(self) -> None:
        if self._dirty or self._unwatched:
            for node in sorted(self._dirty | self._unwatched, key=lambda n: n.depth):  # parents first
                if node.alive:
                    self._rescan_level(node)
            self._dirty.clear()
        if self._links:
            for node, name in list(self._links):
                rec = node.files.get(name) if node.alive else None
                if rec is None or not rec.link:
                    self._links.discard((node, name))
                else:
                    self._reconcile(node, name)

    def _reconcile(self, node: DirNode, name: str) -> None:
        """Make `name` in `node` match the disk: a file record, a subdirectory, or nothing."""
        path = os.path.join(node.path, name)
        try:
            st: os.stat_result | None = os.lstat(path)
        except OSError:
            st = None
        if st is not None and stat.S_ISDIR(st.st_mode):
            self._drop_file(node, name)
            child = node.dirs.get(name)
            if child is not None and child.ino == st.st_ino:
                return  # the same directory; its own watch (or level rescan) covers its contents
            if child is not None:
                self._drop_dir(node, name)
            self._add_dir(node, name)
            return
        if name in node.dirs:
            self._drop_dir(node, name)
        link = st is not None and stat.S_ISLNK(st.st_mode)
        if link:
            st = _link_target_stat(path, self._base_real)
        elif st is not None and not stat.S_ISREG(st.st_mode):
            st = None  # FIFOs, sockets, devices are never listed
        if st is None:
            self._drop_file(node, name)
        else:
            self._put_file(node, name, st, link)

    # --- scanning ---------------------------------------------------------------------------------
    def _watch(self, node: DirNode) -> None:
        """Put a watch on `node`'s directory, or mark it for the re-stat fallback."""
        wd = self._sub.add(node.path, follow=node.parent is None) if self._sub is not None else None
        if wd is None:
            self._unwatched.add(node)
            return
        prev = self._by_wd.get(wd)
        if prev is not None and prev is not node:
            # The same directory under a new name (a rename seen before its old name was dropped):
            # the new node takes the watch, the old one is re-listed until its parent drops it.
            prev.wd = None
            self._unwatched.add(prev)
        self._by_wd[wd] = node
        node.wd = wd
        self._unwatched.discard(node)

    def _read_level(self, node: DirNode) -> tuple[dict[str, FileRec], dict[str, int], list[str]] | None:
        """List one directory: file records (unchanged ones reused, changed ones updated in place),
        subdirectories with their inode numbers, and the names of listed links; None if unreadable."""
        files: dict[str, FileRec] = {}
        subdirs: dict[str, int] = {}
        links: list[str] = []
        old = node.files
        try:
            it = os.scandir(node.path)
        except OSError:
            return None
        with it:
            for e in it:
                name = e.name
                if not is_listable_name(name):
                    continue
                try:
                    if e.is_dir(follow_symlinks=False):
                        # st_ino, not the listing's d_ino: the two differ on some file systems (overlayfs)
                        subdirs[name] = e.stat(follow_symlinks=False).st_ino
                        continue
                    if e.is_file(follow_symlinks=False):
                        st: os.stat_result | None = e.stat(follow_symlinks=False)
                        link = False
                    elif e.is_symlink():
                        st = _link_target_stat(e.path, self._base_real)
                        link = True
                    else:
                        continue
                except OSError:
                    continue  # vanished between listing and stat
                if st is None:
                    continue
                prev = old.get(name)
                if prev is None:
                    files[name] = FileRec(name, st, link)
                    self.changes += 1
                else:
                    if not prev.same(st, link):
                        prev.update(st, link)
                        self.changes += 1
                    files[name] = prev  # keeps the entry object shared with rendered lists
                if link:
                    links.append(name)
        return files, subdirs, links

    def _scan_subtree(self, node: DirNode) -> bool:
        """Fill `node` and everything below it from disk; False if `node` itself is unreadable."""
        order: list[DirNode] = []
        stack = [node]
        while stack:
            cur = stack.pop()
            self._watch(cur)  # before listing: a change racing the listing is queued, not lost
            st = _stat_dir(cur.path, follow=cur.parent is None)
            level = self._read_level(cur) if st is not None else None
            if level is None:
                self._release(cur)
                if cur is node:
                    return False
                parent = cur.parent  # unreadable or vanished: not listed at all
                if parent is not None and parent.dirs.pop(cur.name, None) is cur:
                    parent.dnames.remove(cur.name)
                continue
            assert st is not None
            cur.ino = st.st_ino
            cur.files, subdirs, links = level
            cur.fnames = sorted(cur.files)
            cur.dirs = {}
            for name in subdirs:
                child = DirNode(name, cur, os.path.join(cur.path, name))
                cur.dirs[name] = child
                stack.append(child)
            cur.dnames = sorted(cur.dirs)
            cur.rendered_cache = None
            self._links.update((cur, n) for n in links)
            order.append(cur)
        for cur in reversed(order):  # children before parents
            if not cur.alive:
                continue
            size = sum(r.size for r in cur.files.values())
            count = len(cur.files)
            for child in cur.dirs.values():
                size += child.tot_size
                count += child.tot_files
            cur.set_totals(size, count)
        return True

    def _rescan_level(self, node: DirNode) -> None:
        """List one directory again (its files re-stated, its subdirectories reconciled)."""
        if node.wd is None:
            self._watch(node)
        st = _stat_dir(node.path, follow=node.parent is None)
        level = self._read_level(node) if st is not None else None
        if level is None:
            if node.parent is None:
                self._root_lost = True
            else:
                self._drop_dir(node.parent, node.name)
            return
        files, subdirs, links = level
        structure = files.keys() != node.files.keys()
        node.files = files
        if structure:
            node.fnames = sorted(files)
            node.rendered_cache = None
        self._links.update((node, n) for n in links)
        for name in [n for n in node.dirs if n not in subdirs]:
            self._drop_dir(node, name)
            structure = True
        for name, ino in subdirs.items():
            child = node.dirs.get(name)
            if child is not None and child.ino == ino:
                continue
            if child is not None:
                self._drop_dir(node, name)
            self._add_dir(node, name)
            structure = True
        old_size, old_count = node.tot_size, node.tot_files
        size = sum(r.size for r in files.values()) + sum(c.tot_size for c in node.dirs.values())
        count = len(files) + sum(c.tot_files for c in node.dirs.values())
        node.set_totals(size, count)
        self._bump(node.parent, size - old_size, count - old_count)
        if structure:
            self._structure_changed()

    # --- patches ----------------------------------------------------------------------------------
    def _bump(self, node: DirNode | None, dsize: int, dcount: int) -> None:
        if not dsize and not dcount:
            return
        while node is not None:
            node.set_totals(node.tot_size + dsize, node.tot_files + dcount)
            node = node.parent

    def _structure_changed(self) -> None:
        self.changes += 1
        self._flat = None
        self._flat_set = None
        self._recs = None

    def _put_file(self, node: DirNode, name: str, st: os.stat_result, link: bool = False) -> None:
        rec = node.files.get(name)
        if rec is not None:
            delta = st.st_size - rec.size
            if not rec.same(st, link):
                rec.update(st, link)
                self.changes += 1
            self._bump(node, delta, 0)
        else:
            self.changes += 1
            rec = FileRec(name, st, link)
            node.files[name] = rec
            insort(node.fnames, name)
            if node.rendered_cache is not None:
                node.rendered_cache.insert(bisect_left(node.fnames, name), rec.entry)
            self._bump(node, st.st_size, 1)
            rel = f"{node.rel()}/{name}" if node.parent is not None else name
            if self._flat is not None and self._flat_set is not None:
                insort(self._flat, rel)
                self._flat_set.add(rel)
            if self._recs is not None:
                self._recs.append((rel, rec))
        if link:
            self._links.add((node, name))

    def _drop_file(self, node: DirNode, name: str) -> None:
        rec = node.files.pop(name, None)
        if rec is None:
            return
        del node.fnames[bisect_left(node.fnames, name)]
        node.rendered_cache = None
        self._links.discard((node, name))
        self._bump(node, -rec.size, -1)
        self._structure_changed()

    def _add_dir(self, node: DirNode, name: str) -> None:
        child = DirNode(name, node, os.path.join(node.path, name))
        if not self._scan_subtree(child):
            return
        node.dirs[name] = child
        insort(node.dnames, name)
        node.rendered_cache = None
        self._bump(node, child.tot_size, child.tot_files)
        self._structure_changed()

    def _drop_dir(self, node: DirNode, name: str) -> None:
        child = node.dirs.pop(name, None)
        if child is None:
            return
        del node.dnames[bisect_left(node.dnames, name)]
        node.rendered_cache = None
        self._bump(node, -child.tot_size, -child.tot_files)
        self._release(child)
        self._structure_changed()

    def _release(self, node: DirNode) -> None:
        """Forget a subtree: its nodes are dead and their watches released."""
        stack = [node]
        while stack:
            cur = stack.pop()
            cur.alive = False
            if cur.wd is not None:
                if self._by_wd.get(cur.wd) is cur:
                    del self._by_wd[cur.wd]
                    if self._sub is not None:
                        self._sub.remove(cur.wd)
                cur.wd = None
            self._dirty.discard(cur)
            self._unwatched.discard(cur)
            stack.extend(cur.dirs.values())

    def _forget(self) -> None:
        if self.root is not None:
            self._release(self.root)
            self.changes += 1   # a folder that stays missing is no change at each read
        self.root = None
        self._root_id = None
        self._root_lost = False
        self._by_wd.clear()
        self._dirty.clear()
        self._unwatched.clear()
        self._links.clear()
        self._flat = None
        self._flat_set = None
        self._recs = None

    def _alive_nodes(self) -> list[DirNode]:
        out: list[DirNode] = []
        stack = [self.root] if self.root is not None else []
        while stack:
            cur = stack.pop()
            out.append(cur)
            stack.extend(cur.dirs.values())
        return out

    def close(self) -> None:
        """Drop the cached tree and release every watch (the tree rebuilds on the next sync)."""
        self._forget()
        if self._sub is not None:
            self._sub.close()

    def watched_dirs(self) -> int:
        """How many cached directories have a watch (for tests and diagnostics)."""
        return len(self._by_wd)

    def has_unwatched(self) -> bool:
        """True when some cached directory is kept current by re-stating instead of notifications."""
        return bool(self._unwatched)

    # --- reads (after sync) -----------------------------------------------------------------------
    def find_dir(self, dir_rel: str) -> DirNode | None:
        """The node of a directory below the folder ("" is the root), or None if there is none."""
        node = self.root
        if node is None or dir_rel == "":
            return node
        for part in dir_rel.split("/"):
            node = node.dirs.get(part)
            if node is None:
                return None
        return node

    def flat(self) -> tuple[list[str], set[str]]:
        """Every listed file below the folder as sorted relative paths, plus the same as a set."""
        root = self.root
        if root is None:
            return [], set()
        if self._flat is None or self._flat_set is None:
            out: list[str] = []
            stack: list[tuple[DirNode, str]] = [(root, "")]
            while stack:
                node, prefix = stack.pop()
                out.extend(prefix + n for n in node.files)
                stack.extend((c, prefix + n + "/") for n, c in node.dirs.items())
            out.sort()
            self._flat, self._flat_set = out, set(out)
        return self._flat, self._flat_set

    def iter_files(self, sort: bool = True) -> list[tuple[str, FileRec]]:
        """(relative path, record) for every listed file (sorted by path)."""
        root = self.root
        if root is None:
            return []
        if self._recs is None:
            recs: list[tuple[str, FileRec]] = []
            stack: list[tuple[DirNode, str]] = [(root, "")]
            while stack:
                node, prefix = stack.pop()
                recs.extend([(prefix + n, r) for n, r in node.files.items()])
                stack.extend([(c, prefix + n + "/") for n, c in node.dirs.items()])
            self._recs = recs
        out = list(self._recs)
        if sort:
            out.sort(key=lambda t: t[0])
        return out

    # --- patches for the store's own writes -------------------------------------------------------
    def note_file(self, dir_rel: str, name: str, st: os.stat_result) -> None:
        """Record a file the store just wrote into directory `dir_rel` (its event confirms it later)."""
        node = self.find_dir(dir_rel)
        if node is not None:
            self._put_file(node, name, st)

    def note_dir(self, dir_rel: str, name: str, st: os.stat_result) -> None:
        """Record an (empty) directory the store just created inside `dir_rel`; it is listed (and
        watched) at the next sync, which also catches anything another program put there first."""
        node = self.find_dir(dir_rel)
        if node is None or name in node.dirs:
            return
        child = DirNode(name, node, os.path.join(node.path, name))
        child.ino = st.st_ino
        node.dirs[name] = child
        insort(node.dnames, name)
        if node.rendered_cache is not None:
            node.rendered_cache.insert(len(node.fnames) + bisect_left(node.dnames, name), child.entry)
        self._dirty.add(child)
        self._structure_changed()
