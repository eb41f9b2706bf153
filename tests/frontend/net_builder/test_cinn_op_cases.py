"""CINN's own op test cases (PaddlePaddle test/cinn/ops/test_*_op.py, transcribed in
cinn_py/tools/cinn_cases) through `cinn_py.build_and_get_output` on x86 against numpy.

The default tier runs a sharp subset: per CINN test file the first case of its first class (one
program per op family, ~20 s); the `slow` tier runs every case. The rules CINN fixed here
(integer pow and scale, bitwise ops on bool) have their own regression tests below."""

from __future__ import annotations

import numpy as np
import pytest

import cinn_py as cp
from cinn_py.frontend.ops.base import FrontendError
from cinn_py.tools.cinn_cases import harness
from cinn_py.tools.cinn_cases.suite import Suite

SUITES = harness.all_suites()
_ALL = [(s, index) for s in SUITES for index in range(len(s.cases()))]
# per CINN test file: the first case of its first class (its smallest shape, usually)
_SHARP = {(ss[0].file, ss[0].name, 0) for ss in
          ({f: [s for s in SUITES if s.file == f] for f in {s.file for s in SUITES}}).values()}


def _small(s: Suite, index: int) -> bool:
    return harness._largest_input(s.cases()[index]) <= 1 << 16


def _id(item: tuple[Suite, int]) -> str:
    return f"{item[0].file[5:-3]}-{item[0].name}{item[1]}"


DEFAULT = [item for item in _ALL if (item[0].file, item[0].name, item[1]) in _SHARP and _small(*item)]
REST = [item for item in _ALL if item not in DEFAULT]


def _check(s: Suite, index: int) -> None:
    outcome = harness.run_case(s, index)
    assert outcome.status in ("pass", "too large"), f"{outcome.label} {outcome.case}: {outcome.detail}"


@pytest.mark.parametrize("item", DEFAULT, ids=_id)
def test_cinn_case(item: tuple[Suite, int]) -> None:
    _check(*item)


@pytest.mark.slow
@pytest.mark.parametrize("item", REST, ids=_id)
def test_cinn_case_full(item: tuple[Suite, int]) -> None:
    _check(*item)


def test_cases_expand_as_cinns_helper() -> None:
    # CINN's TestCaseHelper: the product of the non-empty lists, dicts merged over the constants
    s = Suite(
        "f.py",
        "T",
        "unary",
        ({"shape": [1]}, {"shape": [2]}),
        ({"dtype": "float32"}, {"dtype": "int32"}),
        (),
        {"op": "abs"},
    )
    assert s.cases() == [
        {"op": "abs", "shape": [1], "dtype": "float32"},
        {"op": "abs", "shape": [1], "dtype": "int32"},
        {"op": "abs", "shape": [2], "dtype": "float32"},
        {"op": "abs", "shape": [2], "dtype": "int32"},
    ]
    assert len(_ALL) > 600 and len({s.file for s in SUITES}) >= 20


def test_a_wrong_result_fails_the_case(monkeypatch: pytest.MonkeyPatch) -> None:
    real = cp.build_and_get_output

    def off(*args: object, **kwargs: object) -> list[np.ndarray]:
        return [np.asarray(a) + np.asarray(1, np.asarray(a).dtype) for a in real(*args, **kwargs)]  # type: ignore[arg-type]

    monkeypatch.setattr(cp, "build_and_get_output", off)
    s = next(s for s in SUITES if s.file == "test_abs_op.py")
    outcome = harness.run_case(s, 0)
    assert outcome.status == "fail" and "elements differ" in outcome.detail


def _run(nb: cp.NetBuilder, feeds: list[object], datas: list[np.ndarray], fetch: list[object]) -> np.ndarray:
    return cp.build_and_get_output(nb.build(), cp.DefaultHostTarget(), feeds, datas, fetch)[0]


def test_integer_pow_follows_cinn() -> None:
    # CINN's cinn_host_pow_int32: (int)pow((double)x, (double)y); 0 ** negative is -1
    nb = cp.NetBuilder("pow_int")
    x, y = nb.create_input("int32", [8], "x"), nb.create_input("int32", [8], "y")
    out = nb.pow(x, y)
    xs = np.array([2, -2, 3, 0, 0, 1, -1, -3], np.int32)
    ys = np.array([3, 3, -1, -2, 0, -3, -3, 2], np.int32)
    np.testing.assert_array_equal(_run(nb, [x, y], [xs, ys], [out]), [8, -8, 0, -1, 1, 1, -1, 9])


