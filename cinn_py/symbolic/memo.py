"""A process-wide memo of `simplify(expr)` without ranges.

Why: the same index expressions are simplified over and over while one group compiles (every
dependence check of every schedule primitive re-derives its accesses; the LLVM emitter
simplifies each address of every unrolled copy), and each call used to build a fresh
`Analyzer` and rewrite from scratch: a third of the automatic scheduler's time.

Sound key: `simplify` without ranges depends on the expression and, for every Var in it, on the
metadata a Var's equality ignores (its bounds and flags, which `Analyzer._compute_interval` and
the bounds engine read), recursively through the bounds. The key holds the expression and
those facts in walk order. Expressions holding a FloatImm are not memoised (`0.0 == -0.0` and
NaN would make equal keys of values that simplify differently).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

from cinn_py.ir import Expr, FloatImm, Var, walk

MAX_ENTRIES = 50_000
"""Entries before the memo starts over (bounded memory; a compile's working set is far smaller)."""
_MEMO: dict[Hashable, Expr] = {}


def memo_key(expr: Expr) -> Hashable | None:
    """`expr` with the metadata of every Var it reaches, or None when it holds a float constant."""
    facts: list[Hashable] = []
    seen: set[int] = set()
    pending: list[Expr] = [expr]
    while pending:
        for node in walk(pending.pop()):
            if isinstance(node, FloatImm):
                return None
            if not isinstance(node, Var) or id(node) in seen:
                continue
            seen.add(id(node))
            facts.append((node.name, node.dtype, node.lower_bound, node.upper_bound, node.is_reduce_axis,
                          node.is_symbolic_constant))
            pending.extend(b for b in (node.lower_bound, node.upper_bound) if b is not None)
    return expr, tuple(facts)


def memoised(expr: Expr, compute: Callable[[Expr], Expr]) -> Expr:
    """`compute(expr)`, from the memo when an equal key was computed before."""
    key = memo_key(expr)
    if key is None:
        return compute(expr)
    try:
        hit = _MEMO.get(key)
    except TypeError:  # a node holding an unhashable attribute: not memoised
        return compute(expr)
    if hit is not None:
        return hit
    result = compute(expr)
    if len(_MEMO) >= MAX_ENTRIES:
        _MEMO.clear()
    _MEMO[key] = result
    return result
