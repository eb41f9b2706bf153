"""AlignIterSpaceTactic: bring every loop nest of the group onto the master's `[S, R]` space.

Two steps, as CINN's 2024 `LoopReorderAlignmentTactic` + early `AlignIterSpaceTactic`:

1. Loop reorder alignment. A non-reduce block whose loops are a permutation of the master's
   (a column normalisation `Y[i, j] = X[i, j] / C[j]` after `C[j] = sum_i X[i, j]` runs
   `[i, j]` = `[R, S]`) is reordered to the master's order, so that its spatial loops come
   first. Loops are matched through the data: a tensor both blocks load (or the master's own
   output, which the block reads) is indexed by one iter var per dimension in each block, and
   equal dimensions identify a loop of the block with a loop of the master. A block whose loops
   are not all identified this way is left alone. Reordering a nest of one elementwise block
   is always legal (every instance is independent); the primitive still checks it.
2. `IRSchedule.align_iter_space()`: fuse each nest to `[sp]` or `[sp, rb]`.

Alignment can fail (a nest of a lower-rank intermediate in an elementwise group, or extents that
match neither form); the tactic then reports False and the driver retries after inlining (the
intermediates are usually gone then). A reduce-all onto a 0-d tensor has no spatial loop and
nothing to align.
"""

from __future__ import annotations

from cinn_py.ir import Load, Var, walk
from schedules.analysis.loops import block_stores
from schedules.errors import ScheduleError
from schedules.schedule import IRSchedule
from schedules.tactics.group import BlockInfo, analyze_group, loops_of

__all__ = ["align_iter_space_tactic"]


def align_iter_space_tactic(sch: IRSchedule) -> bool:
    """Reorder permuted nests, then align. Returns whether the group is aligned."""
    info = analyze_group(sch.func)
    master = next((b for b in info.blocks if b.is_reduce), None)
    if master is not None:
        for name in [b.name for b in info.blocks if not b.is_reduce and not b.is_init]:
            current = analyze_group(sch.func)  # block nodes change as nests are reordered
            block = next(b for b in current.blocks if b.name == name)
            master = next(b for b in current.blocks if b.is_reduce)
            _reorder_like_master(sch, block, master)
    if not analyze_group(sch.func).spatial:
        return False
    try:
        sch.align_iter_space()
    except ScheduleError:
        return False
    return True


def _axis_of_loop(realize_values: tuple, iter_vars: tuple, var: Var) -> Var | None:
    """The loop var bound to iter var `var` (None when its binding is not a plain loop var)."""
    for iv, value in zip(iter_vars, realize_values):
        if iv == var and isinstance(value, Var):
            return value
    return None


def _dims(block: BlockInfo, tensor: str) -> list[tuple[Var | None, ...]]:
    """Index patterns of `tensor` in `block`: per dimension the iter var when the index is one."""
    out = [tuple(i if isinstance(i, Var) else None for i in n.indices)
           for n in walk(block.realize.schedule_block.body) if isinstance(n, Load)
           and n.tensor.name == tensor]
    if tensor in block.written:
        out += [tuple(i if isinstance(i, Var) else None for i in s.indices) for s
                in block_stores(block.realize)]
    return out


def _loop_position(sch: IRSchedule, block: BlockInfo) -> dict[str, int]:
    return {lp.loop_var.name: k for k, lp in enumerate(loops_of(sch.func, block.name))}


def _match(block: BlockInfo, master: BlockInfo) -> dict[str, str]:
    """block loop var name -> master loop var name, through shared tensors."""
    b_sb, m_sb = block.realize.schedule_block, master.realize.schedule_block
    mapping: dict[str, str] = {}
    for tensor in (block.read & (master.read | set(master.written))):
        for b_idx in _dims(block, tensor):
            for m_idx in _dims(master, tensor):
                for bv, mv in zip(b_idx, m_idx):
                    if bv is None or mv is None:
                        continue
                    b_loop = _axis_of_loop(block.realize.iter_values, b_sb.iter_vars, bv)
                    m_loop = _axis_of_loop(master.realize.iter_values, m_sb.iter_vars, mv)
                    if b_loop is not None and m_loop is not None:
                        mapping.setdefault(b_loop.name, m_loop.name)
    return mapping


def _reorder_like_master(sch: IRSchedule, block: BlockInfo, master: BlockInfo) -> None:
    b_pos, m_pos = _loop_position(sch, block), _loop_position(sch, master)
    if len(b_pos) != len(m_pos):
        return
    mapping = _match(block, master)
    if set(mapping) != set(b_pos) or len(set(mapping.values())) != len(mapping):
        return
    target = sorted(b_pos, key=lambda name: m_pos.get(mapping[name], -1))
    if target == sorted(b_pos, key=b_pos.__getitem__):
        return
    loops = sch.get_loops(block.name)
    by_name = {sch.get(lp).loop_var.name: lp for lp in loops}  # type: ignore[union-attr]
    try:
        sch.reorder([by_name[name] for name in target])
    except ScheduleError:
        return  # not a single chain (or illegal): leave it; alignment will say what is wrong
