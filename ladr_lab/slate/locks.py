"""Per-file write serialization across threads and processes, and the atomic-write primitives.

A write to a file takes, in order, an in-process lock and an `fcntl.flock` on a lock file under
the folder's hidden `.ladr/locks/`. Files share 64 lock stripes by a stable hash of their path, so
the lock directory stays small however many files a folder holds; two files on one stripe merely
wait for each other. flock is per open file description, so it also excludes threads of this
process, but the thread lock keeps them from spinning on the kernel lock. Without fcntl (Windows)
only the thread lock applies.
"""
from __future__ import annotations

import os
import tempfile
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

__all__ = ["NEW_FILE_MODE", "STRIPES", "file_lock", "fsync_dir", "stripe_name", "write_temp"]

STRIPES = 64

_guard = threading.Lock()
_thread_locks: dict[str, threading.Lock] = {}


def _reset_after_fork() -> None:
    # A lock held by another thread at fork time would stay held forever in the child.
    global _guard, _thread_locks
    _guard = threading.Lock()
    _thread_locks = {}


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)


def stripe_name(rel: str) -> str:
    """The lock-file name that serializes writes to the folder-relative path `rel`."""
    return f"f{zlib.crc32(rel.encode('utf-8', 'surrogatepass')) % STRIPES:02d}.lock"


def _thread_lock(path: str) -> threading.Lock:
    with _guard:
        lock = _thread_locks.get(path)
        if lock is None:
            lock = _thread_locks[path] = threading.Lock()
        return lock


_held = threading.local()


@contextmanager
def file_lock(lock_path: str) -> Iterator[None]:
    """Hold the lock at `lock_path` exclusively (threads of this process and other processes).

    Re-entrant per thread: an update function that writes another file sharing the stripe (or the
    same file) proceeds instead of deadlocking on a lock its own thread holds.
    """
    held: set[str] = _held.__dict__.setdefault("paths", set())
    if lock_path in held:
        yield
        return
    with _thread_lock(lock_path):
        held.add(lock_path)
        try:
            if fcntl is None:  # pragma: no cover
                yield
                return
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield
            finally:
                os.close(fd)  # closing the descriptor releases the flock
        finally:
            held.discard(lock_path)


def _default_mode() -> int:
    # mkstemp creates 0600 files; new slate files should get the mode an ordinary open() would.
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


NEW_FILE_MODE = _default_mode()


def write_temp(tmp_dir: str, data: bytes, mode: int = NEW_FILE_MODE) -> str:
    """Write `data` to a new temporary file in `tmp_dir`, fsync it, and return its path."""
    fd, tmp = tempfile.mkstemp(dir=tmp_dir, prefix="w-", suffix=".tmp")
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        os.fchmod(fd, mode)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    os.close(fd)
    return tmp


def fsync_dir(path: str) -> None:
    """fsync a directory so a rename into it survives a crash (best effort where unsupported)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
