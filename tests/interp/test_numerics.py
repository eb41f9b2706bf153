"""C semantics of run_ir: integer wrap/division, float16/bfloat16, casts, min/max, bool logic."""

from __future__ import annotations

import math

import numpy as np
import pytest

from cinn_py import ir
from cinn_py.interp import DivisionByZeroError, bf16_bits_to_float32, float32_to_bf16_bits, run_ir
from tests.interp.irb import elementwise

INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


def _wrap(value: int, dtype: np.dtype) -> int:
    bits = dtype.itemsize * 8
    value %= 1 << bits
    if dtype.kind == "i" and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def _c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _random_ints(dtype: np.dtype, n: int, rng: np.random.Generator) -> np.ndarray:
    info = np.iinfo(dtype)
    edge = np.array([info.min, info.max, 0, 1, info.max - 1, info.min + 1], dtype=dtype)
    body = rng.integers(info.min, info.max, size=n - edge.size, dtype=dtype, endpoint=True)
    return np.concatenate([edge, body]).astype(dtype)


REFERENCE = {
    "add": (lambda a, b: a + b, lambda a, b: a + b),
    "sub": (lambda a, b: a - b, lambda a, b: a - b),
    "mul": (lambda a, b: a * b, lambda a, b: a * b),
    "div": (lambda a, b: ir.Div(a, b), _c_div),
    "mod": (lambda a, b: ir.Mod(a, b), lambda a, b: a - _c_div(a, b) * b),
    "min": (lambda a, b: ir.Min(a, b), min),
    "max": (lambda a, b: ir.Max(a, b), max),
}


@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("op", sorted(REFERENCE))
@pytest.mark.parametrize("vectorize", [True, False])
def test_integer_ops_match_c(dtype: str, op: str, vectorize: bool) -> None:
    rng = np.random.default_rng(hash((dtype, op)) % 2**32)
    np_dtype = np.dtype(dtype)
    a = _random_ints(np_dtype, 40, rng)
    b = _random_ints(np_dtype, 40, rng)[::-1].copy()
    if op in ("div", "mod"):
        b[b == 0] = 7
        a[:4] = np.array([-7, 7, -7, 7]).astype(np_dtype) if np_dtype.kind == "i" else a[:4]
        b[:4] = np.array([2, -2, -2, 2]).astype(np_dtype) if np_dtype.kind == "i" else b[:4]
    build, ref = REFERENCE[op]
    func = elementwise(build, dtype, a.size)
    out = run_ir(func, {"A0": a, "A1": b}, vectorize=vectorize)["C"]
    expected = []
    for x, y in zip(a.tolist(), b.tolist()):
        if op == "div" and np_dtype.kind == "i" and x == np.iinfo(np_dtype).min and y == -1:
            expected.append(x)  # INT_MIN / -1 wraps (undefined in C)
        elif op == "mod" and np_dtype.kind == "i" and x == np.iinfo(np_dtype).min and y == -1:
            expected.append(0)
        else:
            expected.append(_wrap(ref(x, y), np_dtype))
    assert out.dtype == np_dtype
    assert out.tolist() == expected


def test_c_division_and_modulo_of_negatives() -> None:
    a = np.array([-7, 7, -7, 7, -1, 0], dtype=np.int32)
    b = np.array([2, -2, -2, 2, 3, -5], dtype=np.int32)
    div = run_ir(elementwise(lambda x, y: ir.Div(x, y), "int32", 6), {"A0": a, "A1": b})["C"]
    mod = run_ir(elementwise(lambda x, y: ir.Mod(x, y), "int32", 6), {"A0": a, "A1": b})["C"]
    assert div.tolist() == [-3, -3, 3, 3, 0, 0]
    assert mod.tolist() == [-1, 1, -1, 1, -1, 0]


@pytest.mark.parametrize("vectorize", [True, False])
def test_integer_division_by_zero_raises(vectorize: bool) -> None:
    a = np.array([1, 2], dtype=np.int32)
    b = np.array([1, 0], dtype=np.int32)
    with pytest.raises(DivisionByZeroError, match="by zero"):
        run_ir(elementwise(lambda x, y: ir.Div(x, y), "int32", 2), {"A0": a, "A1": b}, vectorize=vectorize)


def test_float16_arithmetic_happens_in_float16() -> None:
    # 2048 + 1 is not representable in float16: (a + b) - a is 0 in float16, 1 in float32.
    a = np.full(4, 2048, dtype=np.float16)
    b = np.ones(4, dtype=np.float16)
    out = run_ir(elementwise(lambda x, y: (x + y) - x, "float16", 4), {"A0": a, "A1": b})["C"]
    assert out.dtype == np.float16
    assert out.tolist() == [0.0] * 4
    rng = np.random.default_rng(0)
    x = rng.standard_normal(64).astype(np.float16)
    y = rng.standard_normal(64).astype(np.float16)
    got = run_ir(elementwise(lambda p, q: p * q + p / q, "float16", 64), {"A0": x, "A1": y})["C"]
    np.testing.assert_array_equal(got, x * y + x / y)


def _bf16(values: np.ndarray) -> np.ndarray:
    return bf16_bits_to_float32(float32_to_bf16_bits(values))


