"""x86 schedules of reductions: one fused row loop for row-wise groups, task-split column sums.

**Row groups** (softmax, layernorm, RMSNorm, row sums: every nest runs over the same rows and
the reductions are over the contiguous last axis), CINN's x86 recipe "compute_at the reductions
into the row loop", as the project's hand schedules do:

1. each nest's spatial loops are fused into one row loop;
2. each reduction is split `[-1, acc]` and `rfactor`ed over the `acc` loop: `rf_T[row, 0:acc]`
   holds `acc` independent partial results (one or two vector registers, see `accumulators`),
   which a vector loop updates (a reduce loop itself cannot be vectorised, and LLVM does not
   reassociate float adds on its own);
3. every block is `simple_compute_at`ed into the row loop of the last nest, in program order:
   one row is read from memory once and stays in L1 while every stage uses it (the exp pass of
   a softmax writes its row buffer once, and the sum reads it from L1);
4. with `ScheduleConfig.fuse_reduce_producers` (a tuning knob), an elementwise stage a partial-sum
   block reads is split like the rfactor loop and computed inside it (softmax's exp summed as it
   is produced, `fuse_producers_into_rfactors`);
5. intermediates become `local` (privatised per task and shrunk to one row by the backend);
6. the stages' innermost loops are vectorised with the native lanes, the row loop is parallel.

**Column reductions** (`C[j] = sum_k X[k, j]`, the reduce loop outside the contiguous axis):
the reduce loop is split into `tasks` slices that are `rfactor`ed into `rf_C[t, j]` and run in
parallel; within a slice the reduce loop runs outside a vector strip of contiguous columns,
four rows per pass (each strip of partial sums is loaded and stored once per four rows), and the
few partial rows are summed at the end. A sum over several leading axes (a bias gradient,
`[B, S, N] -> [N]` or `[1, 1, N]`) has its reduce loops fused into one first; outer spatial loops
of extent 1 stay outside the tactic's loops.
"""

from __future__ import annotations

from collections.abc import Sequence

from cinn_py.ir import Block, Call, Var, walk
from schedules.analysis.loops import all_blocks, find_block, root_body
from schedules.analysis.regions import const_value
from schedules.errors import ScheduleError, schedule_error
from schedules.schedule import IRSchedule
from schedules.state import LoopRV
from schedules.tactics.config import ScheduleConfig
from schedules.tactics.group import BlockInfo, analyze_group, block_info, is_init_name, loops_of
from schedules.tactics.x86_nest import TacticNotApplicable, contiguous_store, lanes_for, parallel_worth

__all__ = [
    "accumulators", "fuse_producers_into_rfactors", "nests", "spatial_loops", "not_applicable",
    "schedule_column_reduction", "schedule_reduce_all", "schedule_rows",
]


def nests(sch: IRSchedule) -> list[list[str]]:
    """Block names of each top-level nest, in document order."""
    body = root_body(sch.func)
    stmts = body.stmts if isinstance(body, Block) else (body,)
    return [[b.name for b in all_blocks(stmt)] for stmt in stmts]


def accumulators(extent: int | None, lanes: int, cheap: bool = True, vectors: int = 0) -> int:
    """Partial results per row: two vectors for a cheap reduced value on rows of at least four
    vectors (two independent add chains hide the add latency; measured on rmsnorm and row sums,
    16 lanes: 32 partial sums beat 16 and 64), one vector when the value calls a transcendental
    (softmax's exp: the registers go to the polynomial; 0.81 ms with 16 vs 1.05 ms with 64), 0
    (no rfactor) when the row is shorter than two vectors. `vectors` > 0 (a tuned
    `ScheduleConfig.reduce_vectors`) asks for that many vectors where the row has room."""
    if extent is not None and extent < 2 * lanes:
        return 0
    if vectors > 0:
        return vectors * lanes if extent is None or extent >= vectors * lanes else lanes
    if cheap and (extent is None or extent >= 4 * lanes):
        return 2 * lanes
    return lanes


