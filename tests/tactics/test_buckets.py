"""Dynamic shapes: one schedule per shape bucket, predicates the CUDA host dispatch can take."""

from __future__ import annotations

import numpy as np
import pytest

import cinn_py as cp
from cinn_py.ir import print_ir
from codegen.cuda import BucketDispatch
from codegen.cuda.lowering import lower_for_cuda
from schedules.tactics import analyze_group, auto_schedule, auto_schedule_buckets, bucket_configs

from tests.tactics.conftest import elementwise, inputs_for, rmsnorm, softmax


def _check_all_buckets(func, shapes: dict[str, tuple[int, ...]], target: str = "cuda") -> list:
    buckets = auto_schedule_buckets(func, target=target)
    inputs = inputs_for(func, shapes)
    want = cp.run_ir(func, inputs)
    for _, sch in buckets:  # every bucket's schedule is correct for every shape; the predicate picks
        got = cp.run_ir(sch.func, inputs)
        for name, value in want.items():
            np.testing.assert_allclose(got[name], value, rtol=1e-4, atol=1e-5, err_msg=name)
    return buckets


def test_dynamic_rows_static_reduce_buckets_over_spatial_numel() -> None:
    n = cp.sym("N")
    func = rmsnorm(n, 300)
    buckets = _check_all_buckets(func, {"X": (5, 300)})
    assert [print_ir(p) for p, _ in buckets] == [
        "(N <= 1023ll)", "((N >= 1024ll) and (N <= 1048575ll))", "(N >= 1048576ll)"]
    assert ([str(c.bucket) for c in bucket_configs(analyze_group(func))][0]
            == "BucketInfo: [S(1 - 1023), R(300 - 300), ]")
    # NVRTC-compiles every bucket
    dispatch = BucketDispatch([(p, lower_for_cuda(s.func)) for p, s in buckets])
    assert [dispatch.select({"N": v}) for v in (1, 1023, 1024, 1 << 20)] == [0, 0, 1, 2]
    assert all(isinstance(code.cubin, bytes) for code in dispatch.codes)
    assert "rmsnorm_COND__FPA_N_LE_1023_BPA___kernel" in dispatch.codes[0].source


def test_static_rows_dynamic_reduce_buckets_over_reduce_numel() -> None:
    c = cp.sym("C")
    func = softmax(16, c)
    buckets = _check_all_buckets(func, {"X": (16, 40)})
    assert ([print_ir(p) for p, _ in buckets]
            == ["(C <= 256ll)", "((C >= 257ll) and (C <= 2048ll))", "(C >= 2049ll)"])
    methods = [s.auto_report.config.tile for _, s in buckets]
    assert [(t.warp_num, t.tree_reduce_num) for t in methods] == [(8, 32), (4, 128), (8, 256)]
    dispatch = BucketDispatch([(p, lower_for_cuda(s.func)) for p, s in buckets])
    assert [dispatch.select({"C": v}) for v in (7, 300, 5000)] == [0, 1, 2]
    assert "cinn_warp_reduce_max_fp32" in dispatch.codes[0].source
    assert "cinn_block_reduce_max_fp32" in dispatch.codes[2].source


def test_fully_dynamic_single_bucket_and_elementwise_buckets() -> None:
    n, m = cp.sym("S0"), cp.sym("S1")
    func = softmax(n, m)
    [(pred, sch)] = _check_all_buckets(func, {"X": (3, 50)})
    assert print_ir(pred) == "true"
    assert isinstance(cp.codegen(sch, target="cuda").cubin, bytes)
    buckets = _check_all_buckets(elementwise(n, m), {"X": (7, 9)})
    assert print_ir(buckets[0][0]) == "((S0 * S1) <= 1023ll)"


@pytest.mark.parametrize("target", ["x86"])
def test_symbolic_x86(target: str) -> None:
    n = cp.sym("N")
    func = rmsnorm(n, 100)
    [(pred, sch)] = auto_schedule_buckets(func, target=target)
    assert print_ir(pred) == "true"
    inputs = inputs_for(func, {"X": (9, 100)})
    got = cp.build(sch, target="x86")(inputs["X"], inputs["W"])
    np.testing.assert_allclose(got, cp.run_ir(func, inputs)["Y"], rtol=1e-4, atol=1e-5)


def test_static_group_is_one_bucket() -> None:
    [(pred, sch)] = auto_schedule_buckets(rmsnorm(4, 64))
    assert print_ir(pred) == "true" and sch.auto_report.strategy == "continuous"
    assert auto_schedule(rmsnorm(4, 64)).auto_report.config == sch.auto_report.config
