"""Cells on this process's threads (`experiment(..., backend="local")`, and every `evaluate`): the local backend,
beside `ray_backend.py`; the runner's loop chooses between them (`runner._Batch.run`)."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .cells import CellResult, CellTask, execute

__all__ = ["run_locally", "run_pool"]


def run_pool(fn: Callable[..., Any], jobs: Iterable[tuple], *, concurrency: int, on_result: Callable[[Any], None],
             name: str) -> None:
    """Run `fn(*job)` for every job on `concurrency` threads, calling `on_result(result)` in this thread as each
    finishes. On Ctrl-C (or any exception) no new job starts, the pool is left without waiting, and it re-raises:
    a job in flight records itself or not, as `fn` does."""
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix=name)
    pending = {pool.submit(fn, *job) for job in jobs}
    interrupted = False
    try:
        while pending:
            ready, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in ready:
                on_result(fut.result())
    except BaseException:
        interrupted = True
        for fut in pending:
            fut.cancel()
        raise
    finally:
        pool.shutdown(wait=not interrupted, cancel_futures=True)


def run_locally(tasks: Iterable[CellTask], ladders: Mapping[str | None, Any], *, concurrency: int, limiter: Any,
                save: Callable[[CellResult], None], on_result: Callable[[CellResult], None], name: str) -> None:
    """Run every task on `concurrency` threads: each cell is saved (`save`, on its own thread, so a cell in flight
    when Ctrl-C stops the pool still records itself when it finishes) and then handed to `on_result` here."""
    def one(task: CellTask) -> CellResult:
        cell = execute(task, ladders[task.variant], limiter=limiter)
        save(cell)
        return cell

    run_pool(one, [(t,) for t in tasks], concurrency=concurrency, on_result=on_result, name=name)