def spatial_loops(sch: IRSchedule, block: str) -> int:
    """Leading loops of `block` that bind no reduce iter var."""
    realize = block_info_of(sch, block).realize
    reduce_vars = {n for iv,
                   v in zip(realize.schedule_block.iter_vars, realize.iter_values) if iv.is_reduce_axis
                   for n in walk(v) if isinstance(n, Var)}
    count = 0
    for loop in loops_of(sch.func, block):
        if loop.loop_var in reduce_vars:
            break
        count += 1
    return count


def block_info_of(sch: IRSchedule, name: str) -> BlockInfo:
    return block_info(find_block(sch.func, name))


def _fuse_rows(sch: IRSchedule, block: str, n_spatial: int) -> None:
    if n_spatial > 1:
        sch.fuse(sch.get_loops(block)[:n_spatial])


def _rfactor(sch: IRSchedule, block: str, lanes: int, cfg: ScheduleConfig) -> tuple[str, int] | None:
    """Split + rfactor the single reduce loop of `block` over `acc` lanes; (rf block, acc)."""
    loops = loops_of(sch.func, block)
    cheap = not _calls(sch, block, with_producers=cfg.fuse_reduce_producers)
    acc = accumulators(const_value(loops[-1].extent), lanes, cheap, cfg.reduce_vectors)
    if acc == 0:
        return None
    handles = sch.get_loops(block)
    _, inner = sch.split(handles[-1], [-1, acc])
    # the partial results are a new last axis of the output: after the spatial iter vars (a
    # reduction over several axes, fused into one loop, still has one iter var per axis)
    iter_vars = block_info_of(sch, block).realize.schedule_block.iter_vars
    axis = sum(1 for iv in iter_vars if not iv.is_reduce_axis)
    rf = sch.rfactor(inner, axis)
    return rf.name, acc


def _calls(sch: IRSchedule, block: str, with_producers: bool) -> bool:
    """The reduced value calls a function (exp, ...); with `with_producers` also the elementwise
    blocks whose tensors it reads (they will be computed in the reduction's loop)."""
    info = analyze_group(sch.func)
    me = next(b for b in info.blocks if b.name == block)
    bodies = ([me] + ([b for t in me.read for b in info.producers_of(t) if not b.is_reduce]
                      if with_producers else []))
    return any(isinstance(n, Call) for b in bodies for n in walk(b.realize.schedule_block.body))


def schedule_rows(sch: IRSchedule, cfg: ScheduleConfig, names: Sequence[str] | None = None) -> str:
    """The fused row loop over the nests holding `names` (default: the whole group); raises
    ScheduleError when a step does not apply (the caller falls back)."""
    groups = [n for n in nests(sch) if names is None or set(n) & set(names)]
    mains = [[b for b in n if not is_init_name(b)][-1] for n in groups if any(not is_init_name(b) for b in n)]
    n_rows = len(analyze_group(sch.func).spatial)
    if n_rows == 0 or any(len(loops_of(sch.func, m)) < n_rows for m in mains):
        raise not_applicable(sch, "row tactic", "a nest has fewer loops than the group's rows")
    for main in mains:
        _fuse_rows(sch, main, n_rows)
        _fuse_row_reduce_loops(sch, main)
    rf_blocks: dict[str, int] = {}
    for main in mains:
        if block_info_of(sch, main).is_reduce and len(loops_of(sch.func, main)) == 2:
            done = _rfactor(sch, main, lanes_for(sch, main, cfg), cfg)
            if done is not None:
                rf_blocks[done[0]] = done[1]
    interest = {b for n in groups for b in n} | set(rf_blocks) | {f"{r}__reduce_init" for r in rf_blocks}
    order = [b for nest in nests(sch) for b in nest if b in interest]
    last = mains[-1]
    own = _nest_of(sch, last)
    for block in reversed([b for b in order if b not in own]):
        sch.simple_compute_at(block, sch.get_loops(last)[0])
    fused = fuse_producers_into_rfactors(sch, rf_blocks) if cfg.fuse_reduce_producers else []
    _make_local(sch, [b for b in order if b != last])
    for block in order:
        if block not in fused:
            _vectorize_stage(sch, block, rf_blocks, cfg)
    row = sch.get_loops(last)[0]
    if parallel_worth(sch, row, last, cfg):
        sch.parallel(row)
    note = f", {'/'.join(fused)} fused into the partial-sum loop" if fused else ""
    return f"fused row loop over {len(order)} blocks, {len(rf_blocks)} rfactor-vectorised reductions{note}"


