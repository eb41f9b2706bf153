"""cache_read and cache_write (CINN `CacheRead`, `CacheWrite`): stage a tensor through a buffer of
another memory scope.

* `cache_read(func, block, read_idx, memory_type)`: `T` is the `read_idx`-th distinct tensor
  `block` loads (in order of first appearance). A cache tensor `<T>_<scope>_temp_buffer` (same
  shape, buffer `_<T>_<scope>_temp_buffer` in `global` / `shared` / `local`) and a copy block of
  that name are created; the copy nest (loops `cache_ax0, cache_ax1, ...`) covers the region of
  `T` that `block` reads over all its loops, and `block`'s loads of `T` read the cache instead.
  The copy nest goes at the root level right after the last statement that writes `T` before
  `block`'s nest (at the start when there is none), as CINN's `FindInsertionPoint` does.
* `cache_write(func, block, write_idx, memory_type)`: `block` (and the `T__reduce_init` block of
  a reduction, which shares `T`'s buffer) write the cache instead of `T`; a copy block writes the
  region they wrote back to `T`, at the root level right after `block`'s nest. Consumers keep
  reading `T`. As in CINN, the blocks swap names: the compute block is renamed
  `<T>_<scope>_temp_buffer` (its handle stays valid) and the copy-back block is named `T`.

Both return the new copy block. Cache buffers keep the full shape of `T` and are indexed with
`T`'s indices (CINN does the same); `compute_at` of the copy block then localises the copy.

Differs from CINN: cache_read rewrites only `block`'s loads (CINN rewrites every load of `T` in
the function, also those outside the copied region); tensors are counted once each for
`read_idx` / `write_idx` (CINN counts every Load node); and every precondition below is checked
(CINN checks none): no writer of `T` may share `block`'s nest (cache_read), no other block may
touch `T` between the cached stage and its copy-back, and a region that is not provably the
exact set of elements written may not be copied back over data written elsewhere (cache_write).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from cinn_py.ir import (
    Add, Block, Buffer, Expr, For, IfThenElse, IntImm, Load, LoweredFunc, Max, MemoryType, Min, Mutator,
    ScheduleBlock, ScheduleBlockRealize, Stmt, Store, Sub, Tensor, Var, int32, replace_stmt, unique_name,
    walk,
)
from schedules.analysis.arith import prove_equal
from schedules.analysis.loops import StmtIndex, all_blocks, block_stores, index_of, root_block
from schedules.analysis.regions import (
    Access, accesses, block_buffers_read, block_buffers_written, index_bounds, int_like, loop_ranges,
    simplify_index,
)
from schedules.errors import InvalidArgumentError, ScheduleError, StaleHandleError, schedule_error
from schedules.primitives._tree import replace_many
from schedules.registry import primitive

__all__ = ["cache_read", "cache_write", "CacheError", "SCOPES"]

SCOPES: dict[str, MemoryType] = {
    "global": MemoryType.HEAP, "shared": MemoryType.GPU_SHARED, "local": MemoryType.GPU_LOCAL,
}

Region = list[tuple[Expr, Expr]]
"""Per dimension, inclusive (lo, hi)."""


class CacheError(ScheduleError):
    """cache_read / cache_write: the cached tensor's other accesses do not allow a cache stage
    at the root level (a writer in the same nest, an access between the stage and its copy, a
    copy-back region that would overwrite data written elsewhere)."""


# ----------------------------------------------------------------------------------------------
# Shared checks and builders
# ----------------------------------------------------------------------------------------------
def _check_args(prim: str, func: LoweredFunc, block: ScheduleBlockRealize, idx: int,
                memory_type: str) -> tuple[StmtIndex, MemoryType]:
    if not isinstance(func, LoweredFunc):
        raise TypeError(f"{prim}: expected a LoweredFunc, got {type(func).__name__}")
    if isinstance(idx, bool) or not isinstance(idx, int):
        raise TypeError(f"{prim}: the access index must be an int, got {idx!r}")
    if not isinstance(memory_type, str):
        raise TypeError(f"{prim}: memory_type must be 'global', 'shared' or 'local', got {memory_type!r}")
    index = index_of(func)
    if not isinstance(block, ScheduleBlockRealize) or not index.contains(block):
        raise schedule_error(StaleHandleError, prim, f"block '{getattr(block, 'name', block)}' is not a "
                             "block of the current function (stale handle)", func)
    if not block.iter_values:
        raise schedule_error(InvalidArgumentError, prim, f"expected a computation block, got the root block "
                             f"'{block.name}'", func, block)
    scope = SCOPES.get(memory_type)
    if scope is None:
        raise schedule_error(InvalidArgumentError, prim, f"memory_type must be 'global', 'shared' or "
                             f"'local', got '{memory_type}'", func, block)
    return index, scope


def _pick(prim: str, func: LoweredFunc, block: ScheduleBlockRealize, idx: int, tensors: list[Tensor],
          what: str) -> Tensor:
    if not 0 <= idx < len(tensors):
        names = ", ".join(t.name for t in tensors) or "none"
        raise schedule_error(InvalidArgumentError, prim, f"{what} index must be in [0, {len(tensors)}) for "
                             f"block '{block.name}' (it {what}s {names}), got {idx}", func, block)
    return tensors[idx]


def _distinct(tensors: Sequence[Tensor]) -> list[Tensor]:
    out: dict[tuple[str, str], Tensor] = {}
    for t in tensors:
        out.setdefault((t.name, t.buffer.name), t)
    return list(out.values())


def _same(a: Tensor, b: Tensor) -> bool:
    return a.name == b.name and a.buffer.name == b.buffer.name


def _cache_tensor(func: LoweredFunc, tensor: Tensor, scope: MemoryType) -> Tensor:
    """`<T>_<scope>_temp_buffer` (CINN `MakeCacheTensor`; a unique name when used already)."""
    taken = {n.tensor.name for n in walk(func.body) if isinstance(n, (Load, Store))}
    taken |= {b.name for b in all_blocks(func)} | {b.name.lstrip("_") for b in func.temp_bufs}
    name = unique_name(f"{tensor.name}_{scope.scope}_temp_buffer")
    while name in taken:
        name = unique_name(f"{tensor.name}_{scope.scope}_temp_buffer")
    buffer = Buffer(f"_{name}", tensor.buffer.shape, tensor.dtype, scope)
    return Tensor(name, tensor.shape, tensor.dtype, buffer)


def _root_stmts(func: LoweredFunc) -> tuple[ScheduleBlockRealize, tuple[Stmt, ...]]:
    root = root_block(func)
    body = root.schedule_block.body
    return root, (body.stmts if isinstance(body, Block) else (body,))


def _top_position(index: StmtIndex, tops: tuple[Stmt, ...], node: Stmt) -> int:
    """Position among the root's statements of the one that contains `node`."""
    chain = index.ancestors(node) + [node]
    for k, top in enumerate(tops):
        if any(top is c for c in chain):
            return k
    raise ValueError("node is not under the root block")  # unreachable: callers pass nodes of func


