"""Accesses of GPU buffers in program order (with enclosing loops and branches) and constant
interval bounds of index expressions; shared by the GPU buffer passes (`gpu_buffers`, `gpu_sync`)
and the CUDA printer.
"""

from __future__ import annotations

from collections.abc import Iterable

from cinn_py.ir import Expr, For, IfThenElse, Load, Stmt, Store, Tensor, child_nodes, walk
from cinn_py.symbolic.access import Access
from cinn_py.symbolic.integer import IntInterval as Interval
from cinn_py.symbolic.integer import int_interval

# ---------------------------------------------------------------------------------------------
# Accesses in program order, with their enclosing loops and branches
# ---------------------------------------------------------------------------------------------
Context = tuple[object, ...]
"""Enclosing statements, outermost first: a `For`, or `(IfThenElse, branch)` (`Access.context`)."""


class ProgramOrderWalker:
    """Walks statements in execution order, keeping the enclosing loops and branches in `context`
    (a `For`, or `(IfThenElse, branch)`). Every Load reaches `on_load` in evaluation order: a
    loop's min and extent and a branch's condition before its body, a Store's value and indices
    before `on_store`. Other statements go to `other_stmt`."""

    def __init__(self) -> None:
        self.context: list[object] = []

    def stmt(self, node: Stmt) -> None:
        if isinstance(node, For):
            self.exprs(node.min, node.extent)
            self._nested(node, node.body)
        elif isinstance(node, IfThenElse):
            self.exprs(node.condition)
            self._nested((node, True), node.true_case)
            if node.false_case is not None:
                self._nested((node, False), node.false_case)
        elif isinstance(node, Store):
            self.exprs(node.value, *node.indices)
            self.on_store(node)
        else:
            self.other_stmt(node)

    def _nested(self, entry: object, body: Stmt) -> None:
        self.context.append(entry)
        self.stmt(body)
        self.context.pop()

    def exprs(self, *nodes: Expr) -> None:
        for node in nodes:
            for sub in walk(node):
                if isinstance(sub, Load):
                    self.on_load(sub)

    def on_load(self, load: Load) -> None:
        """A Load, after everything evaluated before it."""

    def on_store(self, store: Store) -> None:
        """A Store, after the loads of its value and indices."""

    def other_stmt(self, node: Stmt) -> None:
        """A statement other than For, IfThenElse and Store."""


class _AccessCollector(ProgramOrderWalker):
    """Accesses of the buffers named in `names`, in execution order within a statement (the loads
    of a Store's value and indices come before the Store itself)."""

    def __init__(self, names: Iterable[str]) -> None:
        super().__init__()
        self.accesses: dict[str, list[Access]] = {n: [] for n in names}

    def on_load(self, load: Load) -> None:
        self._record(load.tensor, load.indices, False)

    def on_store(self, store: Store) -> None:
        self._record(store.tensor, store.indices, True)

    def other_stmt(self, node: Stmt) -> None:
        for child in child_nodes(node):
            if isinstance(child, Stmt):
                self.stmt(child)
            else:
                self.exprs(child)

    def _record(self, tensor: Tensor, indices: tuple[Expr, ...], is_store: bool) -> None:
        found = self.accesses.get(tensor.buffer.name)
        if found is not None:
            found.append(Access(tensor, indices, is_store, context=tuple(self.context)))


def collect_accesses(root: Stmt, names: Iterable[str]) -> dict[str, list[Access]]:
    """Every access of the named buffers under `root`, in program order."""
    collector = _AccessCollector(names)
    collector.stmt(root)
    return collector.accesses


def interval(e: Expr, env: dict[str, Interval]) -> Interval | None:
    """Constant [lo, hi] of an integer index expression given variable ranges by name, or None."""
    return int_interval(e, lambda var: env.get(var.name))
