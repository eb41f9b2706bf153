"""Small IR builders for interpreter tests (programs built with the IR constructors directly)."""

from __future__ import annotations

from collections.abc import Sequence

from cinn_py import ir
from cinn_py.ir import (
    ArgIO, Argument, Block, Expr, For, ForType, LoweredFunc, ScheduleBlock, ScheduleBlockRealize, Stmt,
    Tensor, Var,
)


def tensor(name: str, shape: Sequence[int | Expr], dtype: str = "float32", scope: str = "global") -> Tensor:
    dims = tuple(ir.const(d, "int32") if isinstance(d, int) else d for d in shape)
    return ir.make_tensor(name, dims, ir.dtype_of(dtype), ir.MemoryType.from_scope(scope))


def var(name: str, dtype: str = "int32") -> Var:
    return Var(name, ir.dtype_of(dtype))


def loop(v: Var, extent: int | Expr, *body: Stmt, kind: ForType = ForType.SERIAL, lo: int | Expr = 0,
         bind: int = -1, factor: int = 0) -> For:
    ext = ir.const(extent, v.dtype) if isinstance(extent, int) else extent
    start = ir.const(lo, v.dtype) if isinstance(lo, int) else lo
    return For(v, start, ext, Block(tuple(body)), kind, bind_offset=bind, vectorize_factor=factor)


def func(name: str, inputs: Sequence[Tensor], outputs: Sequence[Tensor], *body: Stmt,
         scalars: Sequence[Var] = (), temp_bufs: Sequence[ir.Buffer] = ()) -> LoweredFunc:
    """A LoweredFunc with CINN's shape: Block((root realize,))."""
    args = [Argument(ArgIO.INPUT, tensor=t) for t in inputs]
    args += [Argument(ArgIO.OUTPUT, tensor=t) for t in outputs]
    args += [Argument(ArgIO.SCALAR, var=v) for v in scalars]
    inner = body[0] if len(body) == 1 else Block(tuple(body))
    root = ScheduleBlockRealize((), ScheduleBlock("root", (), inner))
    return LoweredFunc(name, tuple(args), Block((root,)), tuple(temp_bufs))


def elementwise(fn, dtype: str, n: int, n_inputs: int = 2, out_dtype: str | None = None) -> LoweredFunc:
    """C[i] = fn(A0[i], A1[i], ...) over a 1-D serial loop."""
    ins = [tensor(f"A{k}", (n,), dtype) for k in range(n_inputs)]
    out = tensor("C", (n,), out_dtype or dtype)
    i = var("i")
    value = fn(*(ir.Load(t, (i,)) for t in ins))
    return func("fn", ins, [out], loop(i, n, ir.Store(out, value, (i,))))
