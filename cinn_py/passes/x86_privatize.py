"""`privatize_x86_buffers`: the x86 target pass giving each task of a `parallel` loop small
private copies of its `local`/`shared` buffers.

On x86 a buffer of `local` or `shared` memory type that a parallel loop's body uses is private to
each task of the outlined loop: the LLVM printer allocates one copy per task
(`codegen.llvm.parallel`) and, where the function uses it only inside parallel loops, none in the
function itself. Such a buffer keeps its full shape in the IR: after `compute_at` of a row stage
into a parallel row loop, the stage `E[i, j]` still indexes a `[rows, cols]` buffer with the
parallel loop var `i`, so at full size every task would allocate (and touch) the whole tensor.

`privatize_local_buffers` (one loop) is the x86 analogue of what `cinn_py.passes.gpu_bind` does for
per-thread buffers (CINN: `ResizeBufferToMaxVarRange`): inside the parallel body the parallel
loop var is replaced by 0 in every index of such a buffer, and each dim shrinks to the constant
range the body's loops actually reach. A row stage `E[i, j]` thus becomes a `[1, cols]` buffer
that stays in L1 (and small rfactor buffers become stack arrays that LLVM promotes to registers).
`privatize_x86_buffers` runs it on every parallel loop of a function, as the last of
`Target.x86().passes`, so the `target_passes` dump (`CINN_PY_DUMP_IR`, `cinn-py dump-ir`) shows it.

Why this is sound: a private buffer is only accessed inside the parallel body (its values never
flow between iterations, or the parallel loop would carry a dependence, which `parallel` rejects),
so every iteration reads what it wrote itself. Replacing the loop var by 0 keeps distinct
elements distinct *within one iteration* as long as the var only appears as an additive term
`c * i` of the index; any other use (`i * j`, `i / 4`, inside a call or a load) leaves that buffer
at its full size.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from cinn_py.ir import (
    Alloc, Buffer, Expr, For, ForType, Free, IntImm, Load, LoweredFunc, MemoryType, Mutator, Stmt, Store,
    Var, child_nodes, substitute, walk,
)
from cinn_py.passes.buffer_resize import BufferRebinder, resized_to_ranges
from cinn_py.symbolic import Analyzer, to_poly
from cinn_py.symbolic.integer import IntInterval


TASK_PRIVATE = (MemoryType.GPU_LOCAL, MemoryType.GPU_SHARED)
"""Memory types whose buffers each task of an x86 parallel loop allocates for itself."""


def privatize_x86_buffers(func: LoweredFunc) -> LoweredFunc:
    """`func` with the task-private buffers of every parallel loop collapsed over the loop var and
    shrunk (`privatize_local_buffers`); unchanged where nothing shrinks. Nested parallel loops are
    rejected before (`check_x86_loops`), so the top-most parallel loops are all there are."""
    args = {a.tensor.buffer.name for a in func.args if a.tensor is not None}
    body = _PrivatizeParallel(args).visit(func.body)
    if body is func.body:
        return func
    # a temp the body now uses in one (shrunk) shape only is declared in it, so the IR text (the
    # dumps, `parse_ir`) shows the size each task allocates
    used = _buffers_by_name(body)
    temps = tuple(used[b.name][0] if len(used.get(b.name, ())) == 1 else b for b in func.temp_bufs)
    return dataclasses.replace(func, body=body, temp_bufs=temps)


def _buffers_by_name(body: Stmt) -> dict[str, list[Buffer]]:
    """The distinct buffers each name stands for under `body`."""
    found: dict[str, list[Buffer]] = {}
    for node in walk(body):
        buffer = node.tensor.buffer if isinstance(node, (Load, Store)) else (
            node.buffer if isinstance(node, (Alloc, Free)) else None)
        if buffer is not None and buffer not in found.setdefault(buffer.name, []):
            found[buffer.name].append(buffer)
    return found


def task_private_buffers(body: Stmt, arg_buffers: set[str]) -> list[Buffer]:
    """The buffers of `body` (as its accesses spell them) that each parallel task owns a copy of:
    the non-argument ones of `local`/`shared` memory type, in first-use order."""
    return [buffers[0] for name, buffers in _buffers_by_name(body).items()
            if name not in arg_buffers and buffers[0].memory_type in TASK_PRIVATE]


class _PrivatizeParallel(Mutator):
    def __init__(self, arg_buffers: set[str]) -> None:
        self.arg_buffers = arg_buffers

    def visit_for(self, node: For) -> Any:
        if node.for_type is not ForType.PARALLEL:
            return self.generic_visit(node)
        body, _ = privatize_local_buffers(node, task_private_buffers(node.body, self.arg_buffers))
        return node if body is node.body else dataclasses.replace(node, body=body)


def privatize_local_buffers(loop: For, private: list[Buffer]) -> tuple[Stmt, list[Buffer]]:
    """`loop.body` with the private buffers collapsed over `loop.loop_var` and shrunk; returns
    the new body and the buffers to allocate per task (shrunk where that was possible)."""
    names = {b.name for b in private}
    if not names:
        return loop.body, private
    accesses = _accesses(loop.body, names)
    collapsible = {n for n in names if all(_additive(idx, loop.loop_var) for idx in accesses.get(n, []))}
    zero = IntImm(loop.loop_var.dtype, 0)
    body = _Collapse(collapsible, loop.loop_var, zero).visit(loop.body) if collapsible else loop.body
    ranges = _loop_ranges(body)
    new_accesses = _accesses(body, collapsible)
    resized: dict[str, Buffer] = {}
    for buf in private:
        if buf.name in collapsible:
            resized[buf.name] = _shrink(buf, new_accesses.get(buf.name, []), ranges)
    if any(resized[b.name] is not b for b in private if b.name in resized):
        body = BufferRebinder(resized).visit(body)
    return body, [resized.get(b.name, b) for b in private]


def _accesses(body: Stmt, names: set[str]) -> dict[str, list[tuple[Expr, ...]]]:
    """Index tuples of every load/store of the named buffers under `body`."""
    found: dict[str, list[tuple[Expr, ...]]] = {}
    for node in walk(body):
        if isinstance(node, (Load, Store)) and node.tensor.buffer.name in names:
            found.setdefault(node.tensor.buffer.name, []).append(tuple(node.indices))
    return found


def _additive(indices: tuple[Expr, ...], var: Var) -> bool:
    """Whether `var` occurs in `indices` only as a term `c * var` (c constant)."""
    for idx in indices:
        if not any(isinstance(n, Var) and n == var for n in walk(idx)):
            continue
        try:
            poly = to_poly(idx)
        except (TypeError, ValueError):
            return False
        for mono, _ in poly.non_const_terms():
            uses = [a for a in mono if any(isinstance(n, Var) and n == var for n in walk(a))]
            if uses and mono != (var,):
                return False
    return True


def _loop_ranges(body: Stmt) -> dict[Var, tuple[Expr, Expr]]:
    return {n.loop_var: (n.min, n.extent) for n in walk(body) if isinstance(n, For)}


def _shrink(buf: Buffer, accesses: list[tuple[Expr, ...]], ranges: dict[Var, tuple[Expr, Expr]]) -> Buffer:
    """`buf` with each dim cut to the constant index range the accesses reach (when known)."""
    if not accesses or any(len(a) != len(buf.shape) for a in accesses):
        return buf
    analyzer = Analyzer(ranges)  # type: ignore[arg-type]
    return resized_to_ranges(buf, [_axis_range(analyzer, [idx[axis] for idx in accesses])
                                   for axis in range(len(buf.shape))])


def _axis_range(analyzer: Analyzer, indices: list[Expr]) -> IntInterval | None:
    """The constant `(lo, hi)` all of `indices` stay within; None when one is unbounded."""
    lo, hi = 0, -1
    for index in indices:
        bounds = analyzer.const_bounds(index)
        if bounds is None or bounds[0] is None or bounds[1] is None:
            return None
        lo, hi = min(lo, int(bounds[0])), max(hi, int(bounds[1]))
    return lo, hi


class _Collapse(Mutator):
    """Replace `var` by 0 in the indices of loads/stores of the named buffers."""

    def __init__(self, names: set[str], var: Var, zero: Expr) -> None:
        self.names, self.var, self.zero = names, var, zero

    def _indices(self, indices: tuple[Expr, ...]) -> tuple[Expr, ...]:
        return tuple(substitute(i, {self.var: self.zero}) for i in indices)

    def visit_load(self, node: Load) -> Any:
        node = self.generic_visit(node)
        if node.tensor.buffer.name in self.names:
            return dataclasses.replace(node, indices=self._indices(node.indices))
        return node

    def visit_store(self, node: Store) -> Any:
        node = self.generic_visit(node)
        if node.tensor.buffer.name in self.names:
            return dataclasses.replace(node, indices=self._indices(node.indices))
        return node


def task_only_buffers(body: Stmt, private: list[Buffer]) -> set[str]:
    """Names of the `private` buffers used only inside parallel loops: each task allocates its
    own copy, so the enclosing function need not allocate them at all."""
    outside: set[str] = set()
    _uses_outside_parallel(body, outside)
    return {b.name for b in private} - outside


def _uses_outside_parallel(node: Any, out: set[str]) -> None:
    if isinstance(node, For) and node.for_type is ForType.PARALLEL:
        return
    if isinstance(node, (Load, Store)):
        out.add(node.tensor.buffer.name)
    elif isinstance(node, (Alloc, Free)):
        out.add(node.buffer.name)
    if isinstance(node, (Expr, Stmt)):
        for child in child_nodes(node):
            _uses_outside_parallel(child, out)
