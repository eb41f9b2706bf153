"""The `Workload` record of the x86 benchmarks (compute definition, hand schedule, inputs, numpy and
PyTorch references, bytes moved) and the schedule steps the hand schedules share: rfactor over
the vector lanes, fusing stages into the row loop, vectorising the inner loop, task-local
buffers, parallel rows. Duck-typed over the schedule: this module never imports `schedules`.
The workloads themselves are `bench_workloads` and `bench_matmul`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cinn_py.ir import LoweredFunc


LANES = 16  # float32 lanes of an AVX-512 register (AVX2 machines split it in two)
Shape = dict[str, int]
Schedule = Any  # a schedules.IRSchedule (duck-typed: this module must not import schedules)


@dataclass(frozen=True)
class Workload:
    """One benchmark: `lower(shape)` -> LoweredFunc, `schedule(sch, shape)` applies the x86
    schedule, `inputs(shape, rng)` -> input arrays, `numpy(*inputs)` -> the expected output."""

    name: str
    description: str
    shape: Shape
    tiny: Shape
    lower: Callable[[Shape], LoweredFunc]
    schedule: Callable[[Schedule, Shape], None]
    inputs: Callable[[Shape, np.random.Generator], list[np.ndarray]]
    numpy: Callable[..., np.ndarray]
    torch: Callable[..., Any] | None = None
    rtol: float = 1e-5
    atol: float = 1e-5
    fused_memory_bound: bool = True
    notes: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def bytes_moved(self, arrays: Sequence[np.ndarray], out: np.ndarray) -> int:
        """Inputs read once + the output written once."""
        return int(sum(a.nbytes for a in arrays) + out.nbytes)


# ---------------------------------------------------------------------------------------------
# Schedule helpers
# ---------------------------------------------------------------------------------------------
def rfactor_lanes(s: Schedule, block: str, lanes: int = LANES) -> str:
    """Split `block`'s innermost (reduce) loop into `[-1, lanes]` and rfactor over the lanes:
    returns the name of the partial-result tensor `rf_<block>`."""
    loops = s.get_loops(block)
    _, inner = s.split(loops[-1], [-1, lanes])
    return s.rfactor(inner, 1).name


def fuse_into_rows(s: Schedule, consumer: str, producers: Sequence[str]) -> None:
    """`simple_compute_at` every producer block (given in program order) into the outermost loop
    of `consumer`; moved in reverse so that each lands before the ones already moved."""
    for block in reversed(producers):
        s.simple_compute_at(block, s.get_loops(consumer)[0])


def vectorize_inner(s: Schedule, block: str, extent: int, lanes: int = LANES) -> None:
    """Vectorise the innermost loop of `block` (of constant `extent`) by `lanes`."""
    loop = s.get_loops(block)[-1]
    if extent % lanes:
        return
    if extent != lanes:
        loop = s.split(loop, [-1, lanes])[-1]
    s.vectorize(loop, lanes)


def make_local(s: Schedule, *blocks: str) -> None:
    for block in blocks:
        s.set_buffer(block, "local")


def parallel_rows(s: Schedule, block: str) -> None:
    s.parallel(s.get_loops(block)[0])


def flat_parallel(s: Schedule, block: str, n: int, chunk: int = 4096) -> None:
    """Fuse all loops of an elementwise `block`, split `[tasks, chunk/16, 16]`, parallel +
    vectorize."""
    loops = s.get_loops(block)
    fused = s.fuse(loops) if len(loops) > 1 else loops[0]
    chunk = min(chunk, n)
    outer, mid, inner = s.split(fused, [-1, chunk // LANES, LANES])
    s.parallel(outer)
    s.vectorize(inner, LANES)


def _f32(rng: np.random.Generator, *shape: int, scale: float = 1.0, offset: float = 0.0) -> np.ndarray:
    return (rng.standard_normal(shape, dtype=np.float32) * scale + offset).astype(np.float32)