def _fuse_row_reduce_loops(sch: IRSchedule, block: str) -> None:
    """A row reduction over several trailing axes (`[C, H, W]` summed over H and W) as the one
    reduce loop the rfactor takes: the axes are contiguous in the input (the row tactic runs
    only on continuous reductions), so the fused loop reads the row in order. Left as two loops,
    the reduction was not rfactored: one serial float32 chain per row (slower, and 10x the
    rounding error of the partial sums)."""
    loops = sch.get_loops(block)
    if block_info_of(sch, block).is_reduce and len(loops) > 2 and spatial_loops(sch, block) == 1:
        sch.fuse(loops[1:])


def fuse_producers_into_rfactors(sch: IRSchedule, rf_blocks: dict[str, int]) -> list[str]:
    """Compute each elementwise stage that a partial-sum block reads inside that block's vector
    loop (softmax: `E = exp(X - M)` is summed as it is produced, one pass over the row instead
    of two). The stage's column loop is split like the rfactor loop and `simple_compute_at`ed
    into it; a stage that cannot move (its loop does not match, or the dependence check refuses
    it) keeps its own loop. Returns the moved blocks (vectorised with the partial-sum loop)."""
    fused: list[str] = []
    for rf, acc in rf_blocks.items():
        for producer in _row_producers(sch, rf):
            trial = sch.fork()
            try:
                trial.split(trial.get_loops(producer)[-1], [-1, acc])
                trial.simple_compute_at(producer, trial.get_loops(rf)[-1])
            except ScheduleError:
                continue
            sch.adopt(trial)
            fused.append(producer)
    return fused


def _row_producers(sch: IRSchedule, rf: str) -> list[str]:
    """The injective blocks in `rf`'s row loop, with a single column loop, whose tensor `rf`
    reads: candidates for computing inside `rf`'s partial-sum loop."""
    info = analyze_group(sch.func)
    rf_info = next(b for b in info.blocks if b.name == rf)
    rf_loops = loops_of(sch.func, rf)
    if len(rf_loops) != 3:
        return []
    found = []
    for block in info.blocks:
        if (block.is_reduce or block.is_init or len(block.written) != 1 or block.written[0]
            not in rf_info.read):
            continue
        loops = loops_of(sch.func, block.name)
        if len(loops) == 2 and loops[0] is rf_loops[0]:
            found.append(block.name)
    return found


def not_applicable(sch: IRSchedule, tactic: str, why: str) -> TacticNotApplicable:
    return schedule_error(TacticNotApplicable, tactic, why, sch.func)


def _nest_of(sch: IRSchedule, block: str) -> list[str]:
    return next(n for n in nests(sch) if block in n)


def _make_local(sch: IRSchedule, blocks: list[str]) -> None:
    outputs = {t.name for t in sch.func.outputs}
    for block in blocks:
        info = block_info_of(sch, block)
        if info.is_init or len(info.written) != 1 or info.written[0] in outputs:
            continue
        sch.set_buffer(block, "local")


