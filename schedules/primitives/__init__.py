"""Schedule primitives as pure functions over `LoweredFunc` (one module per family).

Contract: `primitive(func, <resolved current nodes>, <args>) -> LoweredFunc` or
`(LoweredFunc, <results>)`; every precondition is checked before anything is built and violations
raise a `ScheduleError` subclass with the IR excerpt; trees are rebuilt by path copy (uids of
untouched statements survive). `schedules.IRSchedule` resolves handles and records the trace.
"""

from schedules.primitives.align import align_iter_space
from schedules.primitives.annotate import annotate, unannotate
from schedules.primitives.compute_at import compute_at, simple_compute_at
from schedules.primitives.compute_inline import compute_inline, reverse_compute_inline
from schedules.primitives.decompose import decompose_reduction
from schedules.primitives.flatten import add_unit_loop, flatten_loops
from schedules.primitives.for_type import GpuLimits, bind, parallel, unroll, vectorize
from schedules.primitives.fuse import fuse
from schedules.primitives.get import get_all_blocks, get_block, get_child_blocks, get_loops, get_root_block
from schedules.primitives.reduction import factorize_reduction, rfactor
from schedules.primitives.reorder import reorder
from schedules.primitives.reverse_compute_at import reverse_compute_at
from schedules.primitives.split import split
from schedules.primitives.storage import set_buffer, sync_threads

__all__ = [
    "GpuLimits", "add_unit_loop", "align_iter_space", "annotate", "bind", "compute_at", "compute_inline",
    "decompose_reduction", "factorize_reduction", "flatten_loops", "fuse", "get_all_blocks", "get_block", "get_child_blocks",
    "get_loops", "get_root_block", "parallel", "reorder", "reverse_compute_at", "reverse_compute_inline",
    "rfactor", "set_buffer", "simple_compute_at", "split", "sync_threads", "unannotate", "unroll", "vectorize",
]
