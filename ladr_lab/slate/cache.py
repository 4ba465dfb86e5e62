"""The in-memory listing of one folder: a tree of directory nodes kept in step with the disk.

Built once by an `os.scandir` walk. Every later read revalidates only the directories it touches
by comparing their `st_mtime_ns` with the value recorded at scan time; a directory whose mtime
moved has its own level rescanned (subdirectories are revalidated when they are reached). Writes
made through the store patch the tree in place and adopt the directory's new mtime, so they never
cause a rescan. Edits that do not change any directory's mtime (another program rewriting a file
in place) are seen after `refresh()`.

The tree is not thread-safe by itself: the owning Folder holds its lock around every call.
"""
from __future__ import annotations

import os
import stat
from bisect import bisect_left, insort
from typing import Any

from ladr_lab.slate.paths import inside, is_listable_name


class ReadOnlyDict(dict):
    """A dict that refuses mutation: index entries are shared with the cache, so editing one in place
    would silently corrupt later listings. Copy with dict(entry) to get a mutable one."""

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("slate index entries are read-only; copy with dict(entry) first")

    __setitem__ = __delitem__ = _refuse  # type: ignore[assignment]
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

    __slots__ = ("ino", "size", "mtime_ns", "ctime_ns", "birth_ns", "entry")

    def __init__(self, name: str, st: os.stat_result) -> None:
        self.ino = st.st_ino
        self.size = st.st_size
        self.mtime_ns = st.st_mtime_ns
        self.ctime_ns = st.st_ctime_ns
        birth = getattr(st, "st_birthtime", None)
        self.birth_ns = int(birth * 1e9) if birth is not None else None
        self.entry = ReadOnlyDict(name=name, size=st.st_size)


class DirNode:
    """One directory: its direct files and subdirectories, and totals of everything below."""

    __slots__ = ("name", "parent", "path", "mtime_ns", "files", "dirs", "fnames", "dnames",
                 "tot_size", "tot_files", "entry", "rendered_cache")

    def __init__(self, name: str, parent: DirNode | None, path: str) -> None:
        self.name = name
        self.parent = parent
        self.path = path
        self.mtime_ns = -1
        self.files: dict[str, FileRec] = {}
        self.dirs: dict[str, DirNode] = {}
        self.fnames: list[str] = []
        self.dnames: list[str] = []
        self.tot_size = 0
        self.tot_files = 0
        self.entry = ReadOnlyDict(name=name + "/", size=0, files=0)
        self.rendered_cache: list[dict] | None = None

    def rendered(self) -> list[dict]:
        """The node's index entries (files, then subfolders, each sorted by name); cached."""
        if self.rendered_cache is None:
            files, dirs = self.files, self.dirs
            self.rendered_cache = [files[n].entry for n in self.fnames] + [dirs[n].entry for n in self.dnames]
        return self.rendered_cache

    def rel(self) -> str:
        """This directory's path relative to the folder ("" for the folder itself)."""
        parts = []
        node: DirNode | None = self
        while node is not None and node.parent is not None:
            parts.append(node.name)
            node = node.parent
        return "/".join(reversed(parts))

    def set_totals(self, size: int, count: int) -> None:
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


