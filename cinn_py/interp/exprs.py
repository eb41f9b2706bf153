"""Compile IR expressions into Python closures `fn(env) -> value`.

Compilation dispatches on node types once; running a closure does no type dispatch. `env` maps
variable names to numpy values. The same closure serves serial evaluation (loop variables are
numpy scalars) and vectorised evaluation (the loop variable is an `(n, 1)` column, so a value
that varies with the vectorised loop has two dimensions; vector lanes of `Ramp`/`Broadcast` live
on the last axis and loop-invariant lane vectors have one dimension). `env["__n__"]` is the
number of active iterations in vectorised mode.

Conditional evaluation is lazy, as in C: `select(c, t, f)` evaluates `t` only where `c` holds
(by compressing the varying values of `env`), so guarded out-of-bounds loads are never made.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from cinn_py.interp import math_fns
from cinn_py.interp import numerics as nm
from cinn_py.interp.errors import InterpError, OutOfBoundsError, UnsupportedConstructError
from cinn_py.interp.memory import Memory
from cinn_py.ir import (
    Add, And, BinaryOp, Broadcast, Call, Cast, DType, Div, EQ, Expr, FloatImm, GE, GT, IntImm, LE, LT, Load,
    Max, Min, Minus, Mod, Mul, NE, Not, Or, Ramp, Reduce, Select, StringImm, Sub, Var, print_ir, walk,
)

Env = dict[str, Any]
ExprFn = Callable[[Env], Any]

_ARITH: dict[type, Callable[[Any, Any], Any]] = {
    Add: lambda a, b: a + b,
    Sub: lambda a, b: a - b,
    Mul: lambda a, b: a * b,
}
_COMPARE: dict[type, Callable[[Any, Any], Any]] = {
    EQ: lambda a, b: a == b, NE: lambda a, b: a != b,
    LT: lambda a, b: a < b, LE: lambda a, b: a <= b,
    GT: lambda a, b: a > b, GE: lambda a, b: a >= b,
    And: lambda a, b: a & b, Or: lambda a, b: a | b,
}


def compress(env: Env, mask: np.ndarray) -> Env:
    """The environment restricted to the iterations where `mask` (length n) holds."""
    n = mask.shape[0]
    out: Env = {}
    for key, value in env.items():
        # Values left over from an earlier vectorised nest may have another length; they are
        # dead (every use is re-bound first), so only this nest's columns are compressed.
        if isinstance(value, np.ndarray) and value.ndim == 2 and value.shape[0] == n:
            value = value[mask]
        out[key] = value
    out["__n__"] = int(np.count_nonzero(mask))
    return out


def varying_mask(cond: np.ndarray, what: str) -> np.ndarray:
    """The per-iteration mask of a vectorised condition of shape (n, 1)."""
    if cond.ndim != 2 or cond.shape[1] != 1:
        raise UnsupportedConstructError(f"interp: {what} needs a scalar condition, got shape {cond.shape}")
    return cond[:, 0]


def check_bounds(idx: tuple[Any, ...], shape: tuple[int, ...], node: Any, tensor_name: str) -> None:
    """Raise `OutOfBoundsError` naming the tensor and dimension if any index is outside."""
    if len(idx) != len(shape):
        raise InterpError(
            f"interp: access to '{tensor_name}' has {len(idx)} indices but its storage has shape {shape}",
            print_ir(node))
    for dim, (i, extent) in enumerate(zip(idx, shape)):
        if isinstance(i, np.ndarray):
            if i.size == 0:
                continue
            lo, hi = i.min(), i.max()
        else:
            lo = hi = i
        if lo < 0 or hi >= extent:
            bad = lo if lo < 0 else hi
            raise OutOfBoundsError(
                f"interp: index {int(bad)} out of bounds for dim {dim} of '{tensor_name}' (extent {extent})",
                print_ir(node))


def is_lazy_safe(e: Expr) -> bool:
    """True if evaluating `e` where it is not needed cannot fault (no loads, no integer division)."""
    for node in walk(e):
        if isinstance(node, Load):
            return False
        if isinstance(node, (Div, Mod)) and not node.dtype.is_float:
            return False
    return True


class ExprCompiler:
    """Turns expressions into closures over `mem`; `scope` is the set of bound variable names."""

    def __init__(self, mem: Memory) -> None:
        self.mem = mem

    def compile(self, e: Expr, scope: frozenset[str]) -> ExprFn:
        method = getattr(self, "c_" + type(e).__name__, None)
        if method is not None:
            return method(e, scope)
        if isinstance(e, BinaryOp):
            return self.c_binary(e, scope)
        raise UnsupportedConstructError(f"interp: cannot evaluate a {type(e).__name__} node", print_ir(e))

    def compile_as(self, e: Expr, dtype: DType, scope: frozenset[str]) -> ExprFn:
        """`e` converted to `dtype` (C conversion) if it has another element type."""
        fn = self.compile(e, scope)
        src, dst = e.dtype.element_of(), dtype.element_of()
        if src == dst:
            return fn
        return lambda env: nm.c_cast(fn(env), src, dst)

    # -- leaves ---------------------------------------------------------------------------
    def c_IntImm(self, e: IntImm, scope: frozenset[str]) -> ExprFn:
        value = nm.make_const(e.value, e.dtype)
        return lambda env: value

    c_UIntImm = c_IntImm

    def c_FloatImm(self, e: FloatImm, scope: frozenset[str]) -> ExprFn:
        value = nm.make_const(e.value, e.dtype)
        return lambda env: value

    def c_StringImm(self, e: StringImm, scope: frozenset[str]) -> ExprFn:
        raise UnsupportedConstructError(f"interp: string immediate {e.value!r} has no numeric value")

    def c_Var(self, e: Var, scope: frozenset[str]) -> ExprFn:
        name = e.name
        if name not in scope:
            hint = " (the IR is already lowered to GPU thread indices)" if "Idx." in name else ""
            raise InterpError(f"interp: variable '{name}' is used but never bound{hint}", print_ir(e))
        return lambda env: env[name]

    # -- arithmetic -----------------------------------------------------------------------
    def c_binary(self, e: BinaryOp, scope: frozenset[str]) -> ExprFn:
        fa = self.compile(e.a, scope)
        fb = self.compile_as(e.b, e.a.dtype, scope)
        kind = type(e)
        dtype = e.a.dtype
        if kind in _COMPARE:
            op = _COMPARE[kind]
            return lambda env: op(fa(env), fb(env))
        if kind in _ARITH:
            op = _ARITH[kind]
            if dtype.kind == "bfloat":
                return lambda env: nm.round_bf16(op(fa(env), fb(env)))
            return lambda env: op(fa(env), fb(env))
        if kind is Div or kind is Mod:
            fn = nm.c_div if kind is Div else nm.c_mod
            if dtype.kind == "bfloat":
                return lambda env: nm.round_bf16(fn(fa(env), fb(env), dtype))
            return lambda env: fn(fa(env), fb(env), dtype)
        if kind is Min:
            return lambda env: nm.cinn_min(fa(env), fb(env))
        if kind is Max:
            return lambda env: nm.cinn_max(fa(env), fb(env))
        raise UnsupportedConstructError(f"interp: unknown binary operator {kind.__name__}", print_ir(e))

    def c_Minus(self, e: Minus, scope: frozenset[str]) -> ExprFn:
        fv = self.compile(e.v, scope)
        if e.dtype.is_bool:
            raise UnsupportedConstructError("interp: arithmetic negation of a bool", print_ir(e))
        return lambda env: -fv(env)

    def c_Not(self, e: Not, scope: frozenset[str]) -> ExprFn:
        fv = self.compile_as(e.v, e.dtype, scope)
        return lambda env: np.logical_not(fv(env))[()]

    def c_Cast(self, e: Cast, scope: frozenset[str]) -> ExprFn:
        return self.compile_as(e.v, e.dtype, scope)

    # -- control --------------------------------------------------------------------------
    def c_Select(self, e: Select, scope: frozenset[str]) -> ExprFn:
        fc = self.compile(e.condition, scope)
        ft = self.compile(e.true_value, scope)
        ff = self.compile(e.false_value, scope)
        eager = is_lazy_safe(e.true_value) and is_lazy_safe(e.false_value)
        out_dtype = nm.compute_dtype(e.dtype)

        def select(env: Env) -> Any:
            c = fc(env)
            if not isinstance(c, np.ndarray) or c.ndim == 0:
                return ft(env) if c else ff(env)
            if eager or c.ndim != 2 or c.shape[1] != 1:
                # Vector lanes: both branches are evaluated, as SIMD code does.
                return np.where(c, ft(env), ff(env))
            return _lazy_where(env, c[:, 0], ft, ff, out_dtype)

        return select

    # -- memory ---------------------------------------------------------------------------
    def c_Load(self, e: Load, scope: frozenset[str]) -> ExprFn:
        views = self.mem.views
        name = e.tensor.name
        index_fns = tuple(self.compile(i, scope) for i in e.indices)

        def load(env: Env) -> Any:
            try:
                arr = views[name]
            except KeyError:
                raise InterpError(f"interp: tensor '{name}' is read but its buffer is not allocated",
                                  print_ir(e)) from None
            idx = tuple(f(env) for f in index_fns)
            check_bounds(idx, arr.shape, e, name)
            return arr[idx]

        return load

    def c_Ramp(self, e: Ramp, scope: frozenset[str]) -> ExprFn:
        fb = self.compile(e.base, scope)
        fs = self.compile_as(e.stride, e.base.dtype, scope)
        lanes = np.arange(e.lanes, dtype=nm.compute_dtype(e.base.dtype))
        return lambda env: fb(env) + fs(env) * lanes

    def c_Broadcast(self, e: Broadcast, scope: frozenset[str]) -> ExprFn:
        fv = self.compile(e.value, scope)
        lanes = e.lanes

        def broadcast(env: Env) -> Any:
            v = fv(env)
            if isinstance(v, np.ndarray) and v.ndim == 2:
                return np.broadcast_to(v, (v.shape[0], lanes))
            return np.broadcast_to(v, (lanes,))

        return broadcast

    def c_Call(self, e: Call, scope: frozenset[str]) -> ExprFn:
        if math_fns.needs_threads(e.name):
            raise UnsupportedConstructError(
                f"interp: '{e.name}' is a cross-thread helper that needs real GPU threads; run the IR "
                f"before the cross-thread reduction pass, or run it on a GPU", print_ir(e))
        entry = math_fns.lookup(e.name)
        if entry is None:
            raise UnsupportedConstructError(
                f"interp: unknown call '{e.name}'; known intrinsics: {', '.join(math_fns.known_names())}",
                print_ir(e))
        fn, arity = entry
        if len(e.args) != arity:
            raise InterpError(f"interp: '{e.name}' takes {arity} argument(s), got {len(e.args)}", print_ir(e))
        arg_dtype = e.args[0].dtype
        arg_fns = tuple(self.compile_as(a, arg_dtype, scope) for a in e.args)
        out = nm.compute_dtype(e.dtype)
        round_bf16 = e.dtype.kind == "bfloat"

        def call(env: Env) -> Any:
            result = np.asarray(fn(*(f(env) for f in arg_fns)))
            if result.dtype != out:
                result = result.astype(out)
            return nm.round_bf16(result) if round_bf16 else result[()]

        return call

    def c_Reduce(self, e: Reduce, scope: frozenset[str]) -> ExprFn:
        raise UnsupportedConstructError(
            "interp: a Reduce node is compute-DSL level; lower the program first", print_ir(e))


def _lazy_where(env: Env, mask: np.ndarray, ft: ExprFn, ff: ExprFn, dtype: np.dtype) -> Any:
    """select() over vectorised iterations, each branch evaluated only where it is taken."""
    parts: list[tuple[np.ndarray, Any]] = []
    if mask.any():
        parts.append((mask, ft(compress(env, mask))))
    inverse = ~mask
    if inverse.any():
        parts.append((inverse, ff(compress(env, inverse))))
    lanes = max((np.shape(v)[-1] if np.ndim(v) >= 1 else 1 for _, v in parts), default=1)
    out = np.empty((mask.shape[0], lanes), dtype=dtype)
    for where, value in parts:
        value = np.asarray(value)
        out[where] = value if value.ndim == 2 else np.broadcast_to(value, (lanes,))
    return out
