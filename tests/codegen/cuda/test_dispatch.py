"""Bucket dispatch: CINN predicate mangling, bucket kernel names, selection, signature checks."""

from __future__ import annotations

import pytest

import cinn_py as cp
from cinn_py.diagnostics import CompileError
from cinn_py.ir import Var, const, dtype
from codegen.cuda import BucketDispatch, bucket_kernel_name, mangle_predicate
from codegen.cuda.lowering import lower_for_cuda
from tests.codegen.cuda.gpu_programs import bound_scale


def test_mangling() -> None:
    S0 = Var("S0", dtype.int64)
    pred = (S0 >= 1) & (S0 <= 1024)
    assert mangle_predicate(pred) == "_FPA__FPA_S0_GE_1_BPA__AND__FPA_S0_LE_1024_BPA__BPA_"
    assert bucket_kernel_name("fn", S0 > 1024) == "fn_COND__FPA_S0_GT_1024_BPA___kernel"
    assert mangle_predicate(const(True)) == "true"


def test_buckets_compile_and_select(nvrtc_compile) -> None:
    S0, small = bound_scale(64)
    _, large = bound_scale(256)
    dispatch = BucketDispatch([(S0 <= 1024, lower_for_cuda(small)), (S0 > 1024, lower_for_cuda(large))])
    names = [c.kernel_name for c in dispatch.codes]
    assert names == ["fn_COND__FPA_S0_LE_1024_BPA___kernel", "fn_COND__FPA_S0_GT_1024_BPA___kernel"]
    for code in dispatch.codes:
        assert "void __launch_bounds__" in code.source and code.kernel_name + "(" in code.source
        nvrtc_compile(code.source)
    assert dispatch.select({"S0": 5}) == 0 and dispatch.select({"S0": 5000}) == 1
    assert dispatch.codes[1].launch.launch_dims({"S0": 5000})[0] == (20, 1, 1)


def test_no_matching_bucket_is_a_clear_error() -> None:
    S0, func = bound_scale(64)
    dispatch = BucketDispatch([(S0 <= 16, lower_for_cuda(func))])
    with pytest.raises(ValueError, match="no bucket predicate holds for S0=17"):
        dispatch.select({"S0": 17})


def test_bucket_errors() -> None:
    S0, func = bound_scale(64)
    with pytest.raises(ValueError, match="at least one"):
        BucketDispatch([])
    with pytest.raises(TypeError, match="expected bool"):
        BucketDispatch([(S0 + 1, func)])
    with pytest.raises(CompileError, match="not symbolic dims"):
        BucketDispatch([(Var("S9", dtype.int64) > 1, func)])
    A = cp.placeholder((8,), "float32", "A")
    B = cp.compute((8,), lambda i: A[i], "B")
    with pytest.raises(CompileError, match="different signature"):
        BucketDispatch([(S0 > 1, func), (S0 <= 1, cp.lower("other", [A, B]))])
    with pytest.raises(CompileError, match=r"'fn' has not been through the CUDA target passes "
                                           r"\(cross_thread_reduce, gpu_bind, simplify_indices\); run them"):
        BucketDispatch([(S0 > 1, func)])  # a dispatch only prints: the pipeline's target_passes lower


def test_build_cuda_with_buckets_dispatches_per_call_on_the_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """End to end through build_cuda and the PyCUDA fake: the bucket is chosen from the input
    shape, and its own grid/block dims and the int64 symbol argument are computed on the host."""
    import numpy as np  # noqa: PLC0415

    from codegen.cuda import build_cuda  # noqa: PLC0415
    from codegen.cuda import kernel as kernel_mod  # noqa: PLC0415
    from tests.codegen.cuda.test_kernel_host import fake_pycuda  # noqa: PLC0415

    log: list = []
    fake = fake_pycuda(log)
    monkeypatch.setattr(kernel_mod, "_pycuda", lambda: fake)
    S0, small = bound_scale(64)
    _, large = bound_scale(256)
    dispatch = build_cuda(small, arch="sm_90", buckets=[(S0 <= 1024, small), (S0 > 1024, large)])
    assert isinstance(dispatch, BucketDispatch) and all(code.is_compiled for code in dispatch.codes)
    for n, grid, block in ((5, 1, 64), (1024, 16, 64), (1025, 5, 256), (5000, 20, 256)):
        out = dispatch(np.ones(n, np.float32))
        assert out.shape == (n,)
        (_, got_grid, got_block, args, shared), = [e for e in log if e[0] == "launch"]
        log.clear()
        assert (got_grid, got_block, shared) == ((grid, 1, 1), (block, 1, 1), 0)
        assert [type(a) for a in args] == [np.uintp, np.uintp, np.int64] and int(args[2]) == n
    assert set(dispatch._kernels) == {0, 1}  # one loaded Kernel per bucket, reused across calls
    with pytest.raises(TypeError, match="expected 1 input"):
        dispatch()


def test_build_cuda_buckets_must_match_the_function() -> None:
    from codegen.cuda import build_cuda  # noqa: PLC0415

    S0, func = bound_scale(64)
    A = cp.placeholder((S0, 2), "float32", "A")
    B = cp.compute((S0, 2), lambda i, j: A[i, j], "B")
    other = cp.lower("fn", [A, B])
    with pytest.raises(CompileError, match="take different arguments"):
        build_cuda(other, arch="sm_90", buckets=[(S0 > 0, func)])