def _insert_top(func: LoweredFunc, position: int, stmt: Stmt) -> LoweredFunc:
    root, tops = _root_stmts(func)
    stmts = tops[:position] + (stmt,) + tops[position:]
    body = root.schedule_block.body
    new_body = dataclasses.replace(body, stmts=stmts) if isinstance(body, Block) else Block(stmts)
    new_sb = dataclasses.replace(root.schedule_block, body=new_body)
    new_root = dataclasses.replace(root, schedule_block=new_sb)
    return replace_stmt(func, root, new_root)


def _box(index: StmtIndex, accs: list[Access], shape: tuple[Expr, ...]) -> tuple[Region, bool]:
    """The box of `accs` over all their loops, clamped to the tensor (a dimension whose bounds
    cannot be proven inside the tensor covers all of it), and whether it is provably exactly the
    set of elements accessed (some access fills the whole box)."""
    boxes = [(_access_box(index, acc, shape), acc) for acc in accs]
    region: Region = list(boxes[0][0][0])
    for (box, _), _ in boxes[1:]:
        region = [_union(a, b) for a, b in zip(region, box)]
    exact = any(inside and _is_box(index, acc) and _same_region(box, region) for (box, inside), acc in boxes)
    return region, exact


def _access_box(index: StmtIndex, acc: Access, shape: tuple[Expr, ...]) -> tuple[Region, bool]:
    from cinn_py.symbolic import prove_ge, prove_le  # noqa: PLC0415 (keep import light)

    ranges = loop_ranges(index.enclosing_loops(_block_of(acc)))
    box: Region = []
    inside = True
    for idx, dim in zip(acc.indices, shape):
        bounds = index_bounds(idx, ranges)
        last = simplify_index(Sub(dim, int_like(1, dim)))
        if bounds is None or not (prove_ge(bounds[0], int_like(0, bounds[0])) and prove_le(bounds[1], last)):
            bounds, inside = (int_like(0, dim), last), False
        box.append(bounds)
    return box, inside


