"""The simplifier's `Rule` (a named rewrite of one node kind) and the small predicates every rule
family (`rules`, `rules_divmod`) reads a node with: integer / positive constant values, bool
immediates, index-typed operands.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from dataclasses import dataclass

from cinn_py.ir import BinaryOp, Expr, IntImm, UIntImm, bool_
from cinn_py.symbolic.analyzer import Analyzer
from cinn_py.symbolic.poly import is_index_dtype


@dataclass(frozen=True)
class Rule:
    """A named rewrite of one node kind."""

    name: str
    kinds: tuple[type, ...]
    apply: Callable[[Any, Analyzer], Expr | None]
    """Takes a node of one of `kinds` (typed `Any`: a Callable cannot say "the kind matched")."""


def _int(e: Expr) -> int | None:
    return e.value if isinstance(e, IntImm) else None


def _pos_const(e: Expr) -> int | None:
    v = _int(e)
    return v if v is not None and v > 0 else None


def _bool(e: Expr) -> bool | None:
    if isinstance(e, UIntImm) and e.dtype.is_bool and e.dtype.lanes == 1:
        return bool(e.value)
    return None


def _true() -> Expr:
    return UIntImm(bool_, 1)


def _false() -> Expr:
    return UIntImm(bool_, 0)


def _index(node: BinaryOp) -> bool:
    return is_index_dtype(node.a.dtype) and node.a.dtype == node.b.dtype