def test_bfloat16_rounds_after_every_operation() -> None:
    # bfloat16 has 8 significant bits: 256 + 1 rounds back to 256 (ties to even), 256 + 3 -> 260.
    a = np.full(3, 256.0, dtype=np.float32)
    b = np.array([1.0, 3.0, 2.0], dtype=np.float32)
    out = run_ir(elementwise(lambda x, y: (x + y) - x, "bfloat16", 3), {"A0": a, "A1": b})["C"]
    assert out.dtype == np.float32
    assert out.tolist() == [0.0, 4.0, 2.0]
    rng = np.random.default_rng(1)
    x = _bf16(rng.standard_normal(50).astype(np.float32))
    y = _bf16(rng.standard_normal(50).astype(np.float32))
    got = (run_ir(elementwise(lambda p, q: p * q + q, "bfloat16", 50),
                  {"A0": x, "A1": float32_to_bf16_bits(y)})["C"])
    np.testing.assert_array_equal(got, _bf16(_bf16(x * y) + y))
    np.testing.assert_array_equal(float32_to_bf16_bits(got).view(np.uint16).astype(np.uint32) << 16,
                                  got.view(np.uint32))


def test_bfloat16_rounding_ties_to_even_and_nan() -> None:
    values = np.array([1.0 + 2**-8, 1.0 + 3 * 2**-8, np.nan, np.inf, -0.0], dtype=np.float32)
    got = _bf16(values)
    assert got[0] == 1.0 and got[1] == 1.0 + 2**-6
    assert np.isnan(got[2]) and got[3] == np.inf and math.copysign(1, got[4]) == -1


CAST_CASES = [
    ("float32", "int32", [1.9, -1.9, 0.5, -0.5, np.nan, 3e9, -3e9], [1, -1, 0, 0, 0, 2**31 - 1, -2**31]),
    ("float32", "uint8", [1.9, 255.5, 300.0, -4.0, np.nan], [1, 255, 255, 0, 0]),
    ("float64", "int64", [1e19, -1e19, -2.5], [2**63 - 1, -2**63, -2]),
    ("int32", "int8", [300, -129, 127], [44, 127, 127]),
    ("int32", "uint16", [-1, 65536, 70000], [65535, 0, 4464]),
    ("float32", "bool", [0.0, -0.0, 2.0, np.nan], [False, False, True, True]),
    ("int64", "float32", [2**24 + 1, -3], [2.0**24, -3.0]),
    ("float64", "float16", [1.0 + 2**-11, 65520.0, 1e-8], [1.0, np.inf, 0.0]),
    ("int32", "bfloat16", [257, 259, -3], [256.0, 260.0, -3.0]),
    ("bool", "int32", [True, False], [1, 0]),
]


@pytest.mark.parametrize(("src", "dst", "values", "expected"), CAST_CASES)
def test_casts_follow_c(src: str, dst: str, values: list, expected: list) -> None:
    arr = np.array(values, dtype=np.float32 if src == "bfloat16" else src)
    func = elementwise(lambda x: ir.Cast(ir.dtype_of(dst), x), src, arr.size, n_inputs=1, out_dtype=dst)
    out = run_ir(func, {"A0": arr})["C"]
    assert out.tolist() == expected


def test_cinn_min_max_nan_semantics() -> None:
    a = np.array([np.nan, 1.0, np.nan, 0.0, -0.0], dtype=np.float32)
    b = np.array([1.0, np.nan, np.nan, -0.0, 0.0], dtype=np.float32)
    mx = run_ir(elementwise(lambda x, y: ir.Max(x, y), "float32", 5), {"A0": a, "A1": b})["C"]
    mn = run_ir(elementwise(lambda x, y: ir.Min(x, y), "float32", 5), {"A0": a, "A1": b})["C"]
    # `a > b ? a : b`: a NaN operand (either side) yields b; equal zeros yield b.
    assert mx[0] == 1.0 and np.isnan(mx[1]) and np.isnan(mx[2])
    assert [math.copysign(1, v) for v in mx[3:]] == [-1, 1]
    assert mn[0] == 1.0 and np.isnan(mn[1])
    assert [math.copysign(1, v) for v in mn[3:]] == [-1, 1]


def test_bool_logic_and_select() -> None:
    a = np.array([True, True, False, False])
    b = np.array([True, False, True, False])
    func = elementwise(lambda x, y: ir.Or(ir.And(x, ir.Not(y)), ir.And(ir.Not(x), y)), "bool", 4)
    assert run_ir(func, {"A0": a, "A1": b})["C"].tolist() == [False, True, True, False]
    x = np.array([1.0, -2.0, 3.0, -4.0], dtype=np.float32)
    y = np.array([5.0, 6.0, -7.0, 8.0], dtype=np.float32)
    sel = elementwise(lambda p, q: ir.Select(p > q, p - q, q * p), "float32", 4)
    np.testing.assert_array_equal(run_ir(sel, {"A0": x, "A1": y})["C"], np.where(x > y, x - y, y * x))


def test_integer_negation_and_overflow_wrap() -> None:
    a = np.array([-128, 127, 0, 5], dtype=np.int8)
    func = elementwise(lambda x: -x * ir.const(3, "int8"), "int8", 4, n_inputs=1)
    assert run_ir(func, {"A0": a})["C"].tolist() == [_wrap(-v * 3, np.dtype(np.int8)) for v in a.tolist()]