def _block_of(acc: Access) -> ScheduleBlockRealize:
    if acc.block is None:  # `regions.accesses` records the block of every access it returns
        raise LookupError(f"cache: the access of '{acc.buffer}' has no block")
    return acc.block


def _same_region(a: Region, b: Region) -> bool:
    return all(prove_equal(x[0], y[0]) and prove_equal(x[1], y[1]) for x, y in zip(a, b))


def _union(a: tuple[Expr, Expr], b: tuple[Expr, Expr]) -> tuple[Expr, Expr]:
    from cinn_py.symbolic import prove_le  # noqa: PLC0415

    lo = a[0] if prove_le(a[0], b[0]) else b[0] if prove_le(b[0], a[0]) else \
        simplify_index(Min(a[0], b[0]))
    hi = a[1] if prove_le(b[1], a[1]) else b[1] if prove_le(a[1], b[1]) else \
        simplify_index(Max(a[1], b[1]))
    return lo, hi


def _is_box(index: StmtIndex, acc: Access) -> bool:
    """The access touches every element of its bounding box: each index is a distinct loop var
    of the block's loops (plus a loop-invariant offset) and no guard encloses the block."""
    if any(isinstance(a, IfThenElse) for a in index.ancestors(_block_of(acc))):
        return False
    loop_vars = {lp.loop_var for lp in index.enclosing_loops(_block_of(acc))}
    seen: set[Var] = set()
    for idx in acc.indices:
        used = [v for v in walk(idx) if isinstance(v, Var) and v in loop_vars]
        if not used:
            continue
        var = used[0]
        if len(set(used)) != 1 or var in seen or simplify_index(Sub(idx, var)).__class__ is not IntImm:
            return False
        seen.add(var)
    return True


def _copy_nest(name: str, region: Region, dst: Tensor, src: Tensor) -> tuple[Stmt, ScheduleBlockRealize]:
    """`for cache_ax.. { ScheduleBlock(name) { v.. = axis.bind(lo + cache_ax..); dst[v..] = src[v..] } }`
    (CINN `MakeCacheBlock`)."""
    idt = region[0][1].dtype if region else int32
    loop_vars = [Var(unique_name(f"cache_ax{k}"), idt) for k in range(len(region))]
    iter_vars = [Var(unique_name(f"v{k}"), idt) for k in range(len(region))]
    values = tuple(simplify_index(Add(lo, var)) for (lo, _), var in zip(region, loop_vars))
    store = Store(dst, Load(src, tuple(iter_vars)), tuple(iter_vars))
    realize = ScheduleBlockRealize(values, ScheduleBlock(name, tuple(iter_vars), store))
    stmt: Stmt = realize
    for var, (lo, hi) in reversed(list(zip(loop_vars, region))):
        extent = simplify_index(Add(Sub(hi, lo), int_like(1, hi)))
        stmt = For(var, int_like(0, extent), extent, Block((stmt,)))
    return stmt, realize


class _Retensor(Mutator):
    """Replace tensor `old` (by name and buffer) with `new`; rebind other views of `old`'s buffer
    to `new_buffer` when given."""

    def __init__(self, old: Tensor, new: Tensor, new_buffer: Buffer | None = None) -> None:
        self.old, self.new, self.new_buffer = old, new, new_buffer

    def visit_tensor(self, tensor: Tensor) -> Tensor:
        if _same(tensor, self.old):
            return self.new
        if self.new_buffer is not None and tensor.buffer.name == self.old.buffer.name:
            return tensor.with_buffer(self.new_buffer)
        return tensor


