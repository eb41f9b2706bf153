"""x86 backend: every dtype, every expression kind, C semantics, math intrinsics."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from cinn_py import ir
from cinn_py.ir import dtype as dt
from cinn_py.ir.dtype import DType
from cinn_py.ir.intrinsics import INTRINSICS, ArgKind
from codegen.llvm import build_x86
from tests.codegen.llvm.llvm_helpers import (
    bf16_bits, bf16_values, elementwise_1d, func, loop, random_array, tensor,
)

ALL = [d.scalar_name() for d in dt.ALL_SCALAR_DTYPES]


@pytest.mark.parametrize("dtype", ALL)
def test_copy_and_add_one_every_dtype(dtype: str) -> None:
    d = dt.dtype_of(dtype)
    f = elementwise_1d(37, d, lambda a: a if d.is_bool else a + ir.const(1, d))
    x = random_array((37,), d)
    y = build_x86(f, cache=False)(x)
    assert y.dtype == x.dtype and y.shape == (37,)
    if d.is_bool:
        np.testing.assert_array_equal(y, x)
    elif d.kind == "bfloat":
        np.testing.assert_array_equal(y, bf16_bits(bf16_values(x) + 1))
    elif d.is_float:
        np.testing.assert_array_equal(y,
                                      (x.astype(np.float32 if d.bits == 16 else x.dtype) + 1).astype(x.dtype))
    else:
        np.testing.assert_array_equal(y, (x + np.array(1, x.dtype)).astype(x.dtype))


CAST_TARGETS = ["bool", "int8", "uint16", "int64", "float16", "bfloat16", "float64"]


def _multi_output(in_dtypes: list[DType], outs: list[tuple[DType, Any]], n: int) -> ir.LoweredFunc:
    """One kernel with an output per (dtype, fn(loads...)) pair: keeps compile counts low."""
    i = ir.Var("i")
    ins = [tensor(f"X{k}", (n,), d) for k, d in enumerate(in_dtypes)]
    out_tensors = [tensor(f"Y{k}", (n,), d) for k, (d, _) in enumerate(outs)]
    loads = [ir.Load(t, (i,)) for t in ins]
    stores = [ir.Store(t, fn(*loads), (i,)) for t, (_, fn) in zip(out_tensors, outs)]
    return func("multi", ins, out_tensors, loop(i, n, *stores))


def _cast_input(s: DType) -> np.ndarray:
    x = random_array((16,), s)
    if s.is_float:  # keep float -> int conversions in range (out of range is UB in C), positive for uint
        return (bf16_bits(np.abs(np.clip(bf16_values(x), -100, 100))) if s.kind == "bfloat"
                else np.abs(np.clip(x, -100, 100)))
    return np.abs(x) if s.is_int else x


@pytest.mark.parametrize("src", ALL)
def test_casts_follow_c(src: str) -> None:
    s = dt.dtype_of(src)
    targets = [dt.dtype_of(d) for d in CAST_TARGETS]
    f = _multi_output([s], [(d, lambda a, d=d: ir.Cast(d, a)) for d in targets], 16)
    x = _cast_input(s)
    xv = bf16_values(x) if s.kind == "bfloat" else x
    for d, y in zip(targets, build_x86(f, cache=False)(x)):
        if d.is_bool:
            expected = xv != 0
        elif d.kind == "bfloat":
            expected = bf16_bits(xv.astype(np.float64).astype(np.float32))
        elif d.is_integral and s.is_float:
            expected = np.trunc(xv).astype(np.int64).astype(d.to_numpy())
        else:
            expected = xv.astype(d.to_numpy())
        np.testing.assert_array_equal(y, expected, err_msg=f"cast {s} -> {d}")


BINARY = {"add": ir.Add, "sub": ir.Sub, "mul": ir.Mul, "div": ir.Div, "mod": ir.Mod, "min": ir.Min,
          "max": ir.Max}


@pytest.mark.parametrize("dtype",
                         ["int8", "int32", "int64", "uint8", "uint32", "float16", "float32", "float64"])
def test_binary_ops(dtype: str) -> None:
    d = dt.dtype_of(dtype)
    f = _multi_output([d, d], [(d, node) for node in BINARY.values()], 64)
    a, c = random_array((64,), d), random_array((64,), d)
    if d.is_integral:
        c[c == 0] = 3
    x0, x1 = (v.astype(np.float64 if d.is_float else np.int64) for v in (a, c))
    refs = {"add": x0 + x1, "sub": x0 - x1, "mul": x0 * x1,
            "div": x0 / x1 if d.is_float else np.trunc(x0 / x1),
            "mod": np.fmod(x0, x1), "min": np.minimum(x0, x1), "max": np.maximum(x0, x1)}
    for (op, ref), y in zip(refs.items(), build_x86(f, cache=False)(a, c)):
        if d.is_float:
            np.testing.assert_allclose(y.astype(np.float64), ref,
                                       rtol=2e-3 if d.bits == 16 else 1e-6, err_msg=op)
        else:
            # wraps like C
            np.testing.assert_array_equal(y, ref.astype(np.int64).astype(d.to_numpy()), err_msg=op)


def test_integer_division_by_zero_and_overflow_never_trap() -> None:
    f = elementwise_1d(4, dt.int32, lambda a, c: ir.Add(ir.Div(a, c), ir.Mod(a, c)), n_inputs=2)
    a = np.array([7, -7, -2**31, 5], dtype=np.int32)
    c = np.array([0, 2, -1, 0], dtype=np.int32)
    np.testing.assert_array_equal(build_x86(f, cache=False)(a, c), [0, -3 + -1, -2**31, 0])


CMP = {"eq": (ir.EQ, np.equal), "ne": (ir.NE, np.not_equal), "lt": (ir.LT, np.less),
       "le": (ir.LE, np.less_equal),
       "gt": (ir.GT, np.greater), "ge": (ir.GE, np.greater_equal)}


@pytest.mark.parametrize("dtype", ["int16", "uint32", "float32", "bfloat16"])
def test_comparisons(dtype: str) -> None:
    d = dt.dtype_of(dtype)
    f = _multi_output([d, d], [(dt.bool_, node) for node, _ in CMP.values()], 50)
    a, c = random_array((50,), d), random_array((50,), d)
    c[::3] = a[::3]
    av, cv = (bf16_values(a), bf16_values(c)) if d.kind == "bfloat" else (a, c)
    for (op, (_, ref)), y in zip(CMP.items(), build_x86(f, cache=False)(a, c)):
        np.testing.assert_array_equal(y, ref(av, cv), err_msg=op)


def test_logic_not_minus_select_let() -> None:
    i = ir.Var("i")
    A, M = tensor("A", (20,), dt.float32), tensor("M", (20,), dt.bool_)
    B, C = tensor("B", (20,), dt.float32), tensor("C", (20,), dt.bool_)
    t = ir.Var("t", dt.float32)
    a, m = ir.Load(A, (i,)), ir.Load(M, (i,))
    body = loop(i, 20,
                ir.Let(t, -a),
                ir.Store(B, ir.Select(ir.And(m, ir.GT(a, ir.const(0.0))), t, a * 3.0), (i,)),
                ir.Store(C, ir.Or(ir.Not(m), ir.LT(a, ir.const(-1.0))), (i,)))
    f = func("logic", [A, M], [B, C], body)
    x, mask = random_array((20,), dt.float32), random_array((20,), dt.bool_)
    b, c = build_x86(f, cache=False)(x, mask)
    np.testing.assert_allclose(b, np.where(mask & (x > 0), -x, x * 3))
    np.testing.assert_array_equal(c, ~mask | (x < -1))


def test_select_and_short_circuit_do_not_read_out_of_bounds() -> None:
    # B[i] = select(i < 4, A[i], 0) with A of 4 elements and i up to 4096: an eager load would
    # read far past the end of A.
    i = ir.Var("i")
    A, B, C = tensor("A", (4,), dt.float32), tensor("B", (4096,), dt.float32), tensor("C", (4096,), dt.bool_)
    in_range = ir.LT(i, ir.const(4))
    body = loop(i, 4096, ir.Store(B, ir.Select(in_range, ir.Load(A, (i,)), ir.const(0.0)), (i,)),
                ir.Store(C, ir.And(in_range, ir.GT(ir.Load(A, (i,)), ir.const(0.0))), (i,)))
    f = func("guarded", [A], [B, C], body)
    x = np.array([1, -2, 3, -4], dtype=np.float32)
    b, c = build_x86(f, cache=False)(x)
    np.testing.assert_array_equal(b[:4], x)
    assert not b[4:].any() and not c[4:].any()
    np.testing.assert_array_equal(c[:4], x > 0)


def test_if_then_else_guard() -> None:
    i = ir.Var("i")
    A, B = tensor("A", (10,), dt.int32), tensor("B", (10,), dt.int32)
    guard = ir.IfThenElse(ir.LT(i, ir.const(6)), ir.Block((ir.Store(B, ir.Load(A, (i,)) * 2, (i,)),)),
                          ir.Block((ir.Store(B, ir.const(-1), (i,)),)))
    f = func("guard", [A], [B], loop(i, 10, guard))
    x = np.arange(10, dtype=np.int32)
    np.testing.assert_array_equal(build_x86(f, cache=False)(x), np.where(x < 6, 2 * x, -1))


def test_ramp_and_broadcast_nodes() -> None:
    i = ir.Var("i")
    A, B = tensor("A", (16,), dt.float32), tensor("B", (16,), dt.float32)
    ramp = ir.Ramp(i * 4, ir.const(1), 4)
    strided = ir.Ramp(i, ir.const(4), 4)  # a gather/scatter: lanes 4 apart
    body = loop(i, 4, ir.Store(B, ir.Load(A, (ramp,)) + ir.Broadcast(ir.const(1.0), 4), (strided,)))
    f = func("ramp", [A], [B], body)
    x = np.arange(16, dtype=np.float32)
    np.testing.assert_array_equal(build_x86(f, cache=False)(x), (x + 1).reshape(4, 4).T.ravel())


def _arg_range(name: str) -> tuple[float, float]:
    return {"log": (0.01, 20), "log2": (0.01, 20), "log10": (0.01, 20), "sqrt": (0, 50), "rsqrt": (0.01, 50),
            "asin": (-1, 1), "acos": (-1, 1), "atanh": (-0.99, 0.99), "acosh": (1, 20), "log1p": (-0.9, 20),
            "pow": (0.1, 4), "fmod": (0.5, 9)}.get(name, (-3, 3))


MATH_NAMES = sorted(n for n, i in INTRINSICS.items() if i.arg_kind is not ArgKind.INT) + ["sigmoid"]
INT_NAMES = sorted(n for n, i in INTRINSICS.items() if i.arg_kind is ArgKind.INT)


@pytest.mark.parametrize("dtype", ["int32", "int64", "int8", "uint8", "uint32"])
def test_integer_intrinsics_match_their_reference(dtype: str) -> None:
    """bitwise ops, shifts (arithmetic >> on signed, logical on unsigned), clz and popc, scalar
    and vectorised (a loop of 33 vectorises in the x86 backend's auto path only; here scalar)."""
    d = dt.dtype_of(dtype)
    n = 33
    info = np.iinfo(d.to_numpy())
    rng = np.random.default_rng(1)
    outs, inputs, refs = [], [], []
    for name in INT_NAMES:
        spec = INTRINSICS[name]
        args = [rng.integers(info.min, int(info.max) + 1, n, dtype=d.to_numpy()) for _ in range(spec.arity)]
        if name.endswith("shift"):
            args[1] = rng.integers(0, d.bits, n).astype(d.to_numpy())
        args[0][:3] = np.array([0, -1 if d.is_int else info.max, 1]).astype(d.to_numpy())
        first = len(inputs)
        inputs.extend(args)
        outs.append((d, lambda *xs, name=name, first=first, arity=spec.arity:
                     ir.Call(name, tuple(xs[first:first + arity]), d)))
        refs.append(spec.reference(*args))
    f = _multi_output([d] * len(inputs), outs, n)
    for name, ref, y in zip(INT_NAMES, refs, build_x86(f, cache=False)(*inputs)):
        np.testing.assert_array_equal(y, ref, err_msg=name)


def test_clz_and_popc_reference_values() -> None:
    x = np.array([0, 1, -1, 2**30, 255], np.int32)
    assert INTRINSICS["clz"].reference(x).tolist() == [32, 31, 0, 1, 24]
    assert INTRINSICS["popc"].reference(x).tolist() == [0, 1, 32, 1, 8]
    assert INTRINSICS["clz"].reference(np.array([1], np.int64)).tolist() == [63]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_every_math_intrinsic_matches_its_reference(dtype: str) -> None:
    d = dt.dtype_of(dtype)
    n = 33
    outs, inputs, refs = [], [], []
    for name in MATH_NAMES:
        spec = INTRINSICS.get(name)
        arity = spec.arity if spec else 1
        result = dt.bool_ if spec and spec.result_bool else d
        lo, hi = _arg_range(name)
        args = [np.linspace(lo, hi, n).astype(d.to_numpy()) for _ in range(arity)]
        if arity == 2:
            args[1] = args[1][::-1].copy()
        if spec and spec.result_bool:
            args[0][::4] = np.nan
            args[0][1::4] = np.inf
        first = len(inputs)
        inputs.extend(args)
        outs.append((result, lambda *xs, name=name, first=first, arity=arity, result=result:
                     ir.Call(name, tuple(xs[first:first + arity]), result)))
        refs.append(spec.reference(*args) if spec else 1 / (1 + np.exp(-args[0])))
    f = _multi_output([d] * len(inputs), outs, n)
    for name, ref, y in zip(MATH_NAMES, refs, build_x86(f, cache=False)(*inputs)):
        if y.dtype == np.bool_:
            np.testing.assert_array_equal(y, ref, err_msg=name)
        else:
            np.testing.assert_allclose(y, ref, rtol=2e-6 if dtype == "float32" else 1e-13, atol=1e-6,
                                       err_msg=name)


def test_integer_abs_and_int_argument_promotion() -> None:
    f = elementwise_1d(5, dt.int32, lambda a: ir.Call("abs", (a,), dt.int32))
    np.testing.assert_array_equal(build_x86(f, cache=False)(np.array([-3, 0, 4, -1, 9], np.int32)),
                                  [3, 0, 4, 1, 9])


def test_half_types_compute_in_float32_and_round_on_store() -> None:
    f = elementwise_1d(8, dt.float16, lambda a: ir.Call("exp", (a,), dt.float16) * 2)
    x = np.linspace(-2, 2, 8).astype(np.float16)
    expected = (np.exp(x.astype(np.float32)) * 2).astype(np.float16)
    np.testing.assert_array_equal(build_x86(f, cache=False)(x), expected)
    g = elementwise_1d(4, dt.bfloat16, lambda a: ir.Max(a, ir.const(0.0, dt.bfloat16)))
    bits = bf16_bits(np.array([-1.5, 2.25, math.inf, math.nan], np.float32))
    out = bf16_values(build_x86(g, cache=False)(bits))
    assert out[0] == 0 and out[1] == 2.25 and out[2] == math.inf
