"""Storage of GPU shared and local buffers after bind lowering (CINN `UpdateBufferAxisPass`,
`ResizeBufferPass` and the scope handling of `OptimizeExprGPU`).

A `local` buffer exists once per thread and a `shared` buffer once per block, but the IR still
indexes them like global tensors (`C_rf[(sp / S2), (sp % S2), threadIdx.x]` over all of
`[S1, S2, 32]`). `scope_buffers` gives each the storage that one thread / block needs:

1. **per-iteration privatisation** (local buffers): when every access uses the same index tuple
   and that tuple is built only from thread/block variables, symbolic dims and the variables of
   loops enclosing *all* accesses, then in one iteration of those loops each thread touches a
   single element. If, in addition, the first access is a store that every later access is
   guarded by (the same enclosing conditions, loops that run at least once), the buffer is dead
   at the start of every iteration: no value crosses iterations, so all iterations can share one
   register. Indices become 0 and the buffer shrinks to one element. This turns the seed's
   `C_rf`/`C` inside the serial `sp_5` loop into `float C_rf[1]` (CINN: UpdateBufferAxisPass
   zeroes axes that are equal in all accesses, ResizeBufferPass sizes them to 1; differs from
   CINN in checking the write-before-read liveness explicitly). **Shared buffers** get the same
   treatment per block: under the same liveness conditions, and when the (flattened) index is
   `f(loop vars) + g(threadIdx) + h(blockIdx)` with `g` injective over the block (each element
   owned by one thread, `gpu_index.owned_by_one_thread`), the loop and block parts are dropped:
   the seed's `C_rf` in shared memory becomes `__shared__ float C_rf[1024]` (one per thread of
   the 32x32 block) instead of a dynamic `S1 * S2 * 32` floats. An index without ownership (the
   seed's `C`, written by all 32 threads of a row) keeps its loop part: dropping it would let a
   fast thread overwrite, in the next iteration, a value a slow thread still reads;
2. **thread/block variables** (`drop_scope_variables`): block variables are removed from
   shared-buffer indices and every bound variable from local-buffer indices (one copy per block /
   per thread) — only when every access is provably `f(other vars) + g(removed vars)` (see
   `gpu_index`); otherwise the full index and buffer stay, which is always correct. Accesses that
   differ in `g` (a local buffer read at another thread's offset) raise `CompileError`;
3. **resizing**: each scoped buffer shrinks to the index range actually used, when that range
   has constant bounds.

The privatisations (step 1 and the shared-buffer re-indexing) are `gpu_privatize`; the bound
variable names (`AXES`, `BOUND_VAR_PREFIXES`, `is_bound_var`) are `gpu_index`, re-exported here.
"""

from __future__ import annotations


from cinn_py.diagnostics import CompileError
from cinn_py.ir import (
    Block, Buffer, Call, CudaAxisInfo, Evaluate, Expr, For, IntImm, Load, MemoryType, Stmt, Store, Tensor,
    Var, child_nodes, int64, walk,
)
from cinn_py.passes.buffer_resize import BufferRebinder, resized_to_ranges
from cinn_py.passes.gpu_accesses import Access, Interval, collect_accesses, interval
from cinn_py.passes.gpu_index import BLOCK, THREAD, drop_kinds, flat_index
from cinn_py.passes.gpu_index import AXES, BOUND_VAR_PREFIXES, is_bound_var  # noqa: F401 - re-exported
from cinn_py.passes.gpu_privatize import (
    Reindex, _buffers_of, _common_prefix, _flat_buffer, _Reindexer, privatize_local_buffers,
    privatize_shared_buffers,
)
from cinn_py.symbolic.poly import Poly, to_poly

_SCOPED = (MemoryType.GPU_SHARED, MemoryType.GPU_LOCAL)


# ---------------------------------------------------------------------------------------------
# Shared tiles: one tile per block, reused by every iteration of the serial loops around it
# ---------------------------------------------------------------------------------------------
def _outer_part(index: Expr, outer: set[str], symbols: set[str]) -> Poly | None:
    """The monomials of `index` over block variables and the `outer` loop vars (symbolic dims may
    scale them); None when a monomial mixes those with other variables, or the index reads memory."""
    if not index.dtype.is_int:
        return None
    part: dict[tuple[Expr, ...], int] = {}
    for mono, coef in to_poly(index).terms.items():
        names: set[str] = set()
        for node in (n for atom in mono for n in walk(atom)):
            if isinstance(node, (Load, Call)):
                return None
            if isinstance(node, Var) and node.name not in symbols:
                names.add(node.name)
        hits = {n for n in names if n in outer or n.startswith("blockIdx.")}
        if hits and hits != names:
            return None
        if hits:
            part[mono] = coef
    return Poly(part)


