"""Sound re-indexing of GPU shared/local buffers: which bound or loop variables an index may drop.

A `local` buffer exists once per thread and a `shared` buffer once per block, so the thread and
block variables (local) or the block variables (shared) can be removed from their indices. Doing
that by *substituting 0* for those variables (the older rule, and CINN's `UpdateBufferAxisPass`
idea of dropping axes bound to the storage's scope) is only sound when the index is additively
separable: `index = f(other vars) + g(removed vars)`. Then, within one thread / block, `g` is a
constant and dropping it is a bijective shift. For `(threadIdx.x + i) / 2` it is not: thread 1
reads elements 0, 1, 1, 2 for i = 0..3, the zeroed index `i / 2` gives 0, 0, 1, 1 and merges two
distinct elements. So:

- `split_kinds(flat)` groups the monomials of the row-major flat index (`cinn_py.symbolic.Poly`)
  by the kind of variable they use (`thread`, `block`, `loop`, `const` for symbolic dims and
  constants); a monomial (or a non-polynomial atom such as `(threadIdx.x + i) / 2`) that mixes
  kinds makes the index non-separable;
- `drop_kinds(flat, kinds)` removes the monomials of those kinds, or returns None when the index
  is not separable in them (the caller then keeps the full buffer, which is always correct);
- `owned_by_one_thread(thread_part, block_dims)` proves that a thread-only index maps distinct
  threads of a block to distinct elements (mixed-radix strides), which is what per-iteration
  privatisation of a *shared* buffer needs: no thread ever reads an element another thread wrote,
  so dropping the loop variables cannot create cross-thread or cross-iteration races.

Indices are compared flattened (row-major over the buffer shape, `x / d, x % d` pairs folded back
to `x`), the form the CUDA printer emits, so a fused-then-split index such as the seed's
`C_rf[sp / S2, sp % S2, threadIdx.x]` is the linear `sp * 32 + threadIdx.x`.
"""

from __future__ import annotations

from cinn_py.ir import Add, Call, Div, Expr, IntImm, Load, Mod, Mul, Var, int32, walk
from cinn_py.symbolic.poly import Poly, to_poly

THREAD, BLOCK, LOOP, CONST = "thread", "block", "loop", "const"
AXES = ("x", "y", "z")
BOUND_VAR_PREFIXES = ("threadIdx.", "blockIdx.")


def is_bound_var(var: Var) -> bool:
    """True for the `threadIdx.*` / `blockIdx.*` variables bind lowering introduces."""
    return var.name.startswith(BOUND_VAR_PREFIXES)


def flat_index(indices: tuple[Expr, ...], shape: tuple[Expr, ...]) -> Expr:
    """Row-major offset of `indices` in `shape`; `(x / d, x % d)` over a dim `d` folds to `x`."""
    if not indices:
        return IntImm(int32, 0)
    acc = indices[0]
    for index, dim in zip(indices[1:], shape[1:]):
        if (isinstance(acc, Div) and isinstance(index, Mod) and acc.a == index.a
                and _same(acc.b, index.b) and _same(acc.b, dim)):
            acc = acc.a
            continue
        acc = Add(Mul(acc, _like(dim, acc)), _like(index, acc))
    return acc


def _same(a: Expr, b: Expr) -> bool:
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return a.value == b.value
    return a == b


def _like(e: Expr, ref: Expr) -> Expr:
    if isinstance(e, IntImm) and e.dtype != ref.dtype and ref.dtype.is_int:
        return IntImm(ref.dtype, e.value)
    return e


def var_kind(var: Var, symbols: set[str]) -> str:
    """`thread` / `block` for bound variables, `const` for symbolic dims, else `loop`."""
    if var.name.startswith("threadIdx."):
        return THREAD
    if var.name.startswith("blockIdx."):
        return BLOCK
    if var.name in symbols or var.is_symbolic_constant:
        return CONST
    return LOOP


def split_kinds(flat: Expr, symbols: set[str]) -> dict[str, Poly] | None:
    """The monomials of `flat` grouped by variable kind; None if one mixes kinds or reads memory."""
    if not flat.dtype.is_int:
        return None
    groups: dict[str, dict[tuple[Expr, ...], int]] = {}
    for mono, coef in to_poly(flat).terms.items():
        kinds: set[str] = set()
        for atom in mono:
            for node in walk(atom):
                if isinstance(node, (Load, Call)):
                    return None
                if isinstance(node, Var):
                    kinds.add(var_kind(node, symbols))
        kinds.discard(CONST)
        if len(kinds) > 1:
            return None
        groups.setdefault(kinds.pop() if kinds else CONST, {})[mono] = coef
    return {kind: Poly(terms) for kind, terms in groups.items()}


def drop_kinds(flat: Expr, kinds: frozenset[str], symbols: set[str]) -> tuple[Expr, Poly] | None:
    """`flat` without its monomials of `kinds` (and the dropped part), or None if not separable."""
    groups = split_kinds(flat, symbols)
    if groups is None:
        return None
    kept, dropped = Poly(), Poly()
    for kind, poly in groups.items():
        if kind in kinds:
            dropped = dropped + poly
        else:
            kept = kept + poly
    return kept.to_expr(flat.dtype), dropped


def owned_by_one_thread(thread_part: Poly, block_dims: tuple[int | None, ...]) -> bool:
    """Whether `sum(c_a * threadIdx.a)` is injective over the block: every axis with more than one
    thread appears once, linearly, with a constant stride larger than the span of the smaller ones."""
    strides: dict[int, int] = {}
    for mono, coef in thread_part.terms.items():
        if len(mono) != 1 or not isinstance(mono[0], Var) or not mono[0].name.startswith("threadIdx."):
            return False
        axis = "xyz".index(mono[0].name[-1])
        if axis in strides:
            return False
        strides[axis] = abs(coef)
    span = 0
    needed = [a for a, d in enumerate(block_dims) if d is None or d > 1]
    if any(block_dims[a] is None or a not in strides for a in needed):
        return False
    for axis in sorted(needed, key=lambda a: strides[a]):
        if strides[axis] <= span:
            return False
        span += strides[axis] * (block_dims[axis] - 1)  # type: ignore[operator]
    return True
