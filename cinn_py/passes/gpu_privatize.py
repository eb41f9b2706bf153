"""Privatisation of GPU buffers after bind lowering (steps 1 and 2 of `gpu_buffers.scope_buffers`):
a `local` buffer whose every access uses one index tuple built from thread/block variables,
symbolic dims and loops enclosing all accesses, and whose first access is a store that guards
the rest, shrinks to one element per thread (`privatize_local_buffers`); a `shared` buffer
indexed only through block-invariant dims is re-indexed into the block's own tile
(`privatize_shared_buffers`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable

from cinn_py.ir import (
    Buffer, Call, CudaAxisInfo, Expr, For, IfThenElse, IntImm, Load, MemoryType, Mul, Mutator, Stmt, Store,
    Tensor, Var, int32, is_const_int, walk,
)
from cinn_py.passes.gpu_accesses import Access, Context, collect_accesses
from cinn_py.passes.gpu_index import (
    BOUND_VAR_PREFIXES, CONST, THREAD, flat_index, owned_by_one_thread, split_kinds,
)
from cinn_py.symbolic.poly import Poly


def _buffers_of(body: Stmt, memory: MemoryType) -> dict[str, Buffer]:
    return {n.tensor.buffer.name: n.tensor.buffer for n in walk(body)
            if isinstance(n, (Load, Store)) and n.tensor.buffer.memory_type is memory}


# ---------------------------------------------------------------------------------------------
# Per-iteration privatisation of local buffers
# ---------------------------------------------------------------------------------------------
def _same_entry(a: object, b: object) -> bool:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return a[0] is b[0] and a[1] == b[1]
    return a is b


def _common_prefix(contexts: list[Context]) -> Context:
    prefix = contexts[0]
    for ctx in contexts[1:]:
        n = 0
        while n < min(len(prefix), len(ctx)) and _same_entry(prefix[n], ctx[n]):
            n += 1
        prefix = prefix[:n]
    return prefix


def _free_vars(nodes: Iterable[Expr]) -> set[str]:
    return {n.name for e in nodes for n in walk(e) if isinstance(n, Var)}


def _runs_at_least_once(loop: For) -> bool:
    return isinstance(loop.extent, IntImm) and loop.extent.value >= 1


def _guarded_alike(entry: tuple[IfThenElse, bool], context: Context) -> bool:
    """Whether `context` sits in a branch of an `if` with the same condition and branch."""
    node, branch = entry
    return any(isinstance(o, tuple) and o[1] == branch and o[0].condition == node.condition for o in context)


def _is_invariant(cond: Expr, allowed: set[str]) -> bool:
    """A condition that has one value per iteration: only allowed variables, no memory reads
    (a load could see a store made between the two `if`s)."""
    return _free_vars((cond,)) <= allowed and not any(isinstance(n, (Load, Call)) for n in walk(cond))


def _dominates(store: Context, access: Context, allowed: set[str]) -> bool:
    """Whether a store at `store` (earlier in program order) runs whenever `access` runs; both
    contexts are relative to the loops enclosing every access."""
    for entry in store:
        if any(_same_entry(entry, o) for o in access):
            continue
        if isinstance(entry, For):
            if not _runs_at_least_once(entry):
                return False
        elif not (_is_invariant(entry[0].condition, allowed) and _guarded_alike(entry, access)):  # type: ignore[index]
            return False
    return True


dominates = _dominates
"""Public name of the liveness helper (`gpu_sync` uses it for own-write-first reads)."""


def privatizable(accesses: list[Access], symbols: set[str]) -> bool:
    """Whether a local buffer with these accesses needs one element per thread (see module doc)."""
    if not accesses or not accesses[0].is_write:
        return False
    first = accesses[0]
    if any(a.indices != first.indices for a in accesses):
        return False
    if all(is_const_int(i, 0) for i in first.indices):
        return False  # already a single element
    prefix = _common_prefix([a.context for a in accesses])
    common_loops = {c.loop_var.name for c in prefix if isinstance(c, For)}
    index_vars = _free_vars(first.indices)
    if not all(name in common_loops or name in symbols or name.startswith(BOUND_VAR_PREFIXES)
               for name in index_vars):
        return False
    allowed = common_loops | symbols | {n for n in index_vars if n.startswith(BOUND_VAR_PREFIXES)}
    allowed |= {n for a in accesses for c in a.context if isinstance(c, tuple)
                for n in _free_vars((c[0].condition,)) if n.startswith(BOUND_VAR_PREFIXES)}
    start = len(prefix)
    return all(_dominates(first.context[start:], a.context[start:], allowed) for a in accesses[1:])


def _zero_indices(tensor: Tensor, indices: tuple[Expr, ...]) -> tuple[Expr, ...]:
    """Index 0 in every dimension: a privatised buffer has one element."""
    return tuple(IntImm(i.dtype if i.dtype.is_int else int32, 0) for i in indices)


def _one_element(buffer: Buffer) -> Buffer:
    shape = tuple(IntImm(d.dtype if isinstance(d, IntImm) else int32, 1) for d in buffer.shape)
    return dataclasses.replace(buffer, shape=shape)


def privatize_local_buffers(body: Stmt, symbols: set[str]) -> tuple[Stmt, dict[str, Buffer]]:
    """Shrink each privatisable local buffer to one element per thread (module doc, step 1)."""
    local = {n.tensor.buffer.name: n.tensor.buffer for n in walk(body)
             if isinstance(n, (Load, Store)) and n.tensor.buffer.memory_type is MemoryType.GPU_LOCAL}
    if not local:
        return body, {}
    accesses = collect_accesses(body, local)
    chosen = {name: _one_element(buf) for name, buf in local.items() if privatizable(accesses[name], symbols)}
    if not chosen:
        return body, {}
    return _Reindexer({name: (buf, _zero_indices) for name, buf in chosen.items()}).visit(body), chosen


# ---------------------------------------------------------------------------------------------
# Per-iteration privatisation of shared buffers; thread/block variables in scoped indices
# ---------------------------------------------------------------------------------------------
Reindex = Callable[[Tensor, tuple[Expr, ...]], tuple[Expr, ...]]


class _Reindexer(Mutator):
    """Rebind the accesses of the planned buffers: `plans[name] = (new buffer, indices -> indices)`."""

    def __init__(self, plans: dict[str, tuple[Buffer, Reindex]]) -> None:
        self.plans = plans

    def _apply(self, tensor: Tensor, indices: tuple[Expr, ...]) -> tuple[Tensor, tuple[Expr, ...]] | None:
        plan = self.plans.get(tensor.buffer.name)
        if plan is None:
            return None
        buffer, reindex = plan
        return tensor.with_buffer(buffer), reindex(tensor, indices)

    def visit_load(self, node: Load) -> Expr:
        node = self.generic_visit(node)
        done = self._apply(node.tensor, node.indices)
        return node if done is None else Load(*done)

    def visit_store(self, node: Store) -> Stmt:
        node = self.generic_visit(node)
        done = self._apply(node.tensor, node.indices)
        return node if done is None else dataclasses.replace(node, tensor=done[0], indices=done[1])


def _flat_buffer(buffer: Buffer) -> Buffer:
    numel: Expr | None = None
    for dim in buffer.shape:
        numel = dim if numel is None else Mul(numel, _like(dim, numel))
    return dataclasses.replace(buffer, shape=(numel if numel is not None else IntImm(int32, 1),))


def _like(e: Expr, ref: Expr) -> Expr:
    return IntImm(ref.dtype, e.value) if isinstance(e, IntImm) and ref.dtype.is_int else e


def _const_dims(dims: tuple[Expr, ...]) -> tuple[int | None, ...]:
    return tuple(d.value if isinstance(d, IntImm) else None for d in dims)


def privatize_shared_buffers(body: Stmt, symbols: set[str], info: CudaAxisInfo
                             ) -> tuple[Stmt, dict[str, Buffer]]:
    """Shrink shared buffers to what one block needs in one iteration (module doc, step 1)."""
    shared = _buffers_of(body, MemoryType.GPU_SHARED)
    if not shared:
        return body, {}
    accesses = collect_accesses(body, shared)
    block_dims = _const_dims(info.block_dims)
    plans = {}
    for name, buf in shared.items():
        found = accesses[name]
        if not privatizable(found, symbols):
            continue
        groups = split_kinds(flat_index(found[0].indices, buf.shape), symbols)
        if groups is None or not owned_by_one_thread(groups.get(THREAD, Poly()), block_dims):
            continue
        dtype = found[0].indices[0].dtype
        kept = (groups.get(THREAD, Poly()) + groups.get(CONST, Poly())).to_expr(dtype)
        plans[name] = (_flat_buffer(buf), lambda t, i, kept=kept: (kept,))
    if not plans:
        return body, {}
    return _Reindexer(plans).visit(body), {n: p[0] for n, p in plans.items()}
