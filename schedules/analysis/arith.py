"""Index arithmetic for primitives: the one place that simplifies and proves.

Primitives build index expressions (`outer * 16 + inner`, `fused / 32`) and must decide facts
such as "the factors' product equals the extent". Both go through this module, which delegates
to `cinn_py.symbolic` (the IR's rule-based simplifier and prover; imported on first use).
"""

from __future__ import annotations

from typing import Any

from cinn_py.ir import Expr, const
from cinn_py.symbolic.integer import as_int

__all__ = ["simplify_index", "prove_equal", "as_int", "product"]


def simplify_index(e: Expr) -> Expr:
    """Simplify an integer index expression (`cinn_py.symbolic.simplify`)."""
    from cinn_py.symbolic import simplify  # noqa: PLC0415

    return simplify(e)


def prove_equal(a: Expr, b: Expr) -> bool:
    """True only when `a == b` holds for every value of the variables."""
    if a == b:
        return True
    from cinn_py.symbolic import prove_eq  # noqa: PLC0415

    return bool(prove_eq(a, b))


def product(values: list[Expr], dtype: Any) -> Expr:
    """The simplified product of `values` (1 when empty)."""
    out: Expr = const(1, dtype)
    for v in values:
        out = simplify_index(out * v)
    return out