def _with_temp(func: LoweredFunc, buffer: Buffer) -> LoweredFunc:
    return dataclasses.replace(func, temp_bufs=tuple(func.temp_bufs) + (buffer,))


# ----------------------------------------------------------------------------------------------
# cache_read
# ----------------------------------------------------------------------------------------------
@primitive
def cache_read(func: LoweredFunc, block: ScheduleBlockRealize, read_idx: int,
               memory_type: str) -> tuple[LoweredFunc, ScheduleBlockRealize]:
    """Read the `read_idx`-th tensor of `block` through a `memory_type` cache (see the module
    docstring); returns the new function and the copy block.

    Raises:
        InvalidArgumentError (index out of range, unknown memory type, root block),
        CacheError, StaleHandleError; TypeError for arguments of the wrong type.
    """
    prim = "cache_read"
    index, scope = _check_args(prim, func, block, read_idx, memory_type)
    loads = [n for n in walk(block.schedule_block.body) if isinstance(n, Load)]
    tensor = _pick(prim, func, block, read_idx, _distinct([ld.tensor for ld in loads]), "read")
    buf = tensor.buffer.name
    if buf in block_buffers_written(block):
        raise schedule_error(CacheError, prim, f"block '{block.name}' reads '{tensor.name}' and also writes "
                             f"its buffer '{buf}'; expected a read-only tensor (use cache_write for the "
                             "output)", func, block)
    _, tops = _root_stmts(func)
    top = _top_position(index, tops, block)
    writers = [b for b in all_blocks(func) if buf in block_buffers_written(b)]
    same_nest = [w for w in writers if _top_position(index, tops, w) == top]
    if same_nest:
        raise schedule_error(CacheError, prim, f"block '{same_nest[0].name}' writes '{tensor.name}' in the "
                             f"same loop nest as '{block.name}'; a root-level copy would read it before it "
                             "is written (expected every writer in an earlier nest; cache before fusing the "
                             "nests)",
                             func, same_nest[0], block)
    reads = [a for a in accesses(block) if not a.is_write and _same(a.tensor, tensor)]
    region, _ = _box(index, reads, tensor.shape)
    cache = _cache_tensor(func, tensor, scope)
    copy, copy_block = _copy_nest(cache.name, region, cache, tensor)
    position = max((_top_position(index, tops, w) + 1 for w in writers
                    if _top_position(index, tops, w) < top), default=0)
    new_sb = _Retensor(tensor, cache).visit(block.schedule_block)
    new_block = dataclasses.replace(block, schedule_block=new_sb)
    new = _insert_top(replace_stmt(func, block, new_block), position, copy)
    return _with_temp(new, cache.buffer), copy_block


# ----------------------------------------------------------------------------------------------
# cache_write
# ----------------------------------------------------------------------------------------------
@primitive
def cache_write(func: LoweredFunc, block: ScheduleBlockRealize, write_idx: int,
                memory_type: str) -> tuple[LoweredFunc, ScheduleBlockRealize]:
    """Write the `write_idx`-th tensor of `block` through a `memory_type` cache and copy it back
    (see the module docstring); returns the new function and the copy-back block.

    Raises:
        InvalidArgumentError (index out of range, unknown memory type, root block),
        CacheError, StaleHandleError; TypeError for arguments of the wrong type.
    """
    prim = "cache_write"
    index, scope = _check_args(prim, func, block, write_idx, memory_type)
    tensor = _pick(prim, func, block, write_idx, _distinct([s.tensor for s in block_stores(block)]), "write")
    buf = tensor.buffer.name
    inits = [b for b in all_blocks(func) if b is not block
             and any(s.tensor.name == f"{tensor.name}__reduce_init" and s.tensor.buffer.name == buf
                     for s in block_stores(b))]
    stage = [block, *inits]
    _check_self_reads(prim, func, block, tensor, bool(inits))
    _, tops = _root_stmts(func)
    first = min(_top_position(index, tops, b) for b in stage)
    last = _top_position(index, tops, block)
    _check_window(prim, func, index, tops, stage, buf, tensor, first, last)
    writes = [a for b in stage for a in accesses(b) if a.is_write and a.buffer == buf]
    region, exact = _box(index, writes, tensor.shape)
    if not exact:
        _check_inexact_ok(prim, func, stage, tensor)
    cache = _cache_tensor(func, tensor, scope)
    others = {b.name for b in all_blocks(func)} - {block.name}
    name = tensor.name if tensor.name not in others else unique_name(tensor.name)
    copy, copy_block = _copy_nest(name, region, tensor, cache)
    rewrite = _Retensor(tensor, cache, cache.buffer)
    renamed = dataclasses.replace(rewrite.visit(block.schedule_block), name=cache.name)
    mapping: dict[int, Stmt] = {id(block): dataclasses.replace(block, schedule_block=renamed)}
    for init in inits:
        mapping[id(init)] = dataclasses.replace(init, schedule_block=rewrite.visit(init.schedule_block))
    new = _insert_top(replace_many(func, mapping), last + 1, copy)
    return _with_temp(new, cache.buffer), copy_block


