"""Compiled x86 kernels reject wrong arguments cleanly, and NaN/Inf flow through.

Every rejection is a TypeError (wrong kind of object, dtype, argument count) or ValueError
(rank, shape, symbolic-dim inconsistency, strides, aliasing, read-only output) naming the
argument; generated code never runs on a bad buffer.

NaN semantics (pinned here, identical in the interpreter and the x86 backend):
`maximum(a, b)` is C's `a > b ? a : b` and `minimum(a, b)` is `a < b ? a : b`, so a NaN in the
*first* operand yields the second operand and a NaN in the second operand propagates;
`select(c, t, f)` takes `f` when a comparison involves NaN (comparisons with NaN are false).
Reductions fold left to right with those operators, so `reduce_max` / `reduce_min` keep NaN
only if it is the last element: a NaN is replaced by the next element (which also discards an
infinity seen before the NaN). Differs from numpy (`np.max` propagates NaN) and from CUDA's
`fmaxf` (which ignores NaN). `reduce_sum` / arithmetic propagate NaN; `exp(inf) = inf`.
"""

from __future__ import annotations

import numpy as np
import pytest

import cinn_py as cp
from cinn_py.interp import run_ir
from cinn_py.ir import LoweredFunc


@pytest.fixture(scope="module")
def static_kernel():  # type: ignore[no-untyped-def]
    a = cp.placeholder((4, 8), "float32", "A")
    k = cp.reduce_axis(8)
    c = cp.compute((4,), lambda i: cp.reduce_sum(a[i, k], [k]), "C")
    return cp.build(cp.lower("rowsum", [a, c]), "x86")


@pytest.fixture(scope="module")
def symbolic_kernel():  # type: ignore[no-untyped-def]
    s = cp.sym("S", lower=2)
    a = cp.placeholder((s, 8), "float32", "A")
    b = cp.placeholder((s,), "float32", "B")
    c = cp.compute((s, 8), lambda i, j: a[i, j] + b[i], "C")
    return cp.build(cp.lower("bias", [a, b, c]), "x86")


def _x(shape: tuple[int, ...] = (4, 8), dtype: str = "float32") -> np.ndarray:
    return np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)


def test_valid_call(static_kernel) -> None:  # type: ignore[no-untyped-def]
    np.testing.assert_array_equal(static_kernel(_x()), _x().sum(axis=1))


@pytest.mark.parametrize(("arg", "error", "match"), [
    (_x(dtype="float64"), TypeError, r"input 0 \('A'\): expected dtype float32, got float64"),
    (_x(dtype="float16"), TypeError, "expected dtype float32"),
    (_x(dtype="int32"), TypeError, "expected dtype float32"),
    (_x((32,)), ValueError, "expected rank 2"),
    (_x((1, 4, 8)), ValueError, "expected rank 2"),
    (_x((4, 9)), ValueError, "dim 1 must be 8"),
    (_x((8, 4)), ValueError, "dim 0 must be 4"),
    (_x((4, 16))[:, ::2], ValueError, "C-contiguous"),
    (np.asfortranarray(_x()), ValueError, "C-contiguous"),
    (_x((8, 4)).T, ValueError, "C-contiguous"),
    (_x().tolist(), TypeError, "expected a numpy array"),
    (3.0, TypeError, "expected a numpy array"),
    (None, TypeError, "expected a numpy array"),
    ("A", TypeError, "expected a numpy array"),
])
def test_wrong_inputs_are_rejected(static_kernel, arg, error, match) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(error, match=match):
        static_kernel(arg)


def test_wrong_argument_count(static_kernel) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(TypeError, match="expected 1 input"):
        static_kernel()
    with pytest.raises(TypeError, match="expected 1 input"):
        static_kernel(_x(), _x())


def test_torch_tensors_if_installed(static_kernel) -> None:  # type: ignore[no-untyped-def]
    torch = pytest.importorskip("torch")
    np.testing.assert_array_equal(static_kernel(torch.arange(32, dtype=torch.float32).reshape(4, 8)),
                                  _x().sum(axis=1))
    with pytest.raises(TypeError, match="dtype"):
        static_kernel(torch.zeros((4, 8), dtype=torch.float64))


def test_symbolic_dims_bind_and_must_agree(symbolic_kernel) -> None:  # type: ignore[no-untyped-def]
    a, b = _x((3, 8)), np.arange(3, dtype=np.float32)
    np.testing.assert_array_equal(symbolic_kernel(a, b), a + b[:, None])
    with pytest.raises(ValueError, match="symbolic dim 'S' is 5 here but 3"):
        symbolic_kernel(a, np.zeros(5, np.float32))
    with pytest.raises(ValueError, match="below its lower bound 2"):
        symbolic_kernel(_x((1, 8)), np.zeros(1, np.float32))
    with pytest.raises(ValueError, match="dim 1 must be 8"):
        symbolic_kernel(_x((3, 7)), b)


