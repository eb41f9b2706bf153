"""Value equality and hashing of expression trees at any depth (`Expr.__eq__`/`__hash__`).

Expressions compare by value (`Add(i, 1) == Add(i, 1)`) with the methods `dataclass` generates,
which recurse once per tree level: a 1,000-deep chain of elementwise ops inlined into one
expression would hit Python's recursion limit. `install_depth_guards` wraps each class's
generated `__eq__`/`__hash__`: the first FAST_DEPTH nested levels run the generated code (as fast
as before), deeper subtrees are finished by explicit-stack walks that give the same answers
(the hash is bit-for-bit the generated one: child hashes enter the field tuple through `_Hashed`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

FAST_DEPTH = 64
"""Nested generated `__eq__`/`__hash__` calls before the iterative walk takes over."""

MAX_EXPR_DEPTH = 64
"""How deep the compiler lets one expression grow: `compute()` splits a deeper body into
temporaries and `compute_inline` keeps a producer whose inlining would exceed it. Every pass
(visitors, printers, simplifier, codegen) recurses once or a few times per level, so this bound
keeps them far inside Python's recursion limit whatever the program's size (a 1,000-deep
elementwise chain becomes ~16 blocks of depth <= 64 under schedule="auto")."""

_COMPARED: dict[type, tuple[str, ...]] = {}
_GUARDED: set[type] = set()
_depth = 0  # nesting of guarded calls (the compiler is single-threaded per call; see module doc)


_KNOWN: dict[type, bool] = {}


def _guarded(cls: type) -> bool:
    """Whether `cls` (or a base, e.g. BinaryOp for Add) has guarded methods."""
    known = _KNOWN.get(cls)
    if known is None:
        known = any(base in _GUARDED for base in cls.__mro__)
        _KNOWN[cls] = known
    return known


def compared_fields(cls: type) -> tuple[str, ...]:
    """Names of the dataclass fields of `cls` that take part in equality (cached per class)."""
    names = _COMPARED.get(cls)
    if names is None:
        names = tuple(f.name for f in dataclasses.fields(cls) if f.compare)
        _COMPARED[cls] = names
    return names


def install_depth_guards(classes: list[type]) -> None:
    """Wrap the `__eq__`/`__hash__` that `dataclass` generated for each of `classes` (hand-written
    ones, such as FloatImm's, are leaves and stay as they are)."""
    for cls in classes:
        eq, hsh = cls.__dict__.get("__eq__"), cls.__dict__.get("__hash__")
        if eq is None or hsh is None or getattr(eq, "__module__", None) == __name__:
            raise TypeError(f"install_depth_guards: {cls.__name__} has no generated __eq__/__hash__ to wrap")
        cls.__eq__ = _guarded_eq(eq)  # type: ignore[method-assign]
        cls.__hash__ = _guarded_hash(hsh)  # type: ignore[method-assign]
        _GUARDED.add(cls)
    _KNOWN.clear()


def _guarded_eq(generated: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def __eq__(self: Any, other: Any) -> Any:  # noqa: N807
        global _depth
        if _depth >= FAST_DEPTH:
            return expr_equal_iterative(self, other)
        _depth += 1
        try:
            return generated(self, other)
        finally:
            _depth -= 1
    return __eq__


def _guarded_hash(generated: Callable[[Any], int]) -> Callable[[Any], int]:
    def __hash__(self: Any) -> int:  # noqa: N807
        global _depth
        if _depth >= FAST_DEPTH:
            return expr_hash_iterative(self)
        _depth += 1
        try:
            return generated(self)
        finally:
            _depth -= 1
    return __hash__


def expr_equal_iterative(a: Any, b: Any) -> bool:
    """`a == b` with an explicit stack (guarded classes field by field, others by their `==`)."""
    stack: list[tuple[Any, Any]] = [(a, b)]
    while stack:
        x, y = stack.pop()
        if x is y:
            continue
        cls = x.__class__
        if cls is not y.__class__:
            return False
        if cls is tuple:
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y))
        elif _guarded(cls):
            stack.extend((getattr(x, n), getattr(y, n)) for n in compared_fields(cls))
        elif not x == y:
            return False
    return True


class _Hashed:
    """Stands for a node whose hash is known, inside the field tuple of its parent."""

    __slots__ = ("value",)

    def __init__(self, value: int) -> None:
        self.value = value

    def __hash__(self) -> int:
        return self.value


def expr_hash_iterative(e: Any) -> int:
    """The generated `hash((field, ...))` of `e`, computed children first with an explicit stack."""
    done: dict[int, int] = {}
    stack: list[tuple[Any, bool]] = [(e, False)]
    while stack:
        node, expanded = stack.pop()
        if id(node) in done:
            continue
        values = [getattr(node, n) for n in compared_fields(node.__class__)]
        children = [v for v in _flat(values) if _guarded(v.__class__) and id(v) not in done]
        if children and not expanded:
            stack.append((node, True))
            stack.extend((c, False) for c in children)
            continue
        done[id(node)] = hash(tuple(_stand_in(v, done) for v in values))
    return done[id(e)]


def _flat(values: list[Any]) -> list[Any]:
    out: list[Any] = []
    for v in values:
        if v.__class__ is tuple:
            out.extend(v)
        else:
            out.append(v)
    return out


def _stand_in(value: Any, done: dict[int, int]) -> Any:
    if value.__class__ is tuple:
        return tuple(_stand_in(v, done) for v in value)
    if _guarded(value.__class__):
        return _Hashed(done[id(value)])
    return value


def expr_depth(e: Any) -> int:
    """Levels of the expression tree under `e` (a leaf is 1; tuples such as Load indices add
    none), computed with an explicit stack."""
    from cinn_py.ir.expr import Expr  # noqa: PLC0415 - expr imports this module

    deepest = 0
    stack: list[tuple[Any, int]] = [(e, 1)]
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        for name in compared_fields(type(node)) if dataclasses.is_dataclass(node) else ():
            value = getattr(node, name)
            items = value if value.__class__ is tuple else (value,)
            stack.extend((v, level + 1) for v in items if isinstance(v, Expr))
    return deepest
