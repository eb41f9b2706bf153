"""Shrinking a buffer to the index range its accesses reach, and rebinding the accesses to the
resized buffer: what both backends do to task/thread-private storage (CINN's
`ResizeBufferToMaxVarRange`). The GPU target's `gpu_bind` sizes shared/local buffers by the
ranges of their indices over one block (`gpu_buffers.scope_buffers`); the x86 backend sizes the
private buffers of a parallel loop by the ranges one task reaches (`cinn_py.passes.x86_privatize`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from cinn_py.ir import Buffer, Expr, IntImm, Mutator, Tensor, int32
from cinn_py.symbolic.integer import IntInterval


def resized_to_ranges(buffer: Buffer, ranges: Sequence[IntInterval | None]) -> Buffer:
    """`buffer` with each dim cut to `hi + 1` of its inclusive index range `(lo, hi)` (never
    grown); a dim whose range is unknown (None) or reaches below 0 keeps its extent."""
    shape: list[Expr] = []
    for dim, rng in zip(buffer.shape, ranges):
        if rng is None or rng[0] < 0:
            shape.append(dim)
            continue
        size = rng[1] + 1
        if isinstance(dim, IntImm):
            size = min(size, dim.value)
        shape.append(IntImm(dim.dtype if isinstance(dim, IntImm) else int32, size))
    new_shape = tuple(shape)
    return buffer if new_shape == buffer.shape else dataclasses.replace(buffer, shape=new_shape)


class BufferRebinder(Mutator):
    """Point every access of a buffer named in `buffers` at its replacement (same name)."""

    def __init__(self, buffers: dict[str, Buffer]) -> None:
        self.buffers = buffers

    def visit_tensor(self, tensor: Tensor) -> Tensor:
        new = self.buffers.get(tensor.buffer.name)
        return tensor if new is None or new is tensor.buffer else tensor.with_buffer(new)


__all__ = ["BufferRebinder", "resized_to_ranges"]