def _check_self_reads(prim: str, func: LoweredFunc, block: ScheduleBlockRealize, tensor: Tensor,
                      has_init: bool) -> None:
    """A block that reads what it writes (a reduction update) must read exactly the element it
    writes, and the stage must initialise it (its `__reduce_init` block): the cache holds no
    copy of `T`'s previous contents."""
    stores = [s for s in block_stores(block) if _same(s.tensor, tensor)]
    self_reads = [ld for ld in walk(block.schedule_block.body)
                  if isinstance(ld, Load) and ld.tensor.buffer.name == tensor.buffer.name]
    if not self_reads:
        return
    matching = all(any(ld.indices == s.indices for s in stores) for ld in self_reads)
    if not (has_init and matching):
        why = "no '__reduce_init' block initialises it" if matching else \
            "it reads other elements than it writes"
        raise schedule_error(CacheError, prim, f"block '{block.name}' reads '{tensor.name}' before writing "
                             f"it, but {why}; the cache would not hold the previous values (expected a "
                             "reduction with its init block, or a block that only writes the tensor)",
                             func, block)


def _check_window(prim: str, func: LoweredFunc, index: StmtIndex, tops: tuple[Stmt, ...],
                  stage: list[ScheduleBlockRealize], buf: str, tensor: Tensor, first: int, last: int) -> None:
    """No block outside the stage may touch `T`'s buffer from the stage's first nest to the copy-back."""
    for other in all_blocks(func):
        if any(other is s for s in stage):
            continue
        if buf not in block_buffers_read(other) | block_buffers_written(other):
            continue
        if first <= _top_position(index, tops, other) <= last:
            raise schedule_error(CacheError, prim, f"block '{other.name}' accesses '{tensor.name}' between "
                                 f"the cached block '{stage[0].name}' and the copy back to '{tensor.name}' "
                                 "at the end of its loop nest; it would see stale data (expected no other "
                                 "access there; cache before fusing the nests)", func, other, stage[0])


def _check_inexact_ok(prim: str, func: LoweredFunc, stage: list[ScheduleBlockRealize],
                      tensor: Tensor) -> None:
    """A copy-back box that may contain elements the stage did not write would copy undefined
    cache values over them: only allowed when nothing else defines `T`'s elements."""
    buf = tensor.buffer.name
    inputs = {t.buffer.name for t in func.inputs}
    writers = [b for b in all_blocks(func)
               if buf in block_buffers_written(b) and not any(b is s for s in stage)]
    if buf in inputs or writers:
        why = f"block '{writers[0].name}' also writes it" if writers else "it is a function input"
        raise schedule_error(CacheError, prim, f"the region of '{tensor.name}' written by '{stage[0].name}' "
                             f"cannot be proven to be a box, and {why}; copying the box back would "
                             f"overwrite elements '{stage[0].name}' did not write (expected an exact box: "
                             "indices that are distinct loop vars, no guard)", func, stage[0], *writers)


