"""float16/bfloat16 arithmetic in float: the IR rewrite the CUDA printer runs first.

CUDA's `__half`/`__nv_bfloat16` types are storage types here: every load of a half value is
widened to float, arithmetic and math intrinsics run in float, and the value is narrowed once when
it is stored (or passed to a runtime helper that takes a half). This is what CINN's CUDA runtime
does per op (`cinn_nvgpu_*_fp16` compute in float) and it avoids half-precision rounding of
intermediate results. The cross-thread reduce helpers accumulate float16/bfloat16 in float too.
"""

from __future__ import annotations

import dataclasses

from cinn_py.ir import (
    BinaryOp, Call, Cast, CmpOp, DType, Expr, FloatImm, Load, LogicalOp, Minus, Mutator, Select, Stmt, Store,
    float32, lookup_intrinsic,
)


def is_half(dtype: DType) -> bool:
    """float16 or bfloat16 (scalar or vector)."""
    return dtype.bits == 16 and dtype.kind in ("float", "bfloat")


def _narrow(dtype: DType, wide: Expr) -> Expr:
    """`wide` (float) back to the half type; `float(h)` narrows to `h` without a round trip."""
    if isinstance(wide, Cast) and wide.dtype == float32 and wide.v.dtype == dtype:
        return wide.v
    return Cast(dtype, wide)


class HalfPromoter(Mutator):
    """Rewrites expressions so that half values are only loaded, stored and converted."""

    # -- same-typed rewrite ----------------------------------------------------------------------
    def fix(self, e: Expr) -> Expr:
        if is_half(e.dtype):
            return _narrow(e.dtype, self.wide(e))
        if isinstance(e, CmpOp) and not isinstance(e, LogicalOp) and is_half(e.a.dtype):
            return type(e)(self.wide(e.a), self.wide(e.b))
        if isinstance(e, Cast) and is_half(e.v.dtype):
            return Cast(e.dtype, self.wide(e.v))
        if (isinstance(e, Call) and lookup_intrinsic(e.name) is not None
            and any(is_half(a.dtype) for a in e.args)):
            return dataclasses.replace(e, args=tuple(self.wide(a) if is_half(a.dtype) else self.fix(a)
                                                     for a in e.args))
        return self.generic_visit(e)

    def visit(self, node: object) -> object:  # type: ignore[override]
        if isinstance(node, Expr):
            return self.fix(node)
        return super().visit(node)

    # -- float version of a half-typed expression --------------------------------------------------
    def wide(self, e: Expr) -> Expr:
        if isinstance(e, FloatImm):
            return FloatImm(float32, e.value)
        if isinstance(e, Load):
            return Cast(float32, self.generic_visit(e))
        if isinstance(e, Cast):
            inner = self.fix(e.v)
            if is_half(e.v.dtype) and e.v.dtype == e.dtype:
                return self.wide(e.v)
            return Cast(float32, Cast(e.dtype, inner))
        if isinstance(e, BinaryOp) and not isinstance(e, CmpOp):
            return type(e)(self.wide(e.a), self.wide(e.b))
        if isinstance(e, Minus):
            return Minus(self.wide(e.v))
        if isinstance(e, Select):
            return Select(self.fix(e.condition), self.wide(e.true_value), self.wide(e.false_value))
        if isinstance(e, Call) and lookup_intrinsic(e.name) is not None:
            args = tuple(self.wide(a) if is_half(a.dtype) else self.fix(a) for a in e.args)
            return Call(e.name, args, float32, e.call_type)
        # Vars, runtime helper calls and anything else keep their half type and are widened whole.
        return Cast(float32, self.generic_visit(e))

    # -- statements --------------------------------------------------------------------------------
    def visit_store(self, node: Store) -> Stmt:
        indices = tuple(self.fix(i) for i in node.indices)
        value = node.value
        if is_half(value.dtype) and not is_half(node.tensor.dtype):
            new_value = self.wide(value)
        else:
            new_value = self.fix(value)
        return dataclasses.replace(node, indices=indices, value=new_value)


def promote_half(stmt: Stmt) -> Stmt:
    """Compute every float16/bfloat16 expression of `stmt` in float."""
    return HalfPromoter().visit(stmt)  # type: ignore[return-value]
