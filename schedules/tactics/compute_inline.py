"""ComputeInlineTactic (CINN `compute_inline_tactic.cc` + `ScheduleBlockGraph` checks).

A block is inlined into its consumers iff

* it writes exactly one buffer (one Store), has no IfThenElse in its body,
* it is not a reduction, not a reduce init, and its tensor is not reduced into,
* its tensor is not a group output (CINN `direct_output_var_names`),
* something in the group reads it, and
* not (it has >= 2 consumers AND at most 8 iterations AND every consumer reads it at the indices
  it writes): CINN keeps such a small shared value in a register instead of recomputing it.

Blocks are visited consumers-first (reverse document order, CINN's reverse topological walk) and
the walk repeats until nothing changes, since inlining a block can make its producer a candidate.
`compute_inline` itself re-checks the index pattern; a block it rejects is kept.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from cinn_py.ir import Expr, Load, ScheduleBlockRealize, walk
from schedules.analysis.loops import block_stores
from schedules.errors import ScheduleError
from schedules.primitives.compute_inline import InlineDepthError
from schedules.schedule import IRSchedule
from schedules.tactics.group import BlockInfo, GroupInfo, analyze_group, loops_of

__all__ = ["compute_inline_tactic", "can_inline"]

SMALL_LOOP = 8


def _iterations(sch: IRSchedule, block: BlockInfo) -> int | None:
    total = 1
    for node in loops_of(sch.func, block.name):
        extent = getattr(node.extent, "value", None)
        if not isinstance(extent, int):
            return None
        total *= extent
    return total


def _bound(realize: ScheduleBlockRealize, indices: Sequence[Expr]) -> tuple[Expr, ...]:
    """`indices` with the block's iter vars replaced by the values the realize binds them to."""
    iter_vars = realize.schedule_block.iter_vars
    return tuple(realize.iter_values[iter_vars.index(i)] if i in iter_vars else i for i in indices)


def _aligned_reads(block: BlockInfo, consumers: list[BlockInfo]) -> bool:
    written = [tuple(s.indices) for s in block_stores(block.realize)]
    for consumer in consumers:
        for node in walk(consumer.realize.schedule_block.body):
            if isinstance(node, Load) and node.tensor.name in block.written:
                if _bound(consumer.realize, node.indices) != _bound(block.realize, written[0]):
                    return False
    return True


def can_inline(sch: IRSchedule, info: GroupInfo, block: BlockInfo) -> tuple[bool, str]:
    """CINN's inline rule for one block: (decision, reason when not)."""
    if block.is_reduce or block.is_init:
        return False, "a reduction or reduce init"
    if len(block.written) != 1 or len(block_stores(block.realize)) != 1:
        return False, "it does not write exactly one buffer"
    tensor = block.written[0]
    if tensor in info.outputs:
        return False, "a group output"
    if block.has_if:
        return False, "its body holds an IfThenElse"
    if any(b.is_reduce and tensor in b.written for b in info.blocks):
        return False, "a reduce tensor"
    consumers = info.consumers_of(tensor)
    if not consumers:
        return False, "nothing reads it"
    iterations = _iterations(sch, block)
    if (len(consumers) >= 2 and iterations is not None and iterations <= SMALL_LOOP
        and _aligned_reads(block, consumers)):
        return False, "a small value shared by several consumers (kept in a register)"
    return True, ""


def compute_inline_tactic(sch: IRSchedule,
                          keep: Callable[[GroupInfo, BlockInfo], bool] | None = None) -> list[str]:
    """Inline every block CINN's rule allows (and `keep` does not hold back: the x86 tactic
    keeps an expensive value read by several consumers); returns the inlined block names."""
    inlined: list[str] = []
    too_deep: set[str] = set()  # inlining others only deepens expressions: these stay refused
    changed = True
    while changed:
        changed = False
        info = analyze_group(sch.func)
        stale: set[str] = set()  # producers of a block inlined in this pass: their facts changed
        for block in reversed(info.blocks):
            if block.name in too_deep or block.name in stale:
                continue
            ok, _ = can_inline(sch, info, block)
            if not ok or (keep is not None and keep(info, block)):
                continue
            try:
                sch.compute_inline(block.name)
            except InlineDepthError:
                too_deep.add(block.name)
                continue
            except ScheduleError:
                continue
            inlined.append(block.name)
            changed = True
            # The blocks this one read now feed its consumers instead: decide them in the next
            # pass, with fresh facts. Every other block's facts are unchanged, so one analysis
            # serves many inlines (a chain inlines half its blocks per pass, not one).
            stale.update(p.name for t in block.read for p in info.producers_of(t))
            stale.update(c.name for t in block.written for c in info.consumers_of(t))
    return inlined
