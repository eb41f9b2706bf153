"""Math intrinsics in run_ir: every name of the shared table, per float dtype, against numpy/math."""

from __future__ import annotations

import math

import numpy as np
import pytest

from cinn_py import ir
from cinn_py.interp import UnsupportedConstructError, run_ir
from cinn_py.interp.math_fns import erf, known_names
from cinn_py.ir import intrinsics
from tests.interp.irb import elementwise

_DOMAIN = {  # inputs inside each function's domain
    "log": (0.1, 5), "log2": (0.1, 5), "log10": (0.1, 5), "log1p": (-0.5, 5), "sqrt": (0, 5),
    "rsqrt": (0.1, 5),
    "asin": (-0.9, 0.9), "acos": (-0.9, 0.9), "atanh": (-0.9, 0.9), "acosh": (1.1, 5),
}
_EXPECTED = {
    "rsqrt": lambda x: 1 / np.sqrt(x), "erf": lambda x: np.vectorize(math.erf)(x),
    "round": lambda x: np.copysign(np.floor(np.abs(x) + 0.5), x), "abs": np.abs,
    "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "asinh": np.arcsinh, "acosh": np.arccosh,
    "atanh": np.arctanh, "pow": np.power, "atan2": np.arctan2,
}


def _call(name: str, dtype: str, arity: int, n: int) -> ir.LoweredFunc:
    info = intrinsics.lookup(name)
    assert info is not None
    out_dtype = "bool" if info.result_bool else dtype
    return elementwise(lambda *xs: ir.Call(name, tuple(xs), ir.dtype_of(out_dtype)), dtype, n,
                       n_inputs=arity, out_dtype=out_dtype)


@pytest.mark.parametrize("name", sorted(n for n, i in intrinsics.INTRINSICS.items()
                                         if i.arg_kind is not intrinsics.ArgKind.INT))
def test_every_table_intrinsic_float32_and_float64(name: str) -> None:
    info = intrinsics.INTRINSICS[name]
    lo, hi = _DOMAIN.get(name, (-3, 3))
    for dtype, rtol in (("float32", 2e-6), ("float64", 1e-13)):
        xs = [np.linspace(lo, hi, 37).astype(dtype) + np.asarray(k * 0.125, dtype) for k in range(info.arity)]
        if name == "pow":
            xs[0] = np.abs(xs[0]) + np.asarray(0.5, dtype)
        out = run_ir(_call(name, dtype, info.arity, 37), {f"A{k}": x for k, x in enumerate(xs)})["C"]
        ref_fn = _EXPECTED.get(name, getattr(np, name, None))
        expected = ref_fn(*(x.astype(np.float64) for x in xs))
        if info.result_bool:
            np.testing.assert_array_equal(out, expected)
        else:
            assert out.dtype == np.dtype(dtype)
            np.testing.assert_allclose(out, expected.astype(dtype), rtol=rtol, atol=rtol)


@pytest.mark.parametrize("name", sorted(n for n, i in intrinsics.INTRINSICS.items()
                                         if i.arg_kind is intrinsics.ArgKind.INT))
@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8"])
def test_integer_intrinsics(name: str, dtype: str) -> None:
    info = intrinsics.INTRINSICS[name]
    rng = np.random.default_rng(0)
    xs = [rng.integers(0, 100, 37).astype(dtype) - (np.asarray(50, dtype) if dtype != "uint8" else 0)
          for _ in range(info.arity)]
    if name.endswith("shift"):
        xs[1] = rng.integers(0, 7, 37).astype(dtype)
    out = run_ir(_call(name, dtype, info.arity, 37), {f"A{k}": x for k, x in enumerate(xs)})["C"]
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out, info.reference(*xs))


def test_all_interpreter_names_are_in_the_table_or_aliases() -> None:
    assert set(intrinsics.INTRINSICS) <= set(known_names())


def test_half_precision_intrinsics_stay_in_their_dtype() -> None:
    x = np.linspace(-2, 2, 9).astype(np.float16)
    out = run_ir(_call("exp", "float16", 1, 9), {"A0": x})["C"]
    assert out.dtype == np.float16
    np.testing.assert_array_equal(out, np.exp(x))
    xb = np.linspace(-2, 2, 9).astype(np.float32)
    outb = run_ir(_call("tanh", "bfloat16", 1, 9), {"A0": xb})["C"]
    bits = outb.view(np.uint32)
    assert (bits & 0xFFFF == 0).all()  # rounded to bfloat16
    np.testing.assert_allclose(outb, np.tanh(xb), rtol=2**-8)


def test_c_round_and_erf_accuracy() -> None:
    x = np.array([0.49999997, 0.5, 1.5, 2.5, -0.5, -2.5, -0.49999997], np.float32)
    out = run_ir(_call("round", "float32", 1, 7), {"A0": x})["C"]
    assert out.tolist() == [0.0, 1.0, 2.0, 3.0, -1.0, -3.0, -0.0]
    grid = np.concatenate([np.linspace(-7, 7, 4001), np.logspace(-300, 0.8, 200), [np.inf, -np.inf, 0.0]])
    ref = np.array([math.erf(v) for v in grid])
    rel = np.abs(erf(grid) - ref) / np.maximum(np.abs(ref), 1e-300)
    assert rel.max() < 1e-14
    assert np.isnan(erf(np.array([np.nan])))[0]


def test_unknown_call_is_unsupported() -> None:
    f = elementwise(lambda x: ir.Call("no_such_fn", (x,), ir.dtype.float32), "float32", 2, n_inputs=1)
    with pytest.raises(UnsupportedConstructError, match="unknown call 'no_such_fn'"):
        run_ir(f, {"A0": np.zeros(2, np.float32)})
