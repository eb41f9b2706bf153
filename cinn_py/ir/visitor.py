"""The one traversal framework: `Visitor` (read-only), `Mutator` (copy-on-write), `walk`.

Dispatch is by node class: `visit_add`, `visit_for`, `visit_schedule_block_realize`, ...
(`snake_case` of the class name), falling back to `generic_visit`, which recurses into the
node's dataclass fields. Binding positions (`For.loop_var`, `ScheduleBlock.iter_vars`,
`Let.symbol`, `Reduce.reduce_axis`) are not visited as uses: a substitution must not turn a
loop variable into an expression. Tensors and buffers are leaves unless a subclass overrides
`visit_tensor`.

`Mutator` returns the *same* object when no child changed, and rebuilds with
`dataclasses.replace` otherwise, which keeps statement uids (schedule handles) stable.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import types
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from cinn_py.ir.buffer import Buffer, BufferRange, Tensor
from cinn_py.ir.expr import Expr, Var
from cinn_py.ir.func import Argument, LoweredFunc, Module
from cinn_py.ir.stmt import Stmt

Node = Expr | Stmt | LoweredFunc | Module

# Fields that bind names rather than use them; visitors skip them by default.
BINDER_FIELDS = frozenset({"loop_var", "iter_vars", "symbol", "reduce_axis"})
_SKIP_FIELDS = BINDER_FIELDS | {"uid", "dtype", "name", "for_type", "bind_offset", "vectorize_factor",
                                "reduce_method", "attrs", "call_type", "reduce_type", "lanes", "op_symbol"}
_snake_cache: dict[type, str] = {}


def snake_name(cls: type) -> str:
    """`ScheduleBlockRealize` -> `schedule_block_realize`, `EQ` -> `eq`, `IntImm` -> `int_imm`."""
    if (cached := _snake_cache.get(cls)) is not None:
        return cached
    name = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", cls.__name__).lower()
    _snake_cache[cls] = name
    return name


_child_names_cache: dict[type, tuple[str, ...]] = {}


def child_field_names(cls: type) -> tuple[str, ...]:
    """The child-bearing field names of a node class, in declaration order (a class's fields
    never change, so they are computed once per class: `dataclasses.fields` per node visited
    was a tenth of a group's compile time)."""
    if (cached := _child_names_cache.get(cls)) is not None:
        return cached
    names = tuple(f.name for f in dataclasses.fields(cls) if f.name not in _SKIP_FIELDS)
    _child_names_cache[cls] = names
    return names


def child_fields(node: object) -> Iterator[tuple[str, Any]]:
    """(field name, value) of every child-bearing field of a node, in declaration order."""
    for name in child_field_names(type(node)):
        yield name, getattr(node, name)


def child_nodes(node: object) -> list[Expr | Stmt]:
    """The expression and statement children of a node, in field order (tuples flattened one
    level; binders, tensors, buffers and attributes left out): for walkers that recurse by hand."""
    out: list[Expr | Stmt] = []
    for _, value in child_fields(node):
        for item in value if isinstance(value, tuple) else (value,):
            if isinstance(item, (Expr, Stmt)):
                out.append(item)
    return out


_NO_METHOD = object()
_LOOK_UP = object()
_dispatch_cache: dict[tuple[type, type], Any] = {}


def _visit_method(visitor: object, node: Any) -> Callable[[Any], Any] | None:
    """`visitor.visit_<node>` bound, or None. The lookup in the visitor's class is cached per
    (visitor class, node class): a `getattr` with a default that misses raises and catches an
    AttributeError inside, once per node visited, which was a large part of every traversal.
    Anything but a plain function in the class (a static or class method) is looked up on the
    instance each time; visitors do not get `visit_` methods per instance."""
    key = (type(visitor), type(node))
    fn = _dispatch_cache.get(key, _NO_METHOD)
    if fn is _NO_METHOD:
        attr = inspect.getattr_static(type(visitor), "visit_" + snake_name(type(node)), None)
        fn = attr if attr is None or isinstance(attr, types.FunctionType) else _LOOK_UP
        _dispatch_cache[key] = fn
    if fn is None:
        return None
    if fn is _LOOK_UP:
        return getattr(visitor, "visit_" + snake_name(type(node)), None)  # type: ignore[no-any-return]
    return fn.__get__(visitor)  # type: ignore[no-any-return]


class Visitor:
    """Read-only traversal; override `visit_<node>` methods, call `generic_visit` to recurse."""

    def visit(self, node: Any) -> Any:
        method = _visit_method(self, node)
        if method is not None:
            return method(node)
        return self.generic_visit(node)

    def generic_visit(self, node: Any) -> None:
        if isinstance(node, (Tensor, Buffer, str, int, float, bool)) or node is None:
            return
        if isinstance(node, tuple):
            for item in node:
                self.visit(item)
            return
        if isinstance(node, Var):
            return
        for _, value in child_fields(node):
            self.visit_value(value)

    def visit_value(self, value: Any) -> None:
        if isinstance(value, tuple):
            for item in value:
                self.visit_value(item)
        elif isinstance(value, (Expr, Stmt, LoweredFunc, Module, BufferRange)):
            self.visit(value)


class Mutator:
    """Copy-on-write rewriting; override `visit_<node>` and return a replacement node."""

    def visit(self, node: Any) -> Any:
        method = _visit_method(self, node)
        if method is not None:
            return method(node)
        return self.generic_visit(node)

    def visit_tensor(self, tensor: Tensor) -> Tensor:
        return tensor

    def generic_visit(self, node: Any) -> Any:
        if isinstance(node, (Var, Buffer, str, int, float, bool)) or node is None:
            return node
        changes: dict[str, Any] = {}
        for name, value in child_fields(node):
            new_value = self.visit_value(value)
            if new_value is not value:
                changes[name] = new_value
        return dataclasses.replace(node, **changes) if changes else node

    def visit_value(self, value: Any) -> Any:
        if isinstance(value, tuple):
            items = tuple(self.visit_value(v) for v in value)
            return value if all(a is b for a, b in zip(items, value)) else items
        if isinstance(value, Tensor):
            return self.visit_tensor(value)
        if isinstance(value, (Expr, Stmt, LoweredFunc, Module, BufferRange)):
            return self.visit(value)
        return value


_WALKED = (tuple, Expr, Stmt, LoweredFunc, Module, BufferRange, Argument)


def walk(node: Any) -> Iterator[Any]:
    """Every Expr and Stmt under `node` (inclusive), pre-order, binder fields excluded."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, tuple):
            stack.extend(reversed(current))
            continue
        if isinstance(current, (Expr, Stmt)):
            yield current
        if isinstance(current, (Var, Tensor, Buffer)) or not dataclasses.is_dataclass(current):
            continue
        children = [v for v in (getattr(current, name) for name in reversed(child_field_names(type(current))))
                    if isinstance(v, _WALKED)]
        stack.extend(children)


def names_in(*nodes: Any, loop_vars: bool = True) -> set[str]:
    """Every name `nodes` use: vars (binders included: loop vars, iter vars, let vars), block
    names, tensor and buffer names (what a name generator must not hand out again).

    `loop_vars=False` leaves out names used only by spatial loop vars: lowering names them
    `i j k` without the generator (reduce axes come from it), and primitives that replace a loop
    reuse its name for the first new loop (`split` of `i` gives `i`, `i_0`), as in CINN."""
    names: set[str] = set()
    loops: set[str] = set()
    var_uses: set[str] = set()

    def note(value: Any, into: set[str]) -> None:
        if isinstance(value, tuple):
            for item in value:
                note(item, into)
        elif isinstance(value, (Var, Tensor, Buffer)):
            into.add(value.name)
            if isinstance(value, Tensor):
                into.add(value.buffer.name)

    for node in walk(nodes):
        if isinstance(node, Var):
            var_uses.add(node.name)
            continue
        for f in dataclasses.fields(node):
            value = getattr(node, f.name)
            if f.name == "loop_var" and not value.is_reduce_axis:
                note(value, loops)
            elif f.name in BINDER_FIELDS or isinstance(value, (Tensor, Buffer)):
                note(value, names)
            elif f.name == "name" and isinstance(value, str):
                names.add(value)
    for func in nodes:
        if isinstance(func, LoweredFunc):
            names.add(func.name)
            note(tuple(a.tensor if a.tensor is not None else a.var for a in func.args), names)
            note(func.temp_bufs, names)
    if loop_vars:
        return names | loops | var_uses
    return names | (var_uses - loops)


class _Substituter(Mutator):
    def __init__(self, mapping: Mapping[Var, Expr]) -> None:
        self.mapping = mapping

    def visit_var(self, var: Var) -> Expr:
        return self.mapping.get(var, var)


def substitute(node: Any, mapping: Mapping[Var, Expr]) -> Any:
    """Replace uses of Vars (by name and dtype) with expressions; binders are left alone."""
    if not mapping:
        return node
    return _Substituter(mapping).visit(node)


class _Replacer(Mutator):
    def __init__(self, old: Stmt, new: Stmt) -> None:
        self.old, self.new = old, new
        self.in_exprs = isinstance(old, Expr)

    def visit(self, node: Any) -> Any:
        if node is self.old:
            return self.new
        if isinstance(node, Expr) and not self.in_exprs:
            # no expression holds a statement: nothing to replace below one (descending into
            # every index expression was most of a replacement's cost)
            return node
        return super().visit(node)


def replace_stmt(root: Any, old: Stmt, new: Stmt) -> Any:
    """Path-copy `root` with the statement object `old` (by identity) replaced by `new`."""
    return _Replacer(old, new).visit(root)