def test_integer_scale_truncates_scale_and_bias_as_cinn() -> None:
    # CINN casts scale and bias to x's dtype: -0.1 is 0 and 2.7 is 2 for an int32 x
    nb = cp.NetBuilder("scale_int")
    x = nb.create_input("int32", [3], "x")
    a, b = nb.scale(x, -0.1, 10.0, False), nb.scale(x, 2.7, -1.5, True)
    xs = np.array([5, -7, 1], np.int32)
    got = cp.build_and_get_output(nb.build(), "x86", [x], [xs], [a, b])
    np.testing.assert_array_equal(got[0], [0, 0, 0])
    np.testing.assert_array_equal(got[1], xs * 2 - 1)


def test_bitwise_ops_on_bool_are_the_logical_ones() -> None:
    # CINN's test_bitwise_op.py runs bitwise_and/or/xor/not on bool; they were refused
    # ("needs an integer operand")
    nb = cp.NetBuilder("bitwise_bool")
    x, y = nb.create_input("bool", [4], "x"), nb.create_input("bool", [4], "y")
    outs = [nb.bitwise_and(x, y), nb.bitwise_or(x, y), nb.bitwise_xor(x, y), nb.bitwise_not(x)]
    xs, ys = np.array([0, 0, 1, 1], bool), np.array([0, 1, 0, 1], bool)
    got = cp.build_and_get_output(nb.build(), "x86", [x, y], [xs, ys], outs)
    for a, b in zip(got, (xs & ys, xs | ys, xs ^ ys, ~xs)):
        assert a.dtype == np.bool_
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(("xs", "ys"), [((8, 16, 4), (1, 4, 16)), ((128,), (2, 3, 128, 8)),
                                        ((3, 5), (2, 5, 4))])
def test_matmul_broadcasts_batch_dims_as_numpy(xs: tuple[int, ...], ys: tuple[int, ...]) -> None:
    # CINN's test_matmul_op.py: size-1 and missing batch dims broadcast (were refused: "batch dims
    # differ", "y must have rank 2 or the rank of x")
    rng = np.random.default_rng(3)
    x, y = rng.uniform(-1, 1, xs).astype(np.float32), rng.uniform(-1, 1, ys).astype(np.float32)
    nb = cp.NetBuilder("matmul_broadcast")
    xv, yv = nb.create_input("float32", list(xs), "x"), nb.create_input("float32", list(ys), "y")
    out = nb.matmul(xv, yv)
    got = cp.build_and_get_output(nb.build(), "x86", [xv, yv], [x, y], [out])[0]
    np.testing.assert_allclose(got, np.matmul(x.astype(np.float64), y), rtol=1e-5, atol=1e-5)


def test_matmul_batch_dims_that_cannot_broadcast_are_refused() -> None:
    nb = cp.NetBuilder("matmul_bad")
    xv, yv = nb.create_input("float32", [3, 2, 4], "x"), nb.create_input("float32", [5, 4, 2], "y")
    with pytest.raises(FrontendError, match=r"matmul: batch dims of \[3, 2, 4\] and \[5, 4, 2\] differ "
                                            r"at batch axis 0 \(aligned from the right\): 3 vs 5; they must "
                                            r"be equal or 1"):
        nb.matmul(xv, yv)


def test_multiply_on_bool_is_the_logical_and() -> None:
    # CINN's test_multiply_op.py multiplies bool tensors (refused: "needs a numeric operand")
    nb = cp.NetBuilder("multiply_bool")
    x, y = nb.create_input("bool", [4], "x"), nb.create_input("bool", [4], "y")
    out = nb.multiply(x, y)
    xs, ys = np.array([0, 0, 1, 1], bool), np.array([0, 1, 0, 1], bool)
    got = cp.build_and_get_output(nb.build(), "x86", [x, y], [xs, ys], [out])[0]
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, xs & ys)
