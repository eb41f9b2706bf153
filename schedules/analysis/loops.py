"""Structural queries on a lowered function that every primitive shares.

Everything here is read-only and works on the *current* tree: finding blocks by name, the
parent of a statement, the loops enclosing a block (outer -> inner), the statement that owns a
uid (what schedule handles resolve through), perfectly nested loop chains, the Store of a block.

`StmtIndex` walks a tree once and answers parent / uid / path queries in O(1); primitives build
one per call (trees are small and immutable, so there is nothing to invalidate).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from cinn_py.ir import (
    Block, For, IfThenElse, Load, LoweredFunc, ScheduleBlock, ScheduleBlockRealize, Stmt, Store, Tensor, Var,
    walk,
)

__all__ = [
    "StmtIndex", "index_of", "root_block", "root_body", "all_blocks", "find_block", "find_block_or_none",
    "block_names", "enclosing_loops", "child_blocks", "is_root_block", "block_stores", "first_store",
    "loop_chain_below", "is_ancestor", "loops_between", "const_extent", "vars_in", "loads_of",
    "stores_to", "blocks_writing", "blocks_reading", "tensors_written", "tensors_read",
    "collect_stmts", "stmt_children", "single_child",
]


# --------------------------------------------------------------------------------------------
# Children of statements (the statement tree only; expressions are leaves here)
# --------------------------------------------------------------------------------------------
def stmt_children(node: Any) -> tuple[Stmt, ...]:
    """Direct statement children of `node`, in order (a LoweredFunc's body included)."""
    if isinstance(node, LoweredFunc):
        return (node.body,)
    if isinstance(node, Block):
        return node.stmts
    if isinstance(node, For):
        return (node.body,)
    if isinstance(node, IfThenElse):
        return (node.true_case,) if node.false_case is None else (node.true_case, node.false_case)
    if isinstance(node, ScheduleBlockRealize):
        return (node.schedule_block,)
    if isinstance(node, ScheduleBlock):
        return (node.body,)
    return ()


@dataclass
class StmtIndex:
    """Parent links and uid lookup for every statement under `root` (one walk)."""

    root: Any
    parent: dict[int, Any] = field(default_factory=dict)
    """id(stmt) -> the statement (or LoweredFunc) that directly contains it."""
    by_uid: dict[int, Stmt] = field(default_factory=dict)
    order: list[Stmt] = field(default_factory=list)
    """Every statement in pre-order."""

    def __post_init__(self) -> None:
        stack: list[tuple[Any, Any]] = [(self.root, None)]
        while stack:
            node, parent = stack.pop()
            if isinstance(node, Stmt):
                self.order.append(node)
                self.by_uid.setdefault(node.uid, node)
                if parent is not None:
                    self.parent[id(node)] = parent
            for child in reversed(stmt_children(node)):
                stack.append((child, node))

    def parent_of(self, node: Stmt) -> Any | None:
        return self.parent.get(id(node))

    def contains(self, node: Stmt) -> bool:
        """True when this exact object is in the tree."""
        found = self.by_uid.get(node.uid)
        return found is node

    def ancestors(self, node: Stmt) -> list[Any]:
        """Statements from the outermost down to the direct parent of `node`."""
        chain: list[Any] = []
        current = self.parent.get(id(node))
        while current is not None:
            chain.append(current)
            current = self.parent.get(id(current)) if isinstance(current, Stmt) else None
        chain.reverse()
        return chain

    def enclosing_loops(self, node: Stmt) -> list[For]:
        """The For loops around `node`, outer -> inner (not including `node` itself)."""
        return [a for a in self.ancestors(node) if isinstance(a, For)]

    def enclosing_realize(self, node: Stmt) -> ScheduleBlockRealize | None:
        """The innermost ScheduleBlockRealize strictly containing `node` (the root for top loops)."""
        for a in reversed(self.ancestors(node)):
            if isinstance(a, ScheduleBlockRealize):
                return a
        return None


_RECENT_INDICES: dict[int, StmtIndex] = {}
RECENT_INDICES = 16
"""Roots whose index is kept (a primitive indexes the same function several times, and the
next primitive the function the previous one returned)."""


def index_of(root: Any) -> StmtIndex:
    """`StmtIndex(root)`, shared with the last callers that indexed this very object.

    Sound because the IR is immutable (frozen dataclasses): an index describes its root for as
    long as the root lives, and the cache holds the root (through the index), so its id cannot
    be reused while the entry exists. Callers must not mutate the index."""
    hit = _RECENT_INDICES.get(id(root))
    if hit is not None and hit.root is root:
        return hit
    index = StmtIndex(root)
    if len(_RECENT_INDICES) >= RECENT_INDICES:
        del _RECENT_INDICES[next(iter(_RECENT_INDICES))]
    _RECENT_INDICES[id(root)] = index
    return index


# --------------------------------------------------------------------------------------------
# Root block and block lookup
# --------------------------------------------------------------------------------------------
def is_root_block(node: Stmt) -> bool:
    """The root ScheduleBlockRealize has no iter values (CINN names it `root`, sometimes suffixed)."""
    return isinstance(node, ScheduleBlockRealize) and not node.iter_values and \
        node.schedule_block.name.startswith("root")


def root_block(func: LoweredFunc) -> ScheduleBlockRealize:
    """The root realize of a lowered function (`body = Block((root,))`)."""
    body = func.body
    candidates = body.stmts if isinstance(body, Block) else (body,)
    for stmt in candidates:
        if isinstance(stmt, ScheduleBlockRealize) and not stmt.iter_values:
            return stmt
    raise ValueError(f"function '{func.name}' has no root ScheduleBlock")


def root_body(func: LoweredFunc) -> Stmt:
    """The statement under the root block (a single loop nest or a Block of several)."""
    return root_block(func).schedule_block.body


def all_blocks(node: Any) -> list[ScheduleBlockRealize]:
    """Every non-root block in pre-order; does not descend into a collected block
    (CINN `FindBlocksVisitor` / `GetAllBlocks`)."""
    out: list[ScheduleBlockRealize] = []
    stack: list[Any] = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, ScheduleBlockRealize) and current.iter_values:
            out.append(current)
            continue
        stack.extend(reversed(stmt_children(current)))
    return out


