"""Thread-count settings of `parallel` loops of x86 kernels.

A parallel loop is outlined by the LLVM backend into `task(task_id, num_tasks, closure)` and run
by the backend's native thread pool (`codegen.llvm.native_pool`, CINN's
`cinn_backend_parallel_launch`), which never enters Python; this module only decides how many
threads a launch uses.

The thread count defaults to the cores this process may run on (`os.sched_getaffinity`), can be
set with the `CINN_PY_NUM_THREADS` environment variable, `set_num_threads(n)`, or for the calling
thread with `num_threads_override(n)`; a kernel's `num_threads` build option takes precedence.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator

_num_threads: int | None = None
MAX_THREADS = 1024
"""Upper bound of a thread count: the native pool stores it in an int64 and starts one OS thread
per task, so an absurd count (`2**64`) must be refused up front, not overflow or exhaust threads."""
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
    if n > MAX_THREADS:
        raise ValueError(f"{what}: at most {MAX_THREADS} threads, got {n} (this machine has "
                         f"{available_cores()} cores)")
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
