"""The process-wide CPU thread pool that runs `parallel` loops of x86 kernels.

A parallel loop is outlined by the LLVM backend into `task(task_id, num_tasks, closure)`; the
generated code calls back into `parallel_launch` (CINN: `cinn_backend_parallel_launch`), which
runs task 0 on the calling thread and tasks 1..n-1 on this pool. The tasks are ctypes calls, which
release the GIL, so they run truly in parallel.

The thread count defaults to the cores this process may run on (`os.sched_getaffinity`), can be
set with the `CINN_PY_NUM_THREADS` environment variable, `set_num_threads(n)`, or per call with
`num_threads_override(n)` (a kernel's `num_threads` build option uses the latter).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor

_lock = threading.Lock()
_num_threads: int | None = None
_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_local = threading.local()


def available_cores() -> int:
    """Cores this process may run on (respects CPU affinity / cgroup cpusets)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def check_thread_count(n: object, what: str) -> int:
    """`n` if it is a positive int; TypeError/ValueError naming `what` otherwise."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"{what}: expected a positive int, got {type(n).__name__} {n!r}")
    if n < 1:
        raise ValueError(f"{what}: expected a positive number of threads, got {n}")
    return n


def _default_threads() -> int:
    env = os.environ.get("CINN_PY_NUM_THREADS")
    if env:
        try:
            return check_thread_count(int(env), "CINN_PY_NUM_THREADS")
        except (TypeError, ValueError) as exc:
            raise ValueError(f"CINN_PY_NUM_THREADS must be a positive integer, got {env!r}") from exc
    return available_cores()


def get_num_threads() -> int:
    """Threads a parallel loop uses on this thread (override, else the process-wide setting)."""
    override = getattr(_local, "override", None)
    if override is not None:
        return override
    global _num_threads
    if _num_threads is None:
        _num_threads = _default_threads()
    return _num_threads


def set_num_threads(n: int) -> None:
    """Set the process-wide thread count of parallel loops (default: available cores)."""
    global _num_threads
    _num_threads = check_thread_count(n, "set_num_threads")


@contextlib.contextmanager
def num_threads_override(n: int | None) -> Iterator[None]:
    """Use `n` threads for parallel loops launched from this thread inside the block."""
    if n is None:
        yield
        return
    previous = getattr(_local, "override", None)
    _local.override = check_thread_count(n, "num_threads")
    try:
        yield
    finally:
        _local.override = previous


def _get_pool(workers: int) -> ThreadPoolExecutor:
    global _pool, _pool_size
    with _lock:
        if _pool is None or _pool_size < workers:
            old = _pool
            _pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="cinn-py-worker",
                                       initializer=_mark_worker)
            _pool_size = workers
            if old is not None:
                old.shutdown(wait=False)
        return _pool


def _mark_worker() -> None:
    _local.in_worker = True


def parallel_for(task: Callable[[int, int], None], extent: int) -> None:
    """Run `task(task_id, num_tasks)` for task ids 0..num_tasks-1, num_tasks = min(threads, extent).

    Task 0 runs on the calling thread. A launch from inside a pool worker (a kernel called from a
    parallel task) runs its tasks serially on that worker instead of waiting on the pool, which
    could otherwise deadlock.
    """
    num_tasks = max(1, min(get_num_threads(), extent))
    if num_tasks == 1 or getattr(_local, "in_worker", False):
        for task_id in range(num_tasks):
            task(task_id, num_tasks)
        return
    pool = _get_pool(num_tasks - 1)
    futures: list[Future[None]] = [pool.submit(task, k, num_tasks) for k in range(1, num_tasks)]
    error: BaseException | None = None
    try:
        task(0, num_tasks)
    except BaseException as exc:  # re-raised after the other tasks finished
        error = exc
    for future in futures:
        exc = future.exception()
        if exc is not None and error is None:
            error = exc
    if error is not None:
        raise error
