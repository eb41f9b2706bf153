"""Builders for small IR functions used by the x86 backend tests (IR constructors only)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from cinn_py import ir
from cinn_py.ir import dtype as dt
from cinn_py.ir.dtype import DType

RNG = np.random.default_rng(7)


def tensor(name: str, shape: Sequence[int | ir.Expr], dtype: DType | str = dt.float32,
           scope: ir.MemoryType = ir.MemoryType.HEAP) -> ir.Tensor:
    dims = tuple(ir.const(d) if isinstance(d, int) else d for d in shape)
    return ir.make_tensor(name, dims, dt.dtype_of(dtype), scope)


def sym(name: str, lower: int = 1) -> ir.Var:
    return ir.Var(name, dt.int64, lower_bound=ir.const(lower, dt.int64), is_symbolic_constant=True)


def loop(var: ir.Var, extent: int | ir.Expr, *body: ir.Stmt, kind: ir.ForType = ir.ForType.SERIAL,
         factor: int = 0, start: int | ir.Expr = 0) -> ir.For:
    ext = ir.const(extent, var.dtype) if isinstance(extent, int) else extent
    lo = ir.const(start, var.dtype) if isinstance(start, int) else start
    return ir.For(var, lo, ext, ir.Block(tuple(body)), for_type=kind, vectorize_factor=factor)


def func(name: str, inputs: Sequence[ir.Tensor], outputs: Sequence[ir.Tensor], *body: ir.Stmt,
         syms: Sequence[ir.Var] = (), temps: Sequence[ir.Buffer] = ()) -> ir.LoweredFunc:
    args = tuple(ir.Argument(ir.ArgIO.INPUT, t) for t in inputs) + \
        tuple(ir.Argument(ir.ArgIO.OUTPUT, t) for t in outputs) + \
        tuple(ir.Argument(ir.ArgIO.SCALAR, var=s) for s in syms)
    return ir.LoweredFunc(name, args, ir.Block(tuple(body)), temp_bufs=tuple(temps))


def elementwise_1d(n: int | ir.Expr, dtype: DType | str, fn: Callable[[ir.Expr], ir.Expr],
                   out_dtype: DType | str | None = None, kind: ir.ForType = ir.ForType.SERIAL,
                   factor: int = 0, syms: Sequence[ir.Var] = (), n_inputs: int = 1) -> ir.LoweredFunc:
    """`B[i] = fn(A[i])` (or fn(A[i], C[i]) with two inputs) over one loop of `n` iterations."""
    idx_dtype = dt.int64 if syms else dt.int32
    i = ir.Var("i", idx_dtype)
    ins = [tensor(nm, (n,), dtype) for nm in ("A", "C")[:n_inputs]]
    out = tensor("B", (n,), out_dtype or dtype)
    value = fn(*[ir.Load(t, (i,)) for t in ins])
    return func("fn", ins, [out], loop(i, n, ir.Store(out, value, (i,)), kind=kind, factor=factor), syms=syms)


def random_array(shape: tuple[int, ...], dtype: DType | str) -> np.ndarray:
    d = dt.dtype_of(dtype)
    if d.is_bool:
        return RNG.random(shape) < 0.5
    if d.is_integral:
        info = np.iinfo(d.to_numpy())
        lo, hi = max(info.min, -100), min(info.max, 100)
        return RNG.integers(lo, hi + 1, shape).astype(d.to_numpy())
    values = RNG.standard_normal(shape).astype(np.float32) * 4
    if d.kind == "bfloat":
        return bf16_bits(values)
    return values.astype(d.to_numpy())


def bf16_bits(values: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bits, round to nearest even (the reference for the backend)."""
    bits = np.asarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(values)
    return np.where(nan, ((bits >> 16) | 0x40).astype(np.uint16), rounded)


def bf16_values(bits: np.ndarray) -> np.ndarray:
    return (np.asarray(bits, dtype=np.uint32) << 16).view(np.float32)