def child_blocks(node: Stmt) -> list[ScheduleBlockRealize]:
    """Blocks nested inside `node` (not `node` itself), pre-order, not descending into them."""
    out: list[ScheduleBlockRealize] = []
    for child in stmt_children(node):
        out.extend(all_blocks(child))
    return out


def _every_block(node: Any) -> Iterator[ScheduleBlockRealize]:
    stack: list[Any] = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, ScheduleBlockRealize) and current.iter_values:
            yield current
        stack.extend(reversed(stmt_children(current)))


def block_names(node: Any) -> list[str]:
    """Names of every non-root block under `node`, nested ones included, pre-order."""
    return [b.name for b in _every_block(node)]


def find_block_or_none(node: Any, name: str) -> ScheduleBlockRealize | None:
    """The unique block called `name`, or None when there is none. Raises ValueError on duplicates."""
    found = [b for b in _every_block(node) if b.name == name]
    if len(found) > 1:
        raise ValueError(f"{len(found)} blocks are named '{name}'; block names must be unique")
    return found[0] if found else None


def find_block(node: Any, name: str) -> ScheduleBlockRealize:
    """The unique block called `name`; `KeyError` with the known names when absent."""
    block = find_block_or_none(node, name)
    if block is None:
        raise KeyError(f"no block named '{name}' (blocks: {', '.join(block_names(node)) or 'none'})")
    return block


def enclosing_loops(root: Any, node: Stmt) -> list[For]:
    """Loops enclosing `node` in `root`, outer -> inner."""
    return index_of(root).enclosing_loops(node)


def is_ancestor(ancestor: Stmt, node: Stmt) -> bool:
    """True when `node` is (by identity) strictly inside `ancestor`."""
    stack: list[Any] = list(stmt_children(ancestor))
    while stack:
        current = stack.pop()
        if current is node:
            return True
        stack.extend(stmt_children(current))
    return False


