"""File-system notifications for the listing cache: one Linux inotify instance per process.

Why inotify, read this way: when another program writes a file, the kernel queues the inotify
event inside that program's write system call, before the call returns. So a reader that drains
the queue *without blocking* at the start of each read sees every change that finished before the
read began: the guarantee is deterministic, with no sleeping, debouncing or background thread, and
when nothing changed the drain is one `ioctl(FIONREAD)`. (watchfiles and watchdog read the queue on
a background thread and hand changes over asynchronously, so a read cannot know it has seen every
finished change without waiting: see docs/DECISIONS.md for the measurements.) The binding is
`inotify_simple`, a thin ctypes wrapper.

One instance serves every folder of the process, because instances are a scarce per-user resource
(`fs.inotify.max_user_instances`, often 128) while watches are plentiful (one per directory). The
hub dispatches each event to the subscriptions holding its watch descriptor; two folders on the
same directory share the kernel's watch, which is removed when the last one lets go. A
subscription's queue is bounded: past `QUEUE_CAP` events it is dropped and flagged as overflowed,
as is every subscription when the kernel's own queue overflows (`IN_Q_OVERFLOW`); the owner then
re-stats everything it caches.

Notifications are off (and the cache falls back to re-stating) where inotify is missing (not
Linux, or `inotify_simple` not installed), when the instance cannot be created, when
`LADR_SLATE_WATCH=0` is set, or for a store made with `SlateStore(watch=False)`, which is the
right choice for folders on network file systems (inotify sees only this machine's changes).
"""
from __future__ import annotations

import os
import threading
from collections import deque
from typing import Any

__all__ = ["CONTENT_EVENTS", "ENTRY_EVENTS", "ENV", "IN_ATTRIB", "IN_CLOSE_WRITE", "IN_CREATE", "IN_DELETE",
           "IN_DELETE_SELF", "IN_DONT_FOLLOW", "IN_EXCL_UNLINK", "IN_IGNORED", "IN_ISDIR", "IN_MODIFY", "IN_MOVED_FROM",
           "IN_MOVED_TO", "IN_MOVE_SELF", "IN_ONLYDIR", "IN_Q_OVERFLOW", "IN_UNMOUNT", "QUEUE_CAP", "SELF_EVENTS",
           "Subscription", "WATCH_MASK", "WatchHub", "get_hub"]

QUEUE_CAP = 8192
ENV = "LADR_SLATE_WATCH"

# inotify(7) constants (stable kernel ABI), so the mask is readable without importing the binding.
IN_MODIFY = 0x00000002
IN_ATTRIB = 0x00000004
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_UNMOUNT = 0x00002000
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000
IN_EXCL_UNLINK = 0x04000000
IN_ISDIR = 0x40000000

# Contents and metadata of entries (MODIFY covers write and truncate, ATTRIB covers utime/chmod,
# CLOSE_WRITE catches writers that changed a file through mmap), the directory's own entries
# (create, delete, rename in and out), and the directory itself going away.
CONTENT_EVENTS = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE
ENTRY_EVENTS = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO
SELF_EVENTS = IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT | IN_IGNORED
WATCH_MASK = CONTENT_EVENTS | ENTRY_EVENTS | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_EXCL_UNLINK


def _disabled_by_env() -> bool:
    return os.environ.get(ENV, "").strip().lower() in ("0", "off", "no", "false")


class Subscription:
    """One listing cache's share of the hub: the watch descriptors it holds and the events for them."""

    def __init__(self, hub: WatchHub) -> None:
        self._hub = hub
        self.generation = hub.generation
        self.wds: set[int] = set()
        self._events: list[tuple[int, int, str]] = []
        self._overflow = False

    def add(self, path: str, follow: bool = False) -> int | None:
        """Watch the directory `path` (a link is followed only when `follow`); its wd, or None."""
        return self._hub.add(self, path, follow)

    def remove(self, wd: int) -> None:
        """Stop receiving events for `wd` (the kernel watch goes when no subscription holds it)."""
        self._hub.remove(self, wd)

    def take(self) -> tuple[list[tuple[int, int, str]], bool]:
        """Drain the hub, then return this subscription's events `(wd, mask, name)` and whether any
        were lost (queue overflow, or a fork that invalidated every watch descriptor)."""
        return self._hub.take(self)

    def close(self) -> None:
        """Release every watch and drop queued events; the subscription may be used again."""
        self._hub.close(self)

    def close_later(self) -> None:
        """Have the hub release this subscription at its next use. Safe from a garbage-collection
        finalizer, which may run while this very thread holds the hub's lock."""
        self._hub.doomed.append(self)

    # called by the hub under its lock
    def _push(self, event: tuple[int, int, str]) -> None:
        if self._overflow:
            return
        if len(self._events) >= QUEUE_CAP:
            self._events.clear()
            self._overflow = True
            return
        self._events.append(event)