def test_out_arrays(static_kernel) -> None:  # type: ignore[no-untyped-def]
    x = _x()
    out = np.empty(4, np.float32)
    assert static_kernel(x, out=out) is out
    np.testing.assert_array_equal(out, x.sum(axis=1))
    assert static_kernel(x, out=[out]) is out
    bad = [
        (np.empty(5, np.float32), ValueError, r"output 0 \('C'\): dim 0 must be 4"),
        (np.empty(4, np.float64), TypeError, "expected dtype float32"),
        (np.empty((4, 1), np.float32), ValueError, "expected rank 1"),
        (np.empty(8, np.float32)[::2], ValueError, "C-contiguous"),
        ([out, out], TypeError, "out= expects 1 array"),
        ([], TypeError, "out= expects 1 array"),
        ("out", TypeError, "expected a numpy array"),
    ]
    for value, error, match in bad:
        with pytest.raises(error, match=match):
            static_kernel(x, out=value)
    frozen = np.empty(4, np.float32)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        static_kernel(x, out=frozen)


def test_outputs_must_not_alias_inputs() -> None:
    a = cp.placeholder((8,), "float32", "A")
    b = cp.compute((8,), lambda i: a[i] * 2.0, "B")
    kernel = cp.build(cp.lower("double", [a, b]), "x86")
    x = np.arange(8, dtype=np.float32)
    with pytest.raises(ValueError, match="shares memory with input 0"):
        kernel(x, out=x)
    big = np.arange(16, dtype=np.float32)
    with pytest.raises(ValueError, match="shares memory"):
        kernel(big[:8], out=big[4:12])            # partial overlap
    np.testing.assert_array_equal(kernel(big[:8], out=big[8:]), np.arange(8, dtype=np.float32) * 2)


def test_two_outputs_must_not_alias_each_other() -> None:
    a = cp.placeholder((4,), "float32", "A")
    b = cp.compute((4,), lambda i: a[i] + 1.0, "B")
    c = cp.compute((4,), lambda i: a[i] - 1.0, "C")
    kernel = cp.build(cp.lower("two", [a, b, c]), "x86")
    out = np.empty(4, np.float32)
    with pytest.raises(ValueError, match="output 1 .* shares memory with output 0"):
        kernel(np.zeros(4, np.float32), out=[out, out])


# ---------------------------------------------------------------------------------------------
# NaN / Inf
# ---------------------------------------------------------------------------------------------
NAN, INF = np.nan, np.inf
X = np.array([NAN, 1, NAN, -INF, INF, 0, NAN, 2], np.float32)
Y = np.array([1, NAN, NAN, 1, NAN, -0.0, INF, -INF], np.float32)


def _binary(name: str, fn) -> LoweredFunc:  # type: ignore[no-untyped-def]
    a = cp.placeholder((8,), "float32", "A")
    b = cp.placeholder((8,), "float32", "B")
    return cp.lower(name, [a, b, cp.compute((8,), lambda i: fn(a[i], b[i]), "C")])


@pytest.mark.parametrize(("name", "fn", "expected"), [
    ("maximum", cp.maximum, np.where(X > Y, X, Y)),
    ("minimum", cp.minimum, np.where(X < Y, X, Y)),
    ("select", lambda a, b: cp.select(a > b, a, b), np.where(X > Y, X, Y)),
    ("add", lambda a, b: a + b, X + Y),
    ("exp", lambda a, b: cp.exp(a), np.exp(X)),
])
def test_nan_inf_elementwise(name: str, fn, expected: np.ndarray) -> None:  # type: ignore[no-untyped-def]
    func = _binary(name, fn)
    got = cp.build(func, "x86")(X, Y)
    # NaN positions must match exactly; exp may differ from numpy by an ulp
    np.testing.assert_allclose(got, expected.astype(np.float32), rtol=2e-7, atol=0)
    np.testing.assert_allclose(got, run_ir(func, {"A": X, "B": Y})["C"], rtol=2e-7, atol=0)


def _c_fold(op, init: float, row: np.ndarray) -> float:  # type: ignore[no-untyped-def]
    acc = np.float32(init)
    for v in row:
        acc = op(acc, v)
    return float(acc)


@pytest.mark.parametrize("kind", ["max", "min", "sum"])
def test_nan_inf_reductions_fold_left_with_c_operators(kind: str) -> None:
    rows = np.stack([X, np.where(np.isnan(X), 1, X), np.array([INF, NAN, 2, 1, 1, 1, 1, 1]),
                     np.array([1, 1, 1, 1, 1, 1, 1, NAN])]).astype(np.float32)
    a = cp.placeholder((4, 8), "float32", "A")
    k = cp.reduce_axis(8)
    func = cp.lower(f"r{kind}",
                    [a, cp.compute((4,), lambda i: getattr(cp, f"reduce_{kind}")(a[i, k], [k]), "R")])
    got = cp.build(func, "x86")(rows)
    op, init = {"max": (lambda p, q: p if p > q else q, -INF), "min": (lambda p, q: p if p < q else q, INF),
                "sum": (lambda p, q: p + q, 0.0)}[kind]
    with np.errstate(invalid="ignore"):
        expected = np.array([_c_fold(op, init, r) for r in rows], np.float32)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(got, run_ir(func, {"A": rows})["R"])
    if kind == "max":
        assert got[2] == 2.0 and np.isnan(got[3])   # [inf, nan, 2, ...] -> 2; trailing NaN survives
