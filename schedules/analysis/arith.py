"""Index arithmetic for primitives: the one place that simplifies and proves.

Primitives build index expressions (`outer * 16 + inner`, `fused / 32`) and must decide facts
such as "the factors' product equals the extent". Both go through this module so that the
implementation can follow `cinn_py.symbolic` (the IR's simplifier and sympy-based prover) the
moment it is available, without touching any primitive. Until then `simplify_index` only folds
constants and the identities `x * 1`, `x + 0`, `x / 1`, `x % 1`, and `prove_equal` falls back to
an exact sympy check of polynomial expressions (never guessing: unknown is False).
"""

from __future__ import annotations

from typing import Any

from cinn_py.ir import Add, Div, Expr, IntImm, Mod, Mul, Sub, Var, const, is_const_int

__all__ = ["simplify_index", "prove_equal", "as_int", "product"]


def _symbolic() -> Any | None:
    try:
        import cinn_py.symbolic as symbolic  # noqa: PLC0415
    except ImportError:
        return None
    return symbolic if hasattr(symbolic, "simplify") else None


def as_int(e: Expr | int) -> int | None:
    """The Python int of an integer immediate (or int), else None."""
    if isinstance(e, int):
        return e
    return int(e.value) if is_const_int(e) else None  # type: ignore[attr-defined]


def _fold(e: Expr) -> Expr:
    if not isinstance(e, (Add, Sub, Mul, Div, Mod)):
        return e
    a, b = _fold(e.a), _fold(e.b)
    ia, ib = as_int(a), as_int(b)
    if ia is not None and ib is not None:
        value = {Add: lambda: ia + ib, Sub: lambda: ia - ib, Mul: lambda: ia * ib,
                 Div: lambda: int(ia / ib) if ib else None,
                 Mod: lambda: ia - int(ia / ib) * ib if ib else None}[type(e)]()
        if value is not None:
            return const(value, a.dtype)
    if isinstance(e, Mul):
        if ia == 1:
            return b
        if ib == 1:
            return a
        if ia == 0 or ib == 0:
            return const(0, a.dtype)
    if isinstance(e, Add):
        if ia == 0:
            return b
        if ib == 0:
            return a
    if isinstance(e, Sub) and ib == 0:
        return a
    if isinstance(e, Div) and ib == 1:
        return a
    if isinstance(e, Mod) and ib == 1:
        return const(0, a.dtype)
    return e if a is e.a and b is e.b else type(e)(a, b)


def simplify_index(e: Expr) -> Expr:
    """Simplify an index expression (switches to `cinn_py.symbolic.simplify` when present)."""
    symbolic = _symbolic()
    if symbolic is not None:
        return symbolic.simplify(e)
    return _fold(e)


def _to_sympy(e: Expr) -> Any:
    import sympy  # noqa: PLC0415

    if isinstance(e, IntImm):
        return sympy.Integer(e.value)
    if isinstance(e, Var):
        return sympy.Symbol(e.name, integer=True)
    if isinstance(e, (Add, Sub, Mul)):
        a, b = _to_sympy(e.a), _to_sympy(e.b)
        return a + b if isinstance(e, Add) else a - b if isinstance(e, Sub) else a * b
    raise TypeError(type(e).__name__)


def prove_equal(a: Expr, b: Expr) -> bool:
    """True only when `a == b` holds for every value of the variables."""
    if a == b:
        return True
    symbolic = _symbolic()
    if symbolic is not None and hasattr(symbolic, "prove_eq"):
        return bool(symbolic.prove_eq(a, b))
    try:
        import sympy  # noqa: PLC0415

        return sympy.expand(_to_sympy(a) - _to_sympy(b)) == 0
    except TypeError:
        return False


def product(values: list[Expr], dtype: Any) -> Expr:
    """The simplified product of `values` (1 when empty)."""
    out: Expr = const(1, dtype)
    for v in values:
        out = simplify_index(out * v)
    return out
