"""A function mixing static and symbolic tensors widens index arithmetic to int64 but never the
dtype of a value: `cast(j, "int32")` (which is `j` itself for an int32 axis) stays int32 inside an
int32 `select` (it used to leak an int64 into the select and fail lowering with a TypeError)."""

from __future__ import annotations

import numpy as np

import cinn_py as cp
from cinn_py.interp import run_ir


def _program() -> cp.ComputeTensor:
    S = cp.sym("S")
    X = cp.placeholder((4, 8), "int32", "X")
    Z = cp.placeholder((S,), "int32", "Z")
    Y = cp.compute((4, 8), lambda i, j: cp.select(X[0, j] > 0, X[0, j], cp.cast(j, "int32")), "Y")
    W = cp.compute((S,), lambda i: Z[i] + 1, "W")
    return cp.lower("fn", [X, Z, Y, W])


def _expected(x: np.ndarray, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    row = np.where(x[0] > 0, x[0], np.arange(8, dtype=np.int32))
    return np.broadcast_to(row, (4, 8)), z + 1


def _inputs() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.integers(-5, 5, (4, 8)).astype(np.int32), rng.integers(-5, 5, 5).astype(np.int32)


def test_select_of_cast_axis_lowers_with_int32_value() -> None:
    func = _program()
    assert "select((X[0ll, i1] > 0), X[0ll, i1], int32(i1))" in str(func)
    x, z = _inputs()
    out = run_ir(func, {"X": x, "Z": z})
    for got, want in zip((out["Y"], out["W"]), _expected(x, z)):
        np.testing.assert_array_equal(got, want)


def test_select_of_cast_axis_runs_on_x86() -> None:
    x, z = _inputs()
    for schedule in (None, "auto"):
        y, w = cp.build(_program(), "x86", schedule=schedule)(x, z)
        for got, want in zip((y, w), _expected(x, z)):
            np.testing.assert_array_equal(got, want)


def test_select_of_cast_axis_compiles_for_cuda() -> None:
    code = cp.codegen(_program(), "cuda")
    assert "select" not in code.source and code.cubin  # printed as C and accepted by NVRTC
