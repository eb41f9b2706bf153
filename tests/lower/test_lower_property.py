"""Property test: random elementwise + reduction programs (any axes subset, keep-dims or not, 0-d
results, static or symbolic leading dim, float32 or int32) lower to IR that `run_ir` evaluates
exactly like numpy, and that survives the text format round trip."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import cinn_py as cp
from cinn_py.interp import run_ir
from cinn_py.ir import Expr, LoweredFunc, reset_name_ids, structural_equal
from cinn_py.ir.text.parser import parse_ir
from cinn_py.ir.text.printer import print_ir
from cinn_py.ir.verifier import verify

_NUMPY = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}


@st.composite
def programs(draw: st.DrawFn) -> dict:
    dims = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))
    return {
        "dims": dims,
        "symbolic": draw(st.booleans()),
        "axes": sorted(draw(st.sets(st.integers(0, len(dims) - 1), max_size=len(dims)))),
        "keep": draw(st.booleans()),
        "kind": draw(st.sampled_from(sorted(_NUMPY))),
        "dtype": draw(st.sampled_from(["float32", "int32"])),
    }


def _build(p: dict) -> LoweredFunc:
    dims, axes, keep = p["dims"], p["axes"], p["keep"]
    shape: list[int | Expr] = [cp.sym("S0") if p["symbolic"] and d == 0 else n for d, n in enumerate(dims)]
    X = cp.placeholder(shape, p["dtype"], "X")
    Y = cp.compute(shape, lambda *ax: X[ax] * 2 + 1, "Y")
    if not axes:
        Z = cp.compute(shape, lambda *ax: Y[ax] - 1, "Z")
        return cp.lower("fn", [X, Z])
    raxes = [cp.reduce_axis(shape[a], f"r{a}") for a in axes]
    out_shape = [1 if a in axes else shape[a] for a in range(len(dims)) if keep or a not in axes]
    reduce = getattr(cp, f"reduce_{p['kind']}")

    def body(*out_vars: Expr) -> Expr:
        spatial, rit, idx = iter(out_vars), iter(raxes), []
        for a in range(len(dims)):
            if a in axes:
                if keep:
                    next(spatial)  # the kept extent-1 axis is always 0
                idx.append(next(rit))
            else:
                idx.append(next(spatial))
        return reduce(Y[tuple(idx)], raxes)

    Z = cp.compute(out_shape, body, "Z")
    return cp.lower("fn", [X, Z])


def _reference(p: dict, x: np.ndarray) -> np.ndarray:
    y = x * x.dtype.type(2) + x.dtype.type(1)
    if not p["axes"]:
        return y - x.dtype.type(1)
    # numpy widens an int32 sum/prod to int64; C wraps in int32 (the same value modulo 2**32)
    return _NUMPY[p["kind"]](y, axis=tuple(p["axes"]), keepdims=p["keep"]).astype(y.dtype)


@settings(max_examples=40, deadline=None)
@given(programs(), st.integers(0, 2**31 - 1))
def test_random_reduction_programs_match_numpy(p: dict, seed: int) -> None:
    reset_name_ids()
    func = _build(p)
    verify(func)
    rng = np.random.default_rng(seed)
    if p["dtype"] == "float32":
        x = rng.uniform(-0.5, 0.5, p["dims"]).astype(np.float32)
    else:
        x = rng.integers(-1, 1, p["dims"], endpoint=True).astype(np.int32)
    expected = _reference(p, x)
    for vectorize in (False, True):
        out = run_ir(func, {"X": x}, vectorize=vectorize)["Z"]
        assert out.shape == expected.shape
        np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
    parsed = parse_ir(print_ir(func, decls=True))
    assert structural_equal(parsed, func)


def test_interp_vectorized_reduction_over_unit_axes() -> None:
    X = cp.placeholder((1, 3), "float32", "X")
    r = cp.reduce_axis(1, "r")
    Z = cp.compute((3,), lambda i: cp.reduce_max(X[r, i], [r]), "Z")
    x = np.arange(3, dtype=np.float32).reshape(1, 3)
    out = run_ir(cp.lower("fn", [X, Z]), {"X": x})["Z"]
    np.testing.assert_array_equal(out, x[0])
