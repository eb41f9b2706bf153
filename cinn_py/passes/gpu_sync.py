"""Race checks of a bind-lowered kernel: cross-block global temporaries and unsynchronised shared
memory (CINN's `ArrangeStorageTactic` reports the first as "Fusion requires synchronization across
blocks"; its `SyncThreads` schedule primitive is what fixes the second).

`check_races(func, body)` runs at the end of `gpu_bind`, on indices that are expressions of
`blockIdx.*`, `threadIdx.*`, serial loop variables and symbolic dims:

- **global temporaries** (a non-argument buffer left in global memory): when an element written
  by one instance is read by an instance with a *different* `blockIdx`, the kernel needs a grid-wide
  barrier that CUDA blocks do not have: `CompileError` naming the buffer, suggesting `compute_at`
  (produce the element in the block that reads it) or `set_buffer(.., "shared"/"local")`. Output
  arguments the kernel also reads (a reduction accumulator, a stage consumed by a later one) get
  the same cross-block check (an unbound nest runs in every block);
- **barriers** must be reached by every thread of the block: one under a branch or in a loop whose
  condition or bounds depend on `threadIdx` is a `CompileError` (a deadlock on the GPU);
- **shared buffers** (and global temporaries, within one block): a write and a read (or a read and a later
write) of the same element by two
  different threads of one block must be separated by `__syncthreads()`: textually between them at
  their common loop level for accesses in one iteration, anywhere in the common loop body after the
  later access or before the earlier one for accesses in different iterations of a serial loop. A
  missing barrier is a `CompileError` pointing at `sync_threads` (we do not insert barriers: a
  barrier under a thread-dependent guard deadlocks, and where it goes is a schedule decision, as in
  CINN). A block-reduce helper call (`cinn_block_reduce_*`, `cinn_discrete_reduce_*`) contains
  barriers and counts as one after its arguments are read.

Conflicts are decided exactly with islpy (`cinn_py.analysis.isl_convert`): two instances, each
constrained by the launch dims, its loops and its guards, touching the same flattened element with
the differing/equal bound variables required (the same indices, dimension by dimension, where a
symbolic stride makes the flat index non-affine: `blockIdx.x * S0 + j`). When symbolic dims still
make an index, bound or guard non-affine (`blockIdx.x / S0`, `k * ((S0 + 3) / 4)`), the pair is
decided again with the dims fixed to a few small sizes, and a race found there is reported with the
sizes ("at S0=1"): it is a race of the kernel run at that size. Otherwise a pair that is not
quasi-affine is not reported (we report only races we can prove; an over-approximation would reject
correct kernels). Same-value writes by several threads (write-write) are not reported.

`strict=True` is the auto scheduler's check of its own tilings (`gpu_bind(.., strict=True)`): a
pair isl cannot decide counts as a race, and outputs the kernel reads back are checked between
threads of one block too, so a tiling is kept only when every value a nest reads from global
memory was written by the same thread, or by its block before a barrier (`MissingBarrierError`:
the tactic then adds `__syncthreads()` between its nests).

Whether two accesses conflict is decided in `gpu_conflicts` (isl).
"""

from __future__ import annotations

from cinn_py.diagnostics import CompileError
from cinn_py.ir import (
    Block, Call, CudaAxisInfo, Evaluate, Expr, For, Let, Load, LoweredFunc, MemoryType, Stmt, Store,
    Var, print_ir, walk,
)
from cinn_py.passes.gpu_accesses import ProgramOrderWalker
from cinn_py.passes.gpu_privatize import dominates
from cinn_py.passes.gpu_conflicts import _AXES, _Conflicts, _Event
from cinn_py.passes.gpu_index import flat_index

BARRIER_CALLS = ("__syncthreads",)
BARRIER_HELPERS = ("cinn_block_reduce_", "cinn_discrete_reduce_")


class MissingBarrierError(CompileError):
    """Two threads of one block touch an element (one writes) with no `__syncthreads()` between
    them: a barrier fixes it (unlike a race between blocks, which needs separate kernels)."""