class WatchHub:
    """The process's inotify instance, shared by every subscription (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ino: Any = None
        self._failed = False
        self._subs: dict[int, set[Subscription]] = {}
        self.generation = 0
        self.doomed: deque[Subscription] = deque()  # closed by finalizers; released under the lock

    @property
    def available(self) -> bool:
        """True when notifications can be used in this process."""
        with self._lock:
            return self._instance() is not None

    def _reap(self) -> None:
        while self.doomed:
            sub = self.doomed.popleft()
            for wd in list(sub.wds):
                self._remove(sub, wd)
            sub._events.clear()

    def _instance(self) -> Any:
        self._reap()
        if self._ino is None and not self._failed:
            if _disabled_by_env():
                return None
            try:
                import inotify_simple

                self._ino = inotify_simple.INotify(nonblocking=True)
            except (ImportError, OSError, AttributeError):
                self._failed = True  # not Linux, no binding, or out of instances: re-stat instead
        return self._ino

    def add(self, sub: Subscription, path: str, follow: bool) -> int | None:
        """Add (or share) the kernel watch on directory `path` for `sub`; None when it cannot be had."""
        with self._lock:
            ino = self._instance()
            if ino is None or sub.generation != self.generation:
                return None
            mask = WATCH_MASK if follow else WATCH_MASK | IN_DONT_FOLLOW
            try:
                wd = ino.add_watch(path, mask)
            except (OSError, ValueError):
                return None  # gone, not a directory, no permission, or out of watches (ENOSPC)
            self._subs.setdefault(wd, set()).add(sub)
            sub.wds.add(wd)
            return wd

    def remove(self, sub: Subscription, wd: int) -> None:
        """Drop `sub`'s interest in `wd`; remove the kernel watch when nobody is left."""
        with self._lock:
            self._reap()
            self._remove(sub, wd)

    def _remove(self, sub: Subscription, wd: int) -> None:
        sub.wds.discard(wd)
        subs = self._subs.get(wd)
        if subs is None:
            return
        subs.discard(sub)
        if not subs:
            del self._subs[wd]
            if self._ino is not None and sub.generation == self.generation:
                try:
                    self._ino.rm_watch(wd)
                except OSError:
                    pass  # the kernel dropped it already (directory deleted); IN_IGNORED is queued

    def close(self, sub: Subscription) -> None:
        """Release all of `sub`'s watches."""
        with self._lock:
            self._reap()
            for wd in list(sub.wds):
                self._remove(sub, wd)
            sub._events.clear()
            sub._overflow = False

    def take(self, sub: Subscription) -> tuple[list[tuple[int, int, str]], bool]:
        """Read whatever the kernel has queued (non-blocking), dispatch it, and hand `sub` its share."""
        with self._lock:
            if sub.generation != self.generation:  # watches from before a fork are meaningless here
                sub.generation = self.generation
                sub.wds.clear()
                sub._events.clear()
                sub._overflow = False
                return [], True
            self._reap()
            self._drain()
            events, overflow = sub._events, sub._overflow
            sub._events, sub._overflow = [], False
            return events, overflow

    def _drain(self) -> None:
        if self._ino is None:
            return
        try:
            events = self._ino.read(timeout=0)
        except (OSError, ValueError):
            events = []
        for ev in events:
            if ev.mask & IN_Q_OVERFLOW:
                for subs in self._subs.values():
                    for s in subs:
                        s._overflow = True
                continue
            holders = self._subs.get(ev.wd)
            if not holders:
                continue  # a watch released since the event was queued
            item = (ev.wd, ev.mask, ev.name)
            for s in holders:
                s._push(item)
            if ev.mask & IN_IGNORED:  # the kernel removed the watch (directory deleted, unmounted)
                del self._subs[ev.wd]
                for s in holders:
                    s.wds.discard(ev.wd)

    def watch_count(self) -> int:
        """How many kernel watches the hub holds (for tests and diagnostics)."""
        with self._lock:
            self._reap()
            return len(self._subs)

    def _after_fork_in_child(self) -> None:
        # The child shares the parent's instance; reading or removing watches through it would
        # steal the parent's events, so the child drops it and starts its own on demand.
        self._lock = threading.Lock()
        ino, self._ino = self._ino, None
        if ino is not None:
            try:
                ino.close()  # closes only the child's descriptor
            except OSError:
                pass
        self._subs = {}
        self.doomed = deque()
        self._failed = False
        self.generation += 1


_HUB = WatchHub()

if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_HUB._after_fork_in_child)


def get_hub() -> WatchHub:
    """The process's notification hub."""
    return _HUB
