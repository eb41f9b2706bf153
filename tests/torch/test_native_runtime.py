"""The torch backend runs each compiled partition as one native call (cinn_py/runtime/native.py):
tensors by data pointer, outputs from `torch.empty`, parallel loops on torch's thread count."""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Iterator
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from cinn_py.runtime.program import CompiledProgram  # noqa: E402
from codegen.llvm.jit import parallel_runtime  # noqa: E402


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fresh Dynamo caches, torch's thread count restored, and the kernel-by-kernel path made to
    fail: a call that reaches it did not run natively."""
    torch._dynamo.reset()
    threads = torch.get_num_threads()

    def per_kernel(self: CompiledProgram, arrays: Any) -> Any:
        raise AssertionError(f"{self.program.name} ran kernel by kernel: {self.native_reason}")

    monkeypatch.setattr(CompiledProgram, "run_bound", per_kernel)
    yield
    torch.set_num_threads(threads)
    torch._dynamo.reset()


def _layer(x: Any, w: Any, b: Any) -> Any:
    h = torch.nn.functional.gelu(x @ w + b)
    return torch.nn.functional.layer_norm(h + x, (x.shape[-1],)) * h.sum(-1, keepdim=True).sigmoid()


def test_forward_and_backward_run_natively_with_torch_threads() -> None:
    compiled = torch.compile(_layer, backend="cinn_py", options={"strict": True})
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(4, 16, 32, generator=gen)
    w = torch.randn(32, 32, generator=gen).requires_grad_()
    b = torch.randn(32, generator=gen).requires_grad_()
    want = _layer(x, w, b)
    want.square().sum().backward()
    expected = (want.detach(), w.grad.clone(), b.grad.clone())
    for threads in (1, 2, 3):
        torch.set_num_threads(threads)
        w.grad = b.grad = None
        got = compiled(x, w, b)
        assert (parallel_runtime().num_threads_cell.value
                == threads), "the pool follows torch.get_num_threads()"
        got.square().sum().backward()
        for g, e in zip((got.detach(), w.grad, b.grad), expected):
            torch.testing.assert_close(g, e, rtol=1e-4, atol=1e-4)


def test_symbolic_sizes_run_natively() -> None:
    compiled = torch.compile(lambda x, y: torch.softmax(x * 2 + y, dim=-1).sum(0), backend="cinn_py",
                             dynamic=True,
                             options={"strict": True})
    for rows in (3, 8, 5, 3):
        x, y = torch.randn(rows, 7), torch.randn(rows, 7)
        torch.testing.assert_close(compiled(x, y), torch.softmax(x * 2 + y, dim=-1).sum(0),
                                   rtol=1e-5, atol=1e-5)


def test_parallel_loops_share_torchs_openmp_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """With torch loaded and sharing on, a parallel loop is an OpenMP region on torch's threads
    (one pool for both, codegen/llvm/openmp.py): every task id runs once, on more than one thread."""
    from codegen.llvm.openmp import ENV, adopt_loaded_openmp  # noqa: PLC0415

    pool = parallel_runtime()
    monkeypatch.setenv(ENV, "1")
    assert adopt_loaded_openmp(pool) and pool.openmp is not None
    try:
        _launch_python_tasks(pool)
    finally:
        pool.share_openmp(None)


def _launch_python_tasks(pool: Any) -> None:
    seen: list[tuple[int, int, int]] = []
    lock = threading.Lock()

    def task(task_id: int, num_tasks: int, closure: int | None) -> None:
        with lock:
            seen.append((task_id, num_tasks, threading.get_ident()))
        threading.Event().wait(0.01)  # long enough for the team's other threads to take theirs

    callback = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p)(task)
    launch = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)(pool.launch_address)
    pool.set_num_threads(3)
    launch(ctypes.cast(callback, ctypes.c_void_p), None, 10)
    assert sorted(t for t, _, _ in seen) == [0, 1, 2] and {n for _, n, _ in seen} == {3}
    assert len({ident for _, _, ident in seen}) > 1
