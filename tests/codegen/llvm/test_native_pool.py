"""The native parallel-for runtime (`codegen.llvm.native_pool`): task ids and counts, worker
threads, concurrent launches from several Python threads, fork, and kernels that use it."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest

from cinn_py import ir
from cinn_py.ir import dtype as dt
from cinn_py.runtime import threadpool
from codegen.llvm import build_x86
from codegen.llvm.jit import parallel_runtime
from codegen.llvm.native_pool import NativePool
from tests.codegen.llvm.llvm_helpers import func, loop, tensor

TASK = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p)
LAUNCH = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)


@pytest.fixture()
def pool() -> Iterator[NativePool]:
    """The pool on its own workers (a test process that imported torch shares torch's OpenMP
    threads otherwise: tests/torch/test_native_runtime.py)."""
    runtime = parallel_runtime()
    shared = runtime.openmp
    runtime.share_openmp(None)
    yield runtime
    runtime.share_openmp(shared)
    runtime.set_num_threads(threadpool.get_num_threads())


def _launch(pool: NativePool, extent: int) -> list[tuple[int, int, int]]:
    """Launch Python tasks (ctypes callbacks) natively; returns (task_id, num_tasks, thread id)."""
    seen: list[tuple[int, int, int]] = []
    lock = threading.Lock()

    def task(task_id: int, num_tasks: int, closure: int | None) -> None:
        with lock:
            seen.append((task_id, num_tasks, threading.get_ident()))

    callback = TASK(task)
    LAUNCH(pool.launch_address)(ctypes.cast(callback, ctypes.c_void_p), None, extent)
    return seen


@pytest.mark.parametrize(("threads", "extent", "tasks"), [(3, 100, 3), (8, 2, 2), (4, 1, 1), (1, 50, 1),
                                                           (3, 0, 0), (3, -5, 0)])
def test_task_ids_cover_min_of_threads_and_extent(pool: NativePool, threads: int, extent: int,
                                                  tasks: int) -> None:
    pool.set_num_threads(threads)
    seen = _launch(pool, extent)
    assert sorted(t for t, _, _ in seen) == list(range(tasks))
    assert {n for _, n, _ in seen} <= {tasks}


def _launch_slow(pool: NativePool, extent: int, seconds: float) -> list[tuple[int, int, int]]:
    """`_launch` with tasks that sleep (releasing the GIL), so that the workers get to claim some."""
    seen: list[tuple[int, int, int]] = []
    lock = threading.Lock()

    def task(task_id: int, num_tasks: int, closure: int | None) -> None:
        time.sleep(seconds)
        with lock:
            seen.append((task_id, num_tasks, threading.get_ident()))

    callback = TASK(task)
    LAUNCH(pool.launch_address)(ctypes.cast(callback, ctypes.c_void_p), None, extent)
    return seen


def test_tasks_run_on_worker_threads(pool: NativePool) -> None:
    """Every task id runs once per launch, claimed by whichever thread gets to it first: the
    launcher or a worker (a worker that is not scheduled leaves its task to the others)."""
    pool.set_num_threads(3)
    caller = threading.get_ident()
    threads: set[int] = set()
    for _ in range(5):  # repeated launches reuse the same workers
        seen = _launch_slow(pool, 10, 0.02)
        assert sorted(t for t, _, _ in seen) == [0, 1, 2] and {n for _, n, _ in seen} == {3}
        threads |= {ident for _, _, ident in seen}
    assert caller in threads and len(threads) > 1


def test_many_launches_run_every_task_once(pool: NativePool) -> None:
    """Back-to-back launches (workers still finishing the previous one, or asleep) never run a
    task twice, skip one, or run one with another launch's task count."""
    pool.set_num_threads(4)
    for extent in [7, 2, 4, 1, 9] * 40:
        seen = _launch(pool, extent)
        tasks = min(extent, 4)
        assert sorted(t for t, _, _ in seen) == list(range(tasks)) and {n for _, n, _ in seen} == {tasks}


def _par_func(n: int = 4096) -> ir.LoweredFunc:
    X, Y = tensor("X", (64, n)), tensor("Y", (64, n))
    i, j = ir.Var("i", dt.int32), ir.Var("j", dt.int32)
    body = loop(i, 64, loop(j, n, ir.Store(Y, ir.Load(X, (i, j)) * 2.0 + 1.0, (i, j)),
                            kind=ir.ForType.VECTORIZED, factor=16), kind=ir.ForType.PARALLEL)
    return func("par", [X], [Y], body)


_STRESS = textwrap.dedent("""
    import numpy as np
    from cinn_py import ir
    from cinn_py.ir import dtype as dt
    from codegen.llvm import build_x86
    from tests.codegen.llvm.llvm_helpers import func, loop, tensor

    def accumulate(n):
        X, Y = tensor("X", (n,)), tensor("Y", (n,))
        i = ir.Var("i", dt.int32)
        body = loop(i, n, ir.Store(Y, ir.Load(Y, (i,)) + ir.Load(X, (i,)), (i,)), kind=ir.ForType.PARALLEL)
        return func(f"acc{n}", [X], [Y], body)

    sizes, rounds = [7, 2, 13, 4, 9, 3], 20000
    kernels = [build_x86(accumulate(n), num_threads=8) for n in sizes]
    xs = [np.arange(1, n + 1, dtype=np.float32) for n in sizes]
    ys = [np.zeros(n, np.float32) for n in sizes]
    for _ in range(rounds):
        for kernel, x, y in zip(kernels, xs, ys):
            kernel(x, out=y)
    bad = [n for n, x, y in zip(sizes, xs, ys) if not np.array_equal(y, x * rounds)]
    print("bad", bad)
""")