def _ends_with_barrier(loop: For) -> bool:
    body = loop.body
    last = body.stmts[-1] if isinstance(body, Block) and body.stmts else body
    return isinstance(last, Evaluate) and isinstance(last.value, Call) and last.value.name == "__syncthreads"


def _tile_offsets(found: list[Access], symbols: set[str]) -> tuple[Poly, ...] | None:
    """Per dim, the part of the index that only the block and the loops around every access
    choose, when it is the same in every access; None otherwise, or when the innermost of those
    loops does not end in `__syncthreads()` (its iterations reuse the tile)."""
    loops = [c for c in _common_prefix([a.context for a in found]) if isinstance(c, For)]
    outer = {lp.loop_var.name for lp in loops}
    offsets: tuple[Poly, ...] | None = None
    for access in found:
        parts = tuple(_outer_part(i, outer, symbols) for i in access.indices)
        if any(p is None for p in parts) or (offsets is not None and parts != offsets):
            return None
        offsets = parts  # type: ignore[assignment]
    if offsets is None or not any(p.terms for p in offsets):
        return None
    if loops and not _ends_with_barrier(loops[-1]):
        return None
    return offsets


def rebase_shared_tiles(body: Stmt, symbols: set[str], info: CudaAxisInfo, skip: set[str]
                        ) -> tuple[Stmt, dict[str, Buffer]]:
    """Index a shared buffer relative to its tile (CINN/TVM's shared cache of a block tile).

    A `cache_read(.., "shared")` computed at a serial `ko` loop inside the block loops is indexed
    like its global tensor (`A_shared[bi*32 + r, ko*8 + c]`). When, in every access, the part of
    each index chosen by the block and by the loops around all accesses is the same (`bi*32`,
    `ko*8`), that part names the tile, not an element of it: it is subtracted, and the buffer
    shrinks to one tile (`[32, 8]`). Different blocks have their own shared memory; different
    iterations of the loops now share storage, which is why the innermost of them must end in
    `__syncthreads()` (and `check_races` still checks every conflicting pair, the reuse
    included). Kept only where the rebased indices stay within `[0, dim)`.
    """
    shared = {n: b for n, b in _buffers_of(body, MemoryType.GPU_SHARED).items() if n not in skip}
    if not shared:
        return body, {}
    plans: dict[str, tuple[Buffer, Reindex]] = {}
    for name, found in collect_accesses(body, shared).items():
        offsets = _tile_offsets(found, symbols)
        if offsets is None:
            continue
        plans[name] = (shared[name], lambda t, i, off=offsets: tuple(
            (to_poly(e) - o).to_expr(e.dtype) for e, o in zip(i, off)))
    if not plans:
        return body, {}
    collector = _RangeCollector(info)
    collector.visit(_Reindexer(plans).visit(body))
    kept = {n: p for n, p in plans.items() if _within(shared[n], collector.ranges.get(n))}
    if not kept:
        return body, {}
    return _Reindexer(kept).visit(body), {n: p[0] for n, p in kept.items()}


def _within(buf: Buffer, ranges: list[Interval | None] | None) -> bool:
    if ranges is None:
        return False
    return all(r is not None and r[0] >= 0 and (not isinstance(d, IntImm) or r[1] < d.value)
               for r, d in zip(ranges, buf.shape))


_DROPPED = {MemoryType.GPU_SHARED: frozenset({BLOCK}), MemoryType.GPU_LOCAL: frozenset({BLOCK, THREAD})}


def drop_scope_variables(body: Stmt, symbols: set[str], skip: set[str]) -> tuple[Stmt, dict[str, Buffer]]:
    """Remove block variables from shared and all bound variables from local indices (step 2),
    for buffers whose every access is separable in them; others keep their full index. Each
    dimension is tried on its own first (a `[TM, TN]` register tile keeps its two dims), then
    the row-major flat index.

    Raises:
        CompileError: the removed parts differ between accesses: a local (shared) buffer would
            carry a value from one thread (block) to another, which its storage cannot do.
    """
    plans = {}
    for memory, kinds in _DROPPED.items():
        buffers = {n: b for n, b in _buffers_of(body, memory).items() if n not in skip}
        for name, found in collect_accesses(body, buffers).items():
            plan = (_drop_per_dim(buffers[name], found, kinds, symbols)
                    or _drop_flat(buffers[name], found, kinds, symbols))
            if plan is not None:
                plans[name] = plan
    if not plans:
        return body, {}
    return _Reindexer(plans).visit(body), {n: p[0] for n, p in plans.items()}


def _drop_per_dim(buf: Buffer, found: list[Access], kinds: frozenset[str], symbols: set[str]
                  ) -> tuple[Buffer, Reindex] | None:
    """The plan when every dim of every access is `f(others) + g(removed)` with one `g` per dim."""
    split = [[drop_kinds(i, kinds, symbols) for i in a.indices] for a in found]
    if not found or any(s is None for row in split for s in row):
        return None
    dropped = {tuple(s[1] for s in row) for row in split}  # type: ignore[index]
    if len(dropped) > 1 or not any(p.terms for p in next(iter(dropped))):
        return None
    kept = {a.indices: tuple(s[0] for s in row) for a, row in zip(found, split)}  # type: ignore[index]
    return buf, lambda t, i, kept=kept: kept[i]