def _vectorize_stage(sch: IRSchedule, block: str, rf_blocks: dict[str, int], cfg: ScheduleConfig) -> None:
    loops = loops_of(sch.func, block)
    if len(loops) < 2:
        return
    base = block[:-len("__reduce_init")] if is_init_name(block) else block
    if base in rf_blocks:
        sch.vectorize(sch.get_loops(block)[-1], rf_blocks[base])
        return
    info = block_info_of(sch, block)
    lanes = lanes_for(sch, block, cfg)
    if info.is_reduce or info.is_init or lanes < 2 or not contiguous_store(sch, block, loops[-1]):
        return
    sch.vectorize(sch.get_loops(block)[-1], lanes)


def schedule_reduce_all(sch: IRSchedule, block: str, cfg: ScheduleConfig) -> str:
    """A reduction onto a scalar (no spatial loop): `acc` partial results in a vector loop."""
    if len(loops_of(sch.func, block)) != 1:
        raise not_applicable(sch, "reduce-all tactic", f"'{block}' needs exactly one reduce loop")
    done = _rfactor(sch, block, lanes_for(sch, block, cfg), cfg)
    if done is None:
        return "serial (short reduction)"
    rf, acc = done
    sch.vectorize(sch.get_loops(rf)[-1], acc)
    sch.vectorize(sch.get_loops(f"{rf}__reduce_init")[-1], acc)
    return f"rfactor-vectorised over {acc} partial results"


def _fuse_reduce_loops(sch: IRSchedule, block: str) -> None:
    """A column sum over several leading axes (a bias gradient: `[B, S, N] -> [N]`) as the
    one reduce loop the column tactic takes: the reduce loops are adjacent and outermost in the
    input, so fused they still read contiguous rows."""
    n_spatial = spatial_loops(sch, block)
    loops = sch.get_loops(block)
    if len(loops) - n_spatial > 1:
        sch.fuse(loops[n_spatial:])


def _unit_loops(sch: IRSchedule, loops: Sequence[LoopRV]) -> bool:
    return all(const_value(sch.get(lp).extent) == 1 for lp in loops)


def schedule_column_reduction(sch: IRSchedule, block: str, cfg: ScheduleConfig) -> str:
    """Task-split column reduction of `block` (see the module docstring); raises ScheduleError
    when it does not apply."""
    _fuse_reduce_loops(sch, block)
    loops = loops_of(sch.func, block)
    n_spatial = spatial_loops(sch, block)
    if len(loops) < 2 or n_spatial != len(loops) - 1 or not _unit_loops(sch, sch.get_loops(block)[:-2]):
        raise not_applicable(sch, "column tactic", f"'{block}' needs one spatial and one reduce loop "
                                                   "(outer spatial loops of extent 1)")
    extent = const_value(loops[-1].extent)
    per_pass = max(1, cfg.rows_per_pass)
    tasks = (cfg.column_tasks if extent is None
             else max(1, min(cfg.column_tasks, extent // per_pass)))
    lanes = lanes_for(sch, block, cfg)
    outer, _ = sch.split(sch.get_loops(block)[-1], [tasks, -1])
    rf = sch.rfactor(outer, 0).name
    j, t, k = sch.get_loops(rf)[-3:]
    sch.reorder([t, k, j])
    t, k, j = sch.get_loops(rf)[-3:]
    if parallel_worth(sch, t, rf, cfg):
        sch.parallel(t)
    per_task = None if extent is None else -(-extent // tasks)
    if lanes >= 2:
        if (per_pass > 1 and per_task is not None and per_task % per_pass == 0
                and extent == per_task * tasks):
            ko, ki = sch.split(k, [-1, per_pass])
            jo, ji = sch.split(j, [-1, lanes])
            sch.reorder([ko, jo, ki, ji])
            sch.unroll(ki)
            sch.vectorize(ji, lanes)
        else:
            sch.vectorize(j, lanes)
        sch.vectorize(sch.get_loops(f"{rf}__reduce_init")[-1], lanes)
    return f"column reduction: {tasks} parallel row slices into {rf}, vectorize[{lanes}] columns"
