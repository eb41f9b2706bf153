"""Launch tests: results compared with numpy, on a GPU when there is one, else in the CPU emulator
(the `cuda` marker, tests/conftest.py). Device arrays (GPUArray, torch CUDA tensors) exist only on
a GPU: those parts run there and the host-array parts everywhere."""

from __future__ import annotations

import numpy as np
import pytest

import cinn_py as cp
from codegen.cuda import BucketDispatch, build_cuda
from schedules import IRSchedule
from tests.conftest import has_gpu

pytestmark = pytest.mark.cuda


def _split_bind(s: IRSchedule, block: str, factor: int = 256) -> None:
    loops = s.get_loops(block)
    fused = s.fuse(loops) if len(loops) > 1 else loops[0]
    outer, inner = s.split(fused, [-1, factor])
    s.bind(outer, "blockIdx.x")
    s.bind(inner, "threadIdx.x")


def test_elementwise_numpy_in_numpy_out() -> None:
    A = cp.placeholder((1000,), "float32", "A")
    B = cp.compute((1000,), lambda i: cp.exp(A[i]) * 2.0, "B")
    s = IRSchedule(cp.lower("fn", [A, B]))
    _split_bind(s, "B")
    kernel = build_cuda(s.func, arch="auto")
    a = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    np.testing.assert_allclose(kernel(a), np.exp(a) * 2, rtol=1e-5)


@pytest.mark.parametrize("r, fn, ref", [(256, cp.reduce_sum, np.sum), (32, cp.reduce_max, np.max),
                                        (128, cp.reduce_min, np.min), (16, cp.reduce_prod, np.prod)])
def test_row_reductions(r: int, fn, ref) -> None:
    A = cp.placeholder((64, r), "float32", "A")
    k = cp.reduce_axis(r, "k")
    B = cp.compute((64,), lambda i: fn(A[i, k], k), "B")
    s = IRSchedule(cp.lower("fn", [A, B]))
    loops = s.get_loops("B")
    s.bind(loops[0], "blockIdx.x")
    s.bind(loops[1], "threadIdx.x")
    kernel = build_cuda(s.func, arch="auto")
    a = np.random.default_rng(1).uniform(0.5, 1.5, (64, r)).astype(np.float32)
    np.testing.assert_allclose(kernel(a), ref(a, axis=1), rtol=1e-4)


def test_block_reduce_with_serial_outer_loop() -> None:
    A = cp.placeholder((8, 4096), "float32", "A")
    k = cp.reduce_axis(4096, "k")
    B = cp.compute((8,), lambda i: cp.reduce_sum(A[i, k], k), "B")
    s = IRSchedule(cp.lower("fn", [A, B]))
    loops = s.get_loops("B")
    s.bind(loops[0], "blockIdx.x")
    _, inner = s.split(loops[1], [-1, 512])
    s.bind(inner, "threadIdx.x")
    a = np.random.default_rng(2).standard_normal((8, 4096)).astype(np.float32)
    np.testing.assert_allclose(build_cuda(s.func, arch="auto")(a), a.sum(axis=1), rtol=1e-4, atol=1e-3)


def test_symbolic_shapes_several_sizes_and_gpuarray(request: pytest.FixtureRequest) -> None:
    S0 = cp.sym("S0")
    X = cp.placeholder((S0, 64), "float32", "X")
    Y = cp.compute((S0, 64), lambda i, j: X[i, j] * 3.0 + 1.0, "Y")
    s = IRSchedule(cp.lower("sym", [X, Y]))
    _split_bind(s, "Y")
    kernel = build_cuda(s.func, arch="auto")
    for rows in (1, 3, 17, 1000):
        x = np.random.default_rng(rows).standard_normal((rows, 64)).astype(np.float32)
        # atol: NVRTC contracts x * 3 + 1 into one fma (one rounding, numpy rounds twice); near
        # x = -1/3 the two differ by ~6e-8 absolute, a large relative error (seen on an H100).
        np.testing.assert_allclose(kernel(x), x * 3 + 1, rtol=1e-6, atol=1e-6)
        if not has_gpu(request.config):
            continue
        import pycuda.gpuarray as gpuarray  # noqa: PLC0415

        y = kernel(gpuarray.to_gpu(x))
        assert isinstance(y, gpuarray.GPUArray)
        np.testing.assert_allclose(y.get(), x * 3 + 1, rtol=1e-6, atol=1e-6)


def test_float16_inputs() -> None:
    X = cp.placeholder((4096,), "float16", "X")
    Y = cp.compute((4096,), lambda i: cp.tanh(X[i]) + X[i], "Y")
    s = IRSchedule(cp.lower("half", [X, Y]))
    _split_bind(s, "Y")
    x = np.random.default_rng(3).standard_normal(4096).astype(np.float16)
    ref = (np.tanh(x.astype(np.float32)) + x.astype(np.float32)).astype(np.float16)
    np.testing.assert_allclose(build_cuda(s.func, arch="auto")(x).astype(np.float32), ref.astype(np.float32),
                               rtol=2e-3, atol=2e-3)


def test_vectorized_and_torch_tensors(request: pytest.FixtureRequest) -> None:
    A = cp.placeholder((1 << 16,), "float32", "A")
    B = cp.compute((1 << 16,), lambda i: A[i] * 2.0, "B")
    s = IRSchedule(cp.lower("v", [A, B]))
    b, t, v = s.split(s.get_loops("B")[0], [-1, 256, 4])
    s.bind(b, "blockIdx.x")
    s.bind(t, "threadIdx.x")
    s.vectorize(v, 4)
    kernel = build_cuda(s.func, arch="auto")
    a = np.random.default_rng(4).standard_normal(1 << 16).astype(np.float32)
    assert "float4" in kernel.source
    np.testing.assert_array_equal(kernel(a), a * 2)
    # A numpy view 4 bytes into its buffer: host inputs are copied to fresh device memory (the
    # emulator copies them to a fresh aligned buffer the same way), so the float4 loads are aligned.
    offset = np.random.default_rng(5).standard_normal((1 << 16) + 1).astype(np.float32)[1:]
    assert offset.ctypes.data % 16
    np.testing.assert_array_equal(kernel(offset), offset * 2)
    if not has_gpu(request.config):
        with pytest.raises(ValueError, match="16-byte"):  # the launch itself checks, as for a device array
            kernel.launch([offset], [np.empty_like(a)], {})
        return
    torch = pytest.importorskip("torch")
    a = torch.randn(1 << 16, device="cuda")
    out = kernel(a)
    torch.cuda.synchronize()
    assert out.device == a.device
    torch.testing.assert_close(out, a * 2)
    with pytest.raises(ValueError, match="16-byte"):
        kernel(torch.randn((1 << 16) + 1, device="cuda")[1:])


def test_bucket_dispatch_launch() -> None:
    funcs = []
    for factor in (64, 256):
        S0 = cp.sym("S0")
        A = cp.placeholder((S0,), "float32", "A")
        B = cp.compute((S0,), lambda i: A[i] + 1.0, "B")
        s = IRSchedule(cp.lower("fn", [A, B]))
        _split_bind(s, "B", factor)
        funcs.append((S0, s.func))
    S0 = funcs[0][0]
    dispatch = build_cuda(funcs[0][1], buckets=[(S0 <= 1024, funcs[0][1]), (S0 > 1024, funcs[1][1])])
    assert isinstance(dispatch, BucketDispatch)
    for n in (10, 5000):
        a = np.arange(n, dtype=np.float32)
        np.testing.assert_allclose(dispatch(a), a + 1)