def test_back_to_back_launches_of_different_task_counts_never_hang_or_rerun_a_task() -> None:
    """120000 tiny launches alternating task counts (7, 2, 8, 4, 8, 3 of 8 threads on few cores):
    a worker descheduled between seeing a launch and claiming from it must not pair that
    launch's generation with the next launch's task count (it ran an out-of-range task of the
    old closure, overshot `finished` and the launcher waited forever). Each task accumulates, so
    a task run twice or skipped shows in the sums; a hang fails by the timeout (subprocess)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    try:
        proc = subprocess.run([sys.executable, "-c", _STRESS], capture_output=True, text=True,
                              timeout=120, env=env,
                              cwd=root)
    except subprocess.TimeoutExpired:
        pytest.fail("back-to-back parallel launches hung (a launcher waiting for a task count it never "
                    "reaches)")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "bad []" in proc.stdout, proc.stdout


def test_concurrent_launches_from_python_threads_are_correct() -> None:
    kernel = build_x86(_par_func(), num_threads=2)
    errors: list[str] = []

    def worker(seed: int) -> None:
        x = np.random.default_rng(seed).standard_normal((64, 4096), dtype=np.float32)
        out = np.empty_like(x)
        for _ in range(30):
            kernel(x, out=out)
            if not np.array_equal(out, x * 2 + 1):
                errors.append(f"thread {seed}: wrong result")
                return

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors and not any(t.is_alive() for t in threads)


def test_num_threads_option_and_setting_give_the_same_result() -> None:
    x = np.random.default_rng(3).standard_normal((64, 4096), dtype=np.float32)
    for threads in (1, 2, 3, 7):
        np.testing.assert_array_equal(build_x86(_par_func(), num_threads=threads)(x), x * 2 + 1)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_parallel_kernel_in_a_forked_child() -> None:
    kernel = build_x86(_par_func(), num_threads=2)
    x = np.ones((64, 4096), dtype=np.float32)
    kernel(x)  # the parent's workers exist now
    pid = os.fork()
    if pid == 0:  # child: the workers were not copied; the pool must start new ones
        ok = False
        try:
            ok = bool(np.array_equal(kernel(x), x * 2 + 1))
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def test_parallel_task_captures_symbols_used_only_in_strides() -> None:
    S = ir.Var("S", dt.int64, lower_bound=ir.const(1, dt.int64), is_symbolic_constant=True)
    A, B = tensor("A", (ir.const(3, dt.int64), S)), tensor("B", (S,))
    i = ir.Var("i", dt.int64)
    body = loop(i, S,
                ir.Store(B, ir.Load(A, (ir.const(2, dt.int64), i)) - ir.Load(A, (ir.const(0, dt.int64), i)),
                              (i,)), kind=ir.ForType.PARALLEL)
    kernel = build_x86(func("strided", [A], [B], body, syms=[S]), num_threads=2)
    for n in (1, 5, 37):
        x = np.random.default_rng(n).standard_normal((3, n), dtype=np.float32)
        np.testing.assert_array_equal(kernel(x), x[2] - x[0])


def test_idle_workers_sleep_instead_of_spinning(pool: NativePool) -> None:
    """After a burst of launches the workers spin briefly, then sleep on a futex: an idle process
    burns no CPU (torch's OpenMP threads and other processes get the cores whatever
    OMP_WAIT_POLICY says)."""
    pool.set_num_threads(4)
    for _ in range(50):
        assert sorted(t for t, _, _ in _launch(pool, 8)) == [0, 1, 2, 3]
    time.sleep(0.05)  # the spin-then-yield phase: ~64 pauses + 256 yields per worker
    cpu0, wall0 = time.process_time(), time.perf_counter()
    time.sleep(0.3)
    busy = time.process_time() - cpu0
    assert busy < 0.05 * (time.perf_counter() - wall0), f"{busy:.3f} s of CPU in an idle 0.3 s"


@pytest.mark.parametrize(("share", "policy", "expected"), [
    (None, None, False), (None, "PASSIVE", True), (None, "active", False), ("1", None, True),
    ("0", "passive", False)])
def test_openmp_sharing_follows_the_wait_policy(monkeypatch: pytest.MonkeyPatch, share: str | None,
                                                policy: str | None, expected: bool) -> None:
    """Torch's OpenMP pool is shared only where its idle threads sleep (codegen/llvm/openmp.py),
    unless CINN_PY_SHARE_OPENMP says otherwise."""
    from codegen.llvm import openmp

    for name, value in ((openmp.ENV, share), ("OMP_WAIT_POLICY", policy)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    assert openmp.sharing_enabled() is expected
