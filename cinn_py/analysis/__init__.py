"""Exact integer-set analyses of the loop-nest IR with islpy (CINN uses isl for the same).

    iteration_domain(func, block) -> isl.Set
    access_relations(func, block) -> BlockAccesses (reads / writes as isl.Map, `exact` flags)
    dependences(func, src_block, dst_block) -> Dependences (raw / war / waw, in execution order)
    loop_carries_dependence(func, loop) -> bool
    required_region(func, consumer_blocks, tensor, under_loop) -> ((min, extent), ...) | None
    is_always_true(cond, var_ranges=None, loops=()) -> bool

Blocks are named (`"B"`) or given as their ScheduleBlockRealize; loops are the `For` objects of
the function. Symbolic dims are isl parameters (`S0 >= lower_bound`). Quasi-affine bounds, guards
and indices (`/` and `%` by constants of provably nonnegative operands) are exact; anything else
is over-approximated and reported with `exact=False` (see `polyhedral`).
"""

from cinn_py.analysis.polyhedral import AccessRelation, AnalysisError, BlockAccesses, Dependences, PolyContext
from cinn_py.analysis.queries import (
    access_relations, dependences, is_always_true, iteration_domain, loop_carries_dependence, required_region,
)
from cinn_py.analysis.sites import Access, BlockSite, collect_sites

__all__ = [
    "Access", "AccessRelation", "AnalysisError", "BlockAccesses", "BlockSite", "Dependences", "PolyContext",
    "access_relations", "collect_sites", "dependences", "is_always_true", "iteration_domain",
    "loop_carries_dependence", "required_region",
]