def _drop_flat(buf: Buffer, found: list[Access], kinds: frozenset[str], symbols: set[str]
               ) -> tuple[Buffer, Reindex] | None:
    split = [drop_kinds(flat_index(a.indices, buf.shape), kinds, symbols) for a in found]
    if not found or any(s is None for s in split):
        return None  # not provably f(others) + g(removed): the full buffer stays correct
    dropped = {s[1] for s in split}  # type: ignore[index]
    if len(dropped) > 1:
        raise _cross_scope_error(buf, sorted(str(d.to_expr(int64)) for d in dropped))
    if not any(s[1].terms for s in split):  # type: ignore[index]
        return None
    kept = {a.indices: (s[0],) for a, s in zip(found, split)}  # type: ignore[index]
    return _flat_buffer(buf), lambda t, i, kept=kept: kept[i]


def _cross_scope_error(buf: Buffer, parts: list[str]) -> CompileError:
    owner = "thread" if buf.memory_type is MemoryType.GPU_LOCAL else "block"
    return CompileError(
        f"gpu_bind: {buf.memory_type.value} buffer '{buf.name}' is accessed with different {owner} offsets "
        f"({' vs '.join(parts)}): one copy exists per {owner}, so a value written by one {owner} cannot "
        "be read by another; keep the buffer in global memory (set_buffer(.., \"global\")) or schedule the "
        "reader "
        f"and writer onto the same {owner} (compute_at)")


class _RangeCollector:
    """Per scoped buffer, the [lo, hi] of each index dim over all accesses (None: unknown)."""

    def __init__(self, info: CudaAxisInfo) -> None:
        self.env: dict[str, Interval] = {}
        for prefix, dims in (("blockIdx", info.grid_dims), ("threadIdx", info.block_dims)):
            for axis, dim in zip(AXES, dims):
                if isinstance(dim, IntImm):
                    self.env[f"{prefix}.{axis}"] = (0, dim.value - 1)
        self.ranges: dict[str, list[Interval | None]] = {}

    def visit(self, node: Stmt | Expr) -> None:
        if isinstance(node, For):
            saved = self.env.get(node.loop_var.name)
            lo, ext = interval(node.min, self.env), interval(node.extent, self.env)
            if lo is not None and ext is not None:
                self.env[node.loop_var.name] = (lo[0], lo[1] + ext[1] - 1)
            else:
                self.env.pop(node.loop_var.name, None)
            self.visit(node.body)
            if saved is None:
                self.env.pop(node.loop_var.name, None)
            else:
                self.env[node.loop_var.name] = saved
            return
        if isinstance(node, (Load, Store)):
            self._record(node.tensor, node.indices)
        for child in child_nodes(node):
            self.visit(child)

    def _record(self, tensor: Tensor, indices: tuple[Expr, ...]) -> None:
        if tensor.buffer.memory_type not in (MemoryType.GPU_SHARED, MemoryType.GPU_LOCAL):
            return
        found = [interval(i, self.env) for i in indices]
        known = self.ranges.get(tensor.buffer.name)
        if known is None:
            self.ranges[tensor.buffer.name] = found
            return
        self.ranges[tensor.buffer.name] = [
            None if a is None or b is None else (min(a[0], b[0]), max(a[1], b[1])) for a,
            b in zip(known, found)]


# ---------------------------------------------------------------------------------------------
# The entry point
# ---------------------------------------------------------------------------------------------
def scope_buffers(body: Stmt, info: CudaAxisInfo, symbols: set[str]) -> tuple[Stmt, dict[str, Buffer]]:
    """Privatise, re-index and resize the shared/local buffers of a bind-lowered body.

    Returns the new body and the new Buffer of every scoped buffer whose shape changed.
    """
    body, resized = privatize_local_buffers(body, symbols)
    body, shared = privatize_shared_buffers(body, symbols, info)
    resized.update(shared)
    body, tiles = rebase_shared_tiles(body, symbols, info, set(resized))
    resized.update(tiles)
    body, flat = drop_scope_variables(body, symbols, set(resized))
    resized.update(flat)
    collector = _RangeCollector(info)
    collector.visit(body)
    scoped = {n.tensor.buffer.name: n.tensor.buffer for n in walk(body) if isinstance(n, (Load, Store))}
    for name, ranges in collector.ranges.items():
        new = resized_to_ranges(scoped[name], ranges)
        if new is not scoped[name]:
            resized[name] = new
    if resized:
        body = BufferRebinder(resized).visit(body)
    return body, resized