class Tree:
    """The cached listing of one folder directory (see the module docstring)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.root: DirNode | None = None
        self.generation = 0
        self._flat: list[str] | None = None
        self._flat_set: set[str] | None = None
        self._recs: list[tuple[str, FileRec]] | None = None  # unsorted; records update in place

    # --- scanning -------------------------------------------------------------------------------
    def _read_level(self, node: DirNode, base_real: str) -> tuple[dict[str, FileRec], list[str]] | None:
        """Scan one directory's direct entries; None if it cannot be listed."""
        files: dict[str, FileRec] = {}
        subdirs: list[str] = []
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
                        subdirs.append(name)
                    elif e.is_file(follow_symlinks=False):
                        st = e.stat(follow_symlinks=False)
                        prev = old.get(name)
                        if prev is not None and prev.ino == st.st_ino and prev.size == st.st_size \
                                and prev.mtime_ns == st.st_mtime_ns:
                            files[name] = prev  # keeps the entry object shared with rendered lists
                        else:
                            files[name] = FileRec(name, st)
                    elif e.is_symlink():
                        rec = self._link_rec(e.path, name, base_real)
                        if rec is not None:
                            files[name] = rec
                except OSError:
                    continue  # vanished between listing and stat
        return files, subdirs

    @staticmethod
    def _link_rec(path: str, name: str, base_real: str) -> FileRec | None:
        # Links are listed only when they lead to a regular, non-hidden file inside the folder;
        # links to directories are not followed, which also rules out cycles.
        real = os.path.realpath(path)
        rel = inside(real, base_real)
        if not rel or any(p.startswith(".") for p in rel.split("/")):
            return None
        try:
            st = os.stat(real)
        except OSError:
            return None
        return FileRec(name, st) if stat.S_ISREG(st.st_mode) else None

    def _scan_subtree(self, node: DirNode, base_real: str) -> bool:
        """Fill `node` and everything below it from disk; False if `node` itself is unreadable."""
        order: list[DirNode] = []
        stack = [node]
        while stack:
            cur = stack.pop()
            st = _stat_dir(cur.path, follow=cur.parent is None)
            level = self._read_level(cur, base_real) if st is not None else None
            if level is None:
                if cur is node:
                    return False
                parent = cur.parent  # unreadable or vanished: not listed at all
                if parent is not None and parent.dirs.pop(cur.name, None) is cur:
                    parent.dnames.remove(cur.name)
                continue
            cur.mtime_ns = st.st_mtime_ns  # taken before the listing, so a racing change rescans
            cur.files, subdirs = level
            cur.fnames = sorted(cur.files)
            cur.dirs = {}
            for name in subdirs:
                child = DirNode(name, cur, os.path.join(cur.path, name))
                cur.dirs[name] = child
                stack.append(child)
            cur.dnames = sorted(cur.dirs)
            cur.rendered_cache = None
            order.append(cur)
        for cur in reversed(order):  # children before parents
            size = sum(r.size for r in cur.files.values())
            count = len(cur.files)
            for child in cur.dirs.values():
                size += child.tot_size
                count += child.tot_files
            cur.set_totals(size, count)
        return True

    def _bump(self, node: DirNode | None, dsize: int, dcount: int) -> None:
        while node is not None:
            node.set_totals(node.tot_size + dsize, node.tot_files + dcount)
            node = node.parent

    def _changed(self) -> None:
        self.generation += 1

    def _structure_changed(self) -> None:
        self.generation += 1
        self._flat = None
        self._flat_set = None
        self._recs = None

    # --- validation -----------------------------------------------------------------------------
    def get_root(self) -> DirNode | None:
        """The root node, built on first use and revalidated; None if the folder does not exist."""
        if self.root is None:
            if _stat_dir(self.path) is None:
                return None
            node = DirNode("", None, self.path)
            if not self._scan_subtree(node, os.path.realpath(self.path)):
                return None
            self.root = node
            self._structure_changed()
            return node
        return self.fresh(self.root)

    def fresh(self, node: DirNode) -> DirNode | None:
        """Revalidate one node against its directory's mtime; rescan its level if it moved."""
        st = _stat_dir(node.path, follow=node.parent is None)
        if st is None:
            self._drop(node)
            return None
        if st.st_mtime_ns == node.mtime_ns:
            return node
        base_real = os.path.realpath(self.path)
        level = self._read_level(node, base_real)
        if level is None:
            self._drop(node)
            return None
        old_size, old_count = node.tot_size, node.tot_files
        node.mtime_ns = st.st_mtime_ns
        node.files, subdirs = level
        node.fnames = sorted(node.files)
        keep = {}
        for name in subdirs:
            child = node.dirs.get(name)
            if child is None:
                child = DirNode(name, node, os.path.join(node.path, name))
                if not self._scan_subtree(child, base_real):
                    continue
            keep[name] = child
        node.dirs = keep
        node.dnames = sorted(keep)
        node.rendered_cache = None
        size = sum(r.size for r in node.files.values()) + sum(c.tot_size for c in keep.values())
        count = len(node.files) + sum(c.tot_files for c in keep.values())
        node.set_totals(size, count)
        self._bump(node.parent, size - old_size, count - old_count)
        self._structure_changed()
        return node

    def _drop(self, node: DirNode) -> None:
        parent = node.parent
        if parent is None:
            self.root = None
        elif parent.dirs.get(node.name) is node:
            del parent.dirs[node.name]
            pos = bisect_left(parent.dnames, node.name)
            del parent.dnames[pos]
            parent.rendered_cache = None
            self._bump(parent, -node.tot_size, -node.tot_files)
        self._structure_changed()

    def fresh_all(self) -> DirNode | None:
        """Revalidate every cached directory (one stat each); return the root or None."""
        root = self.get_root()
        if root is None:
            return None
        stack = list(root.dirs.values())
        while stack:
            node = self.fresh(stack.pop())
            if node is not None:
                stack.extend(node.dirs.values())
        return self.root

    def find_dir(self, dir_rel: str, validate: bool = True) -> DirNode | None:
        """The node of a directory below the folder ("" is the root), or None if there is none."""
        node = self.get_root() if validate else self.root
        if node is None or dir_rel == "":
            return node
        for part in dir_rel.split("/"):
            node = node.dirs.get(part)
            if node is None:
                return None
            if validate:
                node = self.fresh(node)
                if node is None:
                    return None
        return node

    def flat(self) -> tuple[list[str], set[str]]:
        """Every listed file below the folder as sorted relative paths, plus the same as a set."""
        root = self.fresh_all()
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
        """(relative path, record) for every listed file (sorted by path), after revalidation."""
        root = self.fresh_all()
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

    # --- patches for the store's own writes ---------------------------------------------------
    def note_file(self, dir_rel: str, name: str, st: os.stat_result, pre_ns: int | None, post_ns: int | None) -> None:
        """Record a file the store just wrote into directory `dir_rel`.

        `pre_ns`/`post_ns` are the directory's mtime just before and after the store's own change;
        the node adopts `post_ns` only if it was current at `pre_ns`, so an unseen outside change
        still forces a rescan later.
        """
        node = self.find_dir(dir_rel, validate=False)
        if node is None:
            return
        rec = node.files.get(name)
        if rec is not None:
            delta = st.st_size - rec.size
            rec.ino, rec.size, rec.mtime_ns, rec.ctime_ns = st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns
            _set(rec.entry, "size", st.st_size)
            self._bump(node, delta, 0)
            self._changed()
        else:
            rec = FileRec(name, st)
            node.files[name] = rec
            insort(node.fnames, name)
            if node.rendered_cache is not None:
                node.rendered_cache.insert(bisect_left(node.fnames, name), rec.entry)
            self._bump(node, st.st_size, 1)
            if self._flat is not None and self._flat_set is not None:
                rel = f"{dir_rel}/{name}" if dir_rel else name
                insort(self._flat, rel)
                self._flat_set.add(rel)
            if self._recs is not None:
                self._recs.append((f"{dir_rel}/{name}" if dir_rel else name, rec))
            self._changed()
        self.adopt_mtime(node, pre_ns, post_ns)

    def note_dir(self, dir_rel: str, name: str, st: os.stat_result, pre_ns: int | None, post_ns: int | None) -> None:
        """Record an (empty) directory the store just created inside `dir_rel`."""
        node = self.find_dir(dir_rel, validate=False)
        if node is None:
            return
        if name not in node.dirs:
            child = DirNode(name, node, os.path.join(node.path, name))
            child.mtime_ns = st.st_mtime_ns
            node.dirs[name] = child
            insort(node.dnames, name)
            if node.rendered_cache is not None:
                pos = len(node.fnames) + bisect_left(node.dnames, name)
                node.rendered_cache.insert(pos, child.entry)
            self._changed()
        self.adopt_mtime(node, pre_ns, post_ns)

    @staticmethod
    def adopt_mtime(node: DirNode | None, pre_ns: int | None, post_ns: int | None) -> None:
        """Move a node to the directory's post-change mtime if it was current before the change."""
        if node is not None and pre_ns is not None and post_ns is not None and node.mtime_ns == pre_ns:
            node.mtime_ns = post_ns