class _Events(ProgramOrderWalker):
    """Buffer accesses and barriers of a kernel body in program order."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[_Event] = []

    def add(self, **kw: object) -> None:
        self.events.append(_Event(len(self.events), tuple(self.context), **kw))  # type: ignore[arg-type]

    def on_load(self, load: Load) -> None:
        self.add(buffer=load.tensor.buffer, index=flat_index(load.indices, load.tensor.buffer.shape),
                 indices=tuple(load.indices))

    def on_store(self, store: Store) -> None:
        if _has_barrier(store.value):
            self.add()
        self.add(buffer=store.tensor.buffer, index=flat_index(store.indices, store.tensor.buffer.shape),
                 is_store=True, indices=tuple(store.indices))

    def other_stmt(self, node: Stmt) -> None:
        if isinstance(node, Block):
            for child in node.stmts:
                self.stmt(child)
        elif isinstance(node, Evaluate):
            self.exprs(node.value)
            if _has_barrier(node.value):
                self.add()
        elif isinstance(node, Let):
            if node.body is not None:
                self.exprs(node.body)
                if _has_barrier(node.body):
                    self.add()


def _has_barrier(e: Expr) -> bool:
    return any(isinstance(n, Call) and (n.name in BARRIER_CALLS or n.name.startswith(BARRIER_HELPERS))
               for n in walk(e))


# ---------------------------------------------------------------------------------------------
# The checks
# ---------------------------------------------------------------------------------------------
def _common(a: tuple[object, ...], b: tuple[object, ...]) -> tuple[object, ...]:
    n = 0
    while n < min(len(a), len(b)) and _same(a[n], b[n]):
        n += 1
    return a[:n]


def _same(x: object, y: object) -> bool:
    if isinstance(x, tuple) and isinstance(y, tuple):
        return x[0] is y[0] and x[1] == y[1]
    return x is y


def _barrier_between(barriers: list[_Event], lo: int, hi: int, level: tuple[object, ...]) -> bool:
    return any(lo < b.pos < hi and _same_level(b.context, level) for b in barriers)


def _same_level(context: tuple[object, ...], level: tuple[object, ...]) -> bool:
    """A barrier at `level` or in loops below it (no guards: every thread reaches it)."""
    return len(context) >= len(level) and all(_same(x, y) for x, y in zip(context, level)) and all(
        isinstance(e, For) for e in context[len(level):])


def check_races(func: LoweredFunc, body: Stmt, info: CudaAxisInfo, strict: bool = False) -> None:
    """Raise CompileError for a provable cross-block or unsynchronised shared-memory race.

    `strict` (the auto scheduler's check of its own tilings) also raises where a race cannot be
    ruled out (accesses isl cannot read) and checks outputs the kernel reads back between threads of
    one block too: a value read from global memory must come from the reading thread itself, or
    from its block with a barrier in between; otherwise the tiling is not kept."""
    collector = _Events()
    collector.stmt(body)
    events = collector.events
    barriers = [e for e in events if e.buffer is None]
    args = {a.tensor.buffer.name for a in func.args if a.tensor is not None}
    by_buffer: dict[str, list[_Event]] = {}
    for ev in events:
        if ev.buffer is not None and ev.index is not None and ev.index.dtype.is_int:
            by_buffer.setdefault(ev.buffer.name, []).append(ev)
    _check_barriers_uniform(func, barriers)
    conflicts = _Conflicts(info, list(func.scalar_args), strict=strict)
    for name, accesses in by_buffer.items():
        memory = accesses[0].buffer.memory_type  # type: ignore[union-attr]
        if name in args:
            # An output the kernel also reads (a reduction's accumulator, a stage a later one
            # consumes) races across blocks like a temporary: an unbound reduction nest run by
            # every block re-zeroes the accumulator under the others (fuzz seed 7 case 1060).
            # Within a block, CINN's block-reduce pattern (every thread reads the old value, then
            # writes the same broadcast result) is intended, so only blocks are checked.
            _check_global(func, name, accesses, conflicts, "output")
            if strict:
                _check_shared(func, name, accesses, barriers, conflicts)
        elif memory in (MemoryType.HEAP, MemoryType.AUTO):
            _check_global(func, name, accesses, conflicts)
            _check_shared(func, name, accesses, barriers, conflicts)  # threads of one block: as shared
        elif memory is MemoryType.GPU_SHARED:
            _check_shared(func, name, accesses, barriers, conflicts)


def _check_barriers_uniform(func: LoweredFunc, barriers: list[_Event]) -> None:
    """Every thread of a block must reach each barrier: one under a branch or in a loop whose
    condition or bounds depend on `threadIdx` deadlocks (or is undefined behaviour)."""
    for barrier in barriers:
        for entry in barrier.context:
            exprs = (entry.min, entry.extent) if isinstance(entry, For) else (entry[0].condition,)  # type: ignore[index]
            if any(_mentions_thread(e) for e in exprs):
                what = f"loop '{entry.loop_var.name}' whose bounds depend" if isinstance(entry, For) else \
                    f"branch 'if ({print_ir(exprs[0])})' that depends"
                raise CompileError(
                    f"gpu_bind: a __syncthreads() of kernel '{func.name}' is inside a {what} on threadIdx: "
                    "threads that skip it never reach the barrier (deadlock). Put the barrier outside the "
                    "guard "
                    "(sync_threads on the enclosing loop), or make the guard uniform across the block's "
                    "threads")


def _mentions_thread(e: Expr) -> bool:
    return any(isinstance(n, Var) and n.name.startswith("threadIdx.") for n in walk(e))


def _check_global(func: LoweredFunc, name: str, accesses: list[_Event], conflicts: _Conflicts,
                  what: str = "global temporary") -> None:
    for w in (a for a in accesses if a.is_store):
        for r in (a for a in accesses if not a.is_store):
            if conflicts.exists(w, r, "blocks differ"):
                raise CompileError(
                    f"gpu_bind: {what} '{name}' is written by one block and read by another in kernel "
                    f"'{func.name}' (write index {print_ir(w.index)}, read index {print_ir(r.index)})"
                    f"{conflicts.witness}: fusion "
                    "requires synchronization across blocks, which a CUDA kernel does not have. Compute the "
                    "producer inside the consumer's block (compute_at / simple_compute_at), give both the "
                    "same "
                    "blockIdx binding, or keep the temporary per block with set_buffer(.., \"shared\")")


def _check_shared(func: LoweredFunc, name: str, accesses: list[_Event], barriers: list[_Event],
                  conflicts: _Conflicts) -> None:
    for i, p in enumerate(accesses):
        for q in accesses[i + 1:]:
            if not (p.is_store or q.is_store) or (p.is_store and q.is_store) or _own_write_first(p, q, func):
                continue
            level = _common(p.context, q.context)
            loops = tuple(e.loop_var.name for e in level if isinstance(e, For))  # type: ignore[union-attr]
            same_iter = conflicts.exists(p, q, "threads differ", loops, loops_differ=False)
            if same_iter and not _barrier_between(barriers, p.pos, q.pos, level):
                raise _sync_error(func, name, p, q, "between them" + conflicts.witness)
            if loops and conflicts.exists(p, q, "threads differ", loops, loops_differ=True):
                wraps = [b for b in barriers if _same_level(b.context, level) and not p.pos < b.pos < q.pos]
                if not wraps:
                    raise _sync_error(func, name, p, q,
                                      "in the loop body after the second or before the first "
                                      "(they run in different iterations of the enclosing loop)"
                                      + conflicts.witness)


def _own_write_first(p: _Event, q: _Event, func: LoweredFunc) -> bool:
    """Whether the reader `q` always wrote the element itself first, in the same iteration (same
    index, the write dominating the read): other threads' writes of that element then only race
    with its own write, a write-write race this check does not report (a warp-reduce result
    broadcast to all lanes of a row, as in the seed)."""
    if not p.is_store or q.is_store or p.index != q.index:
        return False
    level = _common(p.context, q.context)
    loops = {e.loop_var.name for e in level if isinstance(e, For)}  # type: ignore[union-attr]
    names = {v.name for v in walk(p.index) if isinstance(v, Var)}  # type: ignore[arg-type]
    symbols = {v.name for v in func.scalar_args}
    allowed = loops | symbols | {n for n in names if n.startswith(("threadIdx.", "blockIdx."))}
    allowed |= {f"{p_}.{a}" for p_ in ("threadIdx", "blockIdx") for a in _AXES}
    if not names <= allowed:
        return False
    return dominates(p.context[len(level):], q.context[len(level):], allowed)


def _sync_error(func: LoweredFunc, name: str, p: _Event, q: _Event, where: str) -> MissingBarrierError:
    first, second = ("written", "read") if p.is_store else ("read", "overwritten")
    memory = "shared buffer" if p.buffer is not None and p.buffer.memory_type is MemoryType.GPU_SHARED \
        else "global temporary"
    return MissingBarrierError(
        f"gpu_bind: {memory} '{name}' in kernel '{func.name}': an element {first} by one thread "
        f"(index {print_ir(p.index)}) is {second} by another thread of the block (index {print_ir(q.index)}) "
        f"without __syncthreads() {where}; add one with sync_threads(<loop or block>, after=True)")
