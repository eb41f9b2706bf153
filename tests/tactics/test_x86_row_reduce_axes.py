"""Row reductions over several trailing axes and over unit axes (CINN's test_reduce_op.py cases
[1, 64, 56, 56] summed over [0, 2, 3]): the reduce axis of extent 1 is not a loop, the trailing
reduce loops are fused into the one loop the rfactor splits into vector partial sums. Before, the
schedule fell back to one serial float32 chain per channel (rfactor refused the rf axis), and the
sum missed CINN's tolerance (1e-4 relative + 1e-6 absolute)."""

from __future__ import annotations

import numpy as np
import pytest

import cinn_py as cp
from cinn_py.frontend.fusion import plan
from cinn_py.lowering.group import lower_group
from schedules.tactics import auto_schedule


def _program(shape: list[int], dims: list[int], keep: bool = False) -> cp.Program:
    nb = cp.NetBuilder("rows")
    x = nb.create_input("float32", shape, "x")
    nb.reduce_sum(x, dims, keep)
    return nb.build()


def test_a_unit_reduce_axis_is_not_a_loop() -> None:
    func = lower_group(plan(_program([1, 8, 4, 4], [0, 2, 3])).groups[0])
    text = str(func)
    assert "x[0, " in text and text.count("serial for") == 3, text   # row loop + two reduce loops


@pytest.mark.parametrize(("shape", "dims"), [([1, 64, 56, 56], [0, 2, 3]), ([64, 7, 56], [1, 2])])
def test_trailing_reduce_axes_get_the_rfactor_row_schedule(shape: list[int], dims: list[int]) -> None:
    func = lower_group(plan(_program(shape, dims)).groups[0])
    report = auto_schedule(func, "x86").report
    assert report.fallbacks == [], report.fallbacks
    assert "1 rfactor-vectorised reductions" in next(iter(report.nests.values()))


def test_the_sum_meets_cinns_tolerance() -> None:
    rng = np.random.default_rng(17)
    x = rng.uniform(-0.1, 0.1, (1, 64, 56, 56)).astype(np.float32)
    got = cp.compile(_program([1, 64, 56, 56], [0, 2, 3]), "x86")(x)
    want = x.astype(np.float64).sum(axis=(0, 2, 3))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    # partial sums: well below the error of one serial float32 chain per channel (the old schedule)
    serial = np.cumsum(x.reshape(64, -1), axis=1, dtype=np.float32)[:, -1]
    assert np.abs(got - want).max() < np.abs(serial - want).max() / 2


@pytest.mark.parametrize("keep", [False, True])
def test_unit_axes_only_reduce_to_the_element(keep: bool) -> None:
    x = np.arange(6, dtype=np.float32).reshape(1, 6, 1)
    got = cp.compile(_program([1, 6, 1], [0, 2], keep), "x86")(x)
    np.testing.assert_array_equal(got, x.reshape(1, 6, 1) if keep else x.reshape(6))


@pytest.mark.parametrize(("shape", "dims"), [((32, 64, 56, 56), [0, 2, 3]), ((32, 56, 56, 64), [0, 1, 2])])
def test_long_float32_sums_accumulate_in_float64(shape: tuple[int, ...], dims: list[int]) -> None:
    # CINN's TestReduceSumCase15/16 (100352 terms per output; a conv bias gradient): float32 partial
    # sums kept errors of 5e-5..1e-4 (CINN's tolerance there is 1e-4 relative + 1e-6); in float64
    # the only error left is the float32 output's rounding
    rng = np.random.default_rng(5)
    x = rng.uniform(-0.1, 0.1, shape).astype(np.float32)
    got = cp.compile(_program(list(shape), dims), "x86")(x)
    want = x.astype(np.float64).sum(axis=tuple(dims))
    np.testing.assert_allclose(got, want, rtol=2 ** -23, atol=0)


def test_the_long_sum_rule_names_float64_only_past_the_threshold() -> None:
    from cinn_py.frontend.ops.reduce import LONG_FLOAT32_SUM, _sum_accumulator
    from cinn_py.ir import float16, float32, float64

    assert _sum_accumulator("reduce_sum", float32, LONG_FLOAT32_SUM + 1) == float64
    assert _sum_accumulator("reduce_mean", float32, LONG_FLOAT32_SUM + 1) == float64
    assert _sum_accumulator("reduce_sum", float32, LONG_FLOAT32_SUM) == float32
    assert _sum_accumulator("reduce_prod", float32, LONG_FLOAT32_SUM * 4) == float32
    assert _sum_accumulator("reduce_sum", float16, 8) == float32
