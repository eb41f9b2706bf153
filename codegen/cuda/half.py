"""float16/bfloat16 arithmetic in float: the IR rewrite the CUDA printer runs first.

CUDA's `__half`/`__nv_bfloat16` types are storage types here: every load of a half value is
widened to float, arithmetic and math intrinsics run in float, and the value is narrowed once when
it is stored (or passed to a runtime helper that takes a half). This is what CINN's CUDA runtime
does per op (`cinn_nvgpu_*_fp16` compute in float) and it avoids half-precision rounding of
intermediate results. The cross-thread reduce helpers accumulate float16/bfloat16 in float too.
"""

from __future__ import annotations

import dataclasses

from cinn_py.ir import expr as E
from cinn_py.ir import stmt as S
from cinn_py.ir.dtype import DType, float32
from cinn_py.ir.intrinsics import lookup
from cinn_py.ir.visitor import Mutator


def is_half(dtype: DType) -> bool:
    """float16 or bfloat16 (scalar or vector)."""
    return dtype.bits == 16 and dtype.kind in ("float", "bfloat")


def _narrow(dtype: DType, wide: E.Expr) -> E.Expr:
    """`wide` (float) back to the half type; `float(h)` narrows to `h` without a round trip."""
    if isinstance(wide, E.Cast) and wide.dtype == float32 and wide.v.dtype == dtype:
        return wide.v
    return E.Cast(dtype, wide)


class HalfPromoter(Mutator):
    """Rewrites expressions so that half values are only loaded, stored and converted."""

    # -- same-typed rewrite ----------------------------------------------------------------------
    def fix(self, e: E.Expr) -> E.Expr:
        if is_half(e.dtype):
            return _narrow(e.dtype, self.wide(e))
        if isinstance(e, E.CmpOp) and not isinstance(e, E.LogicalOp) and is_half(e.a.dtype):
            return type(e)(self.wide(e.a), self.wide(e.b))
        if isinstance(e, E.Cast) and is_half(e.v.dtype):
            return E.Cast(e.dtype, self.wide(e.v))
        if isinstance(e, E.Call) and lookup(e.name) is not None and any(is_half(a.dtype) for a in e.args):
            return dataclasses.replace(e, args=tuple(self.wide(a) if is_half(a.dtype) else self.fix(a)
                                                     for a in e.args))
        return self.generic_visit(e)

    def visit(self, node: object) -> object:  # type: ignore[override]
        if isinstance(node, E.Expr):
            return self.fix(node)
        return super().visit(node)

    # -- float version of a half-typed expression --------------------------------------------------
    def wide(self, e: E.Expr) -> E.Expr:
        if isinstance(e, E.FloatImm):
            return E.FloatImm(float32, e.value)
        if isinstance(e, E.Load):
            return E.Cast(float32, self.generic_visit(e))
        if isinstance(e, E.Cast):
            inner = self.fix(e.v)
            if is_half(e.v.dtype) and e.v.dtype == e.dtype:
                return self.wide(e.v)
            return E.Cast(float32, E.Cast(e.dtype, inner))
        if isinstance(e, E.BinaryOp) and not isinstance(e, E.CmpOp):
            return type(e)(self.wide(e.a), self.wide(e.b))
        if isinstance(e, E.Minus):
            return E.Minus(self.wide(e.v))
        if isinstance(e, E.Select):
            return E.Select(self.fix(e.condition), self.wide(e.true_value), self.wide(e.false_value))
        if isinstance(e, E.Call) and lookup(e.name) is not None:
            args = tuple(self.wide(a) if is_half(a.dtype) else self.fix(a) for a in e.args)
            return E.Call(e.name, args, float32, e.call_type)
        # Vars, runtime helper calls and anything else keep their half type and are widened whole.
        return E.Cast(float32, self.generic_visit(e))

    # -- statements --------------------------------------------------------------------------------
    def visit_store(self, node: S.Store) -> S.Stmt:
        indices = tuple(self.fix(i) for i in node.indices)
        value = node.value
        if is_half(value.dtype) and not is_half(node.tensor.dtype):
            new_value = self.wide(value)
        else:
            new_value = self.fix(value)
        return dataclasses.replace(node, indices=indices, value=new_value)


def promote_half(stmt: S.Stmt) -> S.Stmt:
    """Compute every float16/bfloat16 expression of `stmt` in float."""
    return HalfPromoter().visit(stmt)  # type: ignore[return-value]
