"""Traffic-counting builds: the kernel adds the bytes of every global load and store, the emulator
reads them after the launch (codegen.cuda.traffic), and `cinn-py bench --target cuda --static`."""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest

import cinn_py as cp
from codegen.cuda import build_cuda, generate_cuda
from codegen.cuda.traffic import minimum_bytes
from schedules import IRSchedule

pytestmark = pytest.mark.cuda_emulated


def _elementwise(n: int, vector: int = 1, mirrored: bool = False) -> cp.LoweredFunc:
    A = cp.placeholder((n,), "float32", "A")
    body = (lambda i: A[i] + A[n - 1 - i]) if mirrored else (lambda i: A[i] * 2.0)
    B = cp.compute((n,), body, "B")
    s = IRSchedule(cp.lower("ew", [A, B]))
    if vector > 1:
        b, t, v = s.split(s.get_loops("B")[0], [-1, 64, vector])
        s.vectorize(v, vector)
    else:
        b, t = s.split(s.get_loops("B")[0], [-1, 64])
    s.bind(b, "blockIdx.x")
    s.bind(t, "threadIdx.x")
    return s.func


@pytest.mark.parametrize("vector", [1, 4])
def test_a_streaming_kernel_moves_the_minimum(vector: int) -> None:
    kernel = build_cuda(_elementwise(1024, vector), emulate=True, count_traffic=True)
    a = np.random.default_rng(0).standard_normal(1024).astype(np.float32)
    out = kernel(a)
    np.testing.assert_array_equal(out, a * 2)
    assert (kernel.last_traffic.loaded_bytes, kernel.last_traffic.stored_bytes) == (4096, 4096)
    assert kernel.last_traffic.total_bytes == minimum_bytes([a], [out])
    if vector == 4:  # one count per float4 access, of all four lanes
        assert "float4" in kernel.source and "cinn_traffic_add(0, 16ull);" in kernel.source


def test_every_read_counts() -> None:
    kernel = build_cuda(_elementwise(256, mirrored=True), emulate=True, count_traffic=True)
    a = np.arange(256, dtype=np.float32)
    np.testing.assert_array_equal(kernel(a), a + a[::-1])
    assert (kernel.last_traffic.loaded_bytes, kernel.last_traffic.stored_bytes) == (2048, 1024)


def test_shared_memory_is_not_global_traffic() -> None:
    """A block reduce stages partial sums in shared memory: only the input and the sums count."""
    A = cp.placeholder((16, 256), "float32", "A")
    k = cp.reduce_axis(256, "k")
    B = cp.compute((16,), lambda i: cp.reduce_sum(A[i, k], k), "B")
    s = IRSchedule(cp.lower("rsum", [A, B]))
    i, kk = s.get_loops("B")
    s.bind(i, "blockIdx.x")
    s.bind(kk, "threadIdx.x")
    kernel = build_cuda(s.func, emulate=True, count_traffic=True)
    a = np.random.default_rng(1).standard_normal((16, 256)).astype(np.float32)
    np.testing.assert_allclose(kernel(a), a.sum(axis=1), rtol=1e-5, atol=1e-5)
    assert "__shared__" in kernel.source
    assert kernel.last_traffic.loaded_bytes == 16 * 256 * 4
    # Every thread of a block stores the row's init and result (one address: a warp's stores to it
    # merge on a GPU, but each thread's request counts here).
    assert kernel.last_traffic.stored_bytes == 2 * 256 * 16 * 4


def test_counting_builds_compile_with_nvrtc_and_need_the_emulator() -> None:
    code = generate_cuda(_elementwise(256), count_traffic=True)
    assert code.cubin and code.counts_traffic and "cinn_traffic_add(1, 4ull);" in code.source
    assert "cinn_traffic_add" not in generate_cuda(_elementwise(256)).source
    with pytest.raises(ValueError, match="count_traffic=True on 'ew' needs the CPU emulator"):
        build_cuda(_elementwise(256), emulate=False, count_traffic=True)


def test_static_bench_report() -> None:
    from cinn_py import cli

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = cli.main(["bench", "--target", "cuda", "--static", "relu", "softmax"])
    assert status == 0
    rows = {line.split()[0]: line.split() for line in out.getvalue().splitlines()[2:]}
    assert rows["relu"][-1] == "1.00" and rows["relu"][-2] == rows["relu"][-3]  # moved == minimum
    assert rows["softmax"][-1] == "2.00"  # the row read three times: max, sum, output
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert cli.main(["bench", "--static", "relu"]) == 1
    assert "--static is the CUDA report; add --target cuda" in err.getvalue()


def test_timed_cuda_bench_without_a_gpu_says_what_to_do() -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    from cinn_py import cli

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert cli.main(["bench", "--target", "cuda", "relu"]) == 1
    assert "PyTorch sees no CUDA device here; --target cuda --static" in err.getvalue()
