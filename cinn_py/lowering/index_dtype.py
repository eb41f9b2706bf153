"""Widening of index arithmetic to int64 for functions with symbolic dims.

CINN's dynamic-shape lowering uses int64 for every loop var, iter var, extent and index immediate
(`serial for (i, 0ll, S0)`, `X[i0, 1023ll]`) as soon as one dim is symbolic. The DSL builds a
static-shape compute with int32 axis Vars, so a function that mixes static and symbolic tensors is
widened here: int32 axis / reduce Vars become int64 Vars of the same name, tensor shapes become
int64, and wherever an int32 operand meets an int64 one in index arithmetic (`X[i + 1]`) or a
comparison the int32 side is widened (immediates retyped, other expressions cast).

Values keep their dtype: an axis Var used as a value (`cast(j, "int32")`, which is `j` itself,
inside a `select` whose other branch is int32) becomes `int32(j)` over the int64 Var, so the
widening never changes the dtype of a computed value (it used to leak int64 into an int32
`select` and fail with an internal TypeError).
"""

from __future__ import annotations

from typing import Any

from cinn_py.ir import (
    BinaryOp, Cast, CmpOp, Expr, IntImm, Load, LogicalOp, Mutator, Reduce, Select, Tensor, Var, int32, int64,
    make_tensor,
)


def to_int64(e: Expr) -> Expr:
    """`e` as an int64 expression: immediates are retyped, other int expressions cast."""
    if e.dtype == int64:
        return e
    if isinstance(e, IntImm):
        return IntImm(int64, e.value)
    return Cast(int64, e)


def _unify(a: Expr, b: Expr) -> tuple[Expr, Expr]:
    """Widen the int32 side of an int32/int64 pair."""
    if a.dtype == b.dtype or not (a.dtype.is_int and b.dtype.is_int):
        return a, b
    if a.dtype == int64 and b.dtype == int32:
        return a, to_int64(b)
    if b.dtype == int64 and a.dtype == int32:
        return to_int64(a), b
    return a, b


class Int64Indices(Mutator):
    """Rewrites DSL expressions and tensors of a symbolic function to int64 indices.

    Tensors are rebuilt once per name (`tensor()`), so every Load and Store of one tensor refers
    to the same rebuilt object.
    """

    def __init__(self) -> None:
        self._tensors: dict[str, Tensor] = {}
        self._index_depth = 0
        """> 0 while visiting an index or comparison operand, where widening to int64 is allowed."""

    # -- tensors ---------------------------------------------------------------------------------
    def tensor(self, t: Tensor) -> Tensor:
        done = self._tensors.get(t.name)
        if done is not None:
            return done
        shape = tuple(to_int64(self.visit(d)) for d in t.shape)
        new = t if shape == t.shape else make_tensor(t.name, shape, t.dtype, t.buffer.memory_type,
                                                     t.buffer.name)
        self._tensors[t.name] = new
        return new

    def visit_tensor(self, tensor: Tensor) -> Tensor:
        return self.tensor(tensor)

    # -- expressions -----------------------------------------------------------------------------
    def var(self, v: Var) -> Var:
        """The int64 version of an int32 axis / reduce Var (symbolic dims are int64 already)."""
        if v.dtype != int32 or v.is_symbolic_constant:
            return v
        lower = None if v.lower_bound is None else to_int64(self.visit(v.lower_bound))
        upper = None if v.upper_bound is None else to_int64(self.visit(v.upper_bound))
        return Var(v.name, int64, lower_bound=lower, upper_bound=upper,
                   is_reduce_axis=v.is_reduce_axis, is_symbolic_constant=False)

    def visit_var(self, v: Var) -> Var:
        return self.var(v)

    def visit_load(self, node: Load) -> Load:
        indices = tuple(to_int64(self.index(i)) for i in node.indices)
        return Load(self.tensor(node.tensor), indices)

    def index(self, e: Expr) -> Expr:
        """`e` rewritten where int64 is wanted (an index, a comparison operand)."""
        self._index_depth += 1
        try:
            return self.visit(e)
        finally:
            self._index_depth -= 1

    def visit_reduce(self, node: Reduce) -> Reduce:
        return Reduce(node.reduce_type, self.visit(node.body), self.visit(node.init),
                      tuple(self.var(v) for v in node.reduce_axis))

    def visit(self, node: Any) -> Any:
        new = self._rewrite(node)
        if self._index_depth or not isinstance(node, Expr) or new.dtype == node.dtype:
            return new
        return Cast(node.dtype, new)  # a value keeps its dtype (only int32 -> int64 can differ)

    def _rewrite(self, node: Any) -> Any:
        if isinstance(node, CmpOp) and not isinstance(node, LogicalOp):
            return self._binary(node, self.index(node.a), self.index(node.b))
        if isinstance(node, BinaryOp) and not isinstance(node, LogicalOp):
            return self._binary(node, self.visit(node.a), self.visit(node.b))
        if isinstance(node, Cast):  # the cast fixes the result dtype: its operand may widen
            v = self.index(node.v)
            return node if v is node.v else Cast(node.dtype, v)
        if isinstance(node, Select) and self._index_depth:
            t, f = _unify(self.visit(node.true_value), self.visit(node.false_value))
            return Select(self.visit(node.condition), t, f)
        return super().visit(node)

    @staticmethod
    def _binary(node: BinaryOp, a: Expr, b: Expr) -> Expr:
        a, b = _unify(a, b)
        if a is node.a and b is node.b:
            return node
        return type(node)(a, b)