def collect_stmts(node: Any, kind: type | tuple[type, ...]) -> list[Any]:
    """Every statement of `kind` under `node` (inclusive), pre-order."""
    out: list[Any] = []
    stack: list[Any] = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, kind):
            out.append(current)
        stack.extend(reversed(stmt_children(current)))
    return out


# --------------------------------------------------------------------------------------------
# Loop chains
# --------------------------------------------------------------------------------------------
def single_child(loop: For) -> Stmt | None:
    """The only statement of a loop body, or None when the body has 0 or several statements."""
    stmts = loop.body.stmts
    return stmts[0] if len(stmts) == 1 else None


def loop_chain_below(loop: For) -> list[For]:
    """`loop` and the loops perfectly nested under it (each body a Block of exactly one For)."""
    chain = [loop]
    while isinstance(inner := single_child(chain[-1]), For):
        chain.append(inner)
    return chain


def loops_between(index: StmtIndex, outer: For, inner: For) -> list[For] | None:
    """Loops from `outer` down to `inner` (both included) when `inner` is inside `outer`, else None."""
    loops = index.enclosing_loops(inner) + [inner]
    for k, loop in enumerate(loops):
        if loop is outer:
            return loops[k:]
    return None


def const_extent(loop: For) -> int | None:
    """The loop's extent as a Python int when it is an integer immediate."""
    from cinn_py.ir import is_const_int

    if is_const_int(loop.extent):
        return int(loop.extent.value)  # type: ignore[attr-defined]
    return None


# --------------------------------------------------------------------------------------------
# Accesses
# --------------------------------------------------------------------------------------------
def block_stores(block: ScheduleBlockRealize) -> list[Store]:
    """Stores in a block's body (not inside nested blocks), pre-order."""
    out: list[Store] = []
    stack: list[Any] = [block.schedule_block.body]
    while stack:
        current = stack.pop()
        if isinstance(current, Store):
            out.append(current)
        elif not isinstance(current, ScheduleBlockRealize):
            stack.extend(reversed(stmt_children(current)))
    return out


def first_store(block: ScheduleBlockRealize) -> Store | None:
    """The first Store of a block (CINN uses the first one it finds)."""
    stores = block_stores(block)
    return stores[0] if stores else None


def vars_in(node: Any) -> set[Var]:
    """Every Var used (not bound) in an expression or statement."""
    return {n for n in walk(node) if isinstance(n, Var)}


def loads_of(node: Any, tensor_name: str | None = None) -> list[Load]:
    """Loads in `node` (of tensor `tensor_name` when given), pre-order."""
    return ([n for n in walk(node) if isinstance(n, Load)
             and (tensor_name is None or n.tensor.name == tensor_name)])


def stores_to(node: Any, tensor_name: str | None = None) -> list[Store]:
    """Stores in `node` (to tensor `tensor_name` when given), pre-order."""
    return ([n for n in walk(node) if isinstance(n, Store)
             and (tensor_name is None or n.tensor.name == tensor_name)])


def tensors_written(node: Any) -> dict[str, Tensor]:
    """Tensors stored to under `node`, by name."""
    return {s.tensor.name: s.tensor for s in stores_to(node)}


def tensors_read(node: Any) -> dict[str, Tensor]:
    """Tensors loaded under `node`, by name."""
    return {ld.tensor.name: ld.tensor for ld in loads_of(node)}


def blocks_writing(root: Any, buffer_name: str) -> list[ScheduleBlockRealize]:
    """Blocks (innermost) whose body stores into buffer `buffer_name`."""
    return [b for b in _every_block(root)
            if any(s.tensor.buffer.name == buffer_name for s in block_stores(b))]


def blocks_reading(root: Any, buffer_name: str) -> list[ScheduleBlockRealize]:
    """Blocks (innermost) whose body loads from buffer `buffer_name`."""
    out = []
    for b in _every_block(root):
        body = b.schedule_block.body
        if any(ld.tensor.buffer.name == buffer_name for ld in loads_of(body)):
            out.append(b)
    return out
