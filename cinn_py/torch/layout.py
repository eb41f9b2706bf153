"""Memory layouts at a partition's boundary: strided torch tensors in, eager's strides out.

A Program's inputs and outputs are dense row-major arrays. Torch tensors are not: eager's
elementwise ops keep their inputs' memory order (`x.transpose(1, 2) * 2` is laid out as `x`),
views slice and expand, and code after a partition may depend on that (`y.transpose(1, 2).view(2,
-1)` is valid only with eager's strides; an ATen op that stays eager keeps its input's strides).

Outputs (`OutputLayout`, from the output node's fake tensor): the Program computes an output
permuted to eager's memory order, a dense row-major array, and the partition returns the inverse
permutation of it, a view with eager's strides at no cost; a static-shape output whose size-1
dims eager strides differently is re-strided as a view too (`as_strided`, same elements), and a
non-dense one (rare: views are applied by torch, `OutputView`) is copied into `empty_strided`.
With symbolic sizes the memory order comes from the sizes' hints (a size-1 dim placed where the
permutation gives it eager's stride).

Inputs (`InputLayout`, from the placeholder's fake tensor), read in place:
- a permutation of a dense tensor (`x.t()`) enters permuted to its memory order and the Program
  transposes it back;
- a dim of stride 0 (`expand`) enters with size 1 and the Program broadcasts it;
- a static slice of a dense block (`qkv[..., 64:128]`, `x[:, 1:]`) enters as that block (an
  `as_strided` view of the same storage) and the Program slices it.
A call whose tensor has another layout than the traced one is made to fit by a copy where that is
possible (a different memory order, another offset of the slice), else `LayoutMismatch` makes the
partition run eagerly (a traced broadcast dim that is not one).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch  # pyright: ignore[reportMissingImports]

from cinn_py.diagnostics import CinnError


class LayoutMismatch(CinnError):
    """A call's tensor cannot enter the Program in the layout it was traced with."""


def static_int(value: Any) -> int | None:
    """An int size or stride, or a SymInt torch knows the value of; None for a symbolic one."""
    if isinstance(value, int):
        return value
    node = getattr(value, "node", None)
    return node.maybe_as_int() if node is not None else None


def hint(value: Any) -> int:
    """A size or stride as an int: its value, or for a symbolic one the value it was traced with."""
    known = static_int(value)
    if known is not None:
        return known
    from torch.fx.experimental.symbolic_shapes import optimization_hint  # noqa: PLC0415

    return int(optimization_hint(value, fallback=2))


def dense_order(shape: Sequence[int], strides: Sequence[int], size_one_strides: bool = False
                ) -> tuple[int, ...] | None:
    """The dims in memory order (outermost first) when `(shape, strides)` is a permutation of a
    dense row-major layout (size-1 dims may have any stride), else None. Ties keep dim order; a
    size-1 dim goes right after the dims before it, so that no needless transpose is made, or with
    `size_one_strides` where the permuted dense layout gives it its stride (where one does)."""
    order = sorted((k for k in range(len(shape)) if shape[k] != 1), key=lambda k: (-strides[k], k))
    for k in (k for k in range(len(shape)) if shape[k] == 1):
        at = max((order.index(j) + 1 for j in order if j < k), default=0)
        if size_one_strides:
            fits = [p for p in range(len(order) + 1) if math.prod(shape[j] for j in order[p:]) == strides[k]]
            at = at if at in fits or not fits else min(fits, key=lambda p: abs(p - at))
        order.insert(at, k)
    expected = 1
    for k in reversed(order):
        if shape[k] != 1 and strides[k] != expected:
            return None
        expected *= shape[k]
    return tuple(order)


def row_major_strides(shape: Sequence[int]) -> tuple[int, ...]:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def inverse(order: Sequence[int]) -> list[int]:
    return [list(order).index(k) for k in range(len(order))]


def _non_overlapping(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether no two elements share memory (the dims by stride, each past the extent of the inner ones)."""
    extent = 1
    for k in sorted((k for k in range(len(shape)) if shape[k] > 1), key=lambda k: strides[k]):
        if strides[k] < extent:
            return False
        extent = strides[k] * shape[k]
    return True


# -- outputs -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class OutputLayout:
    """How one Program output becomes a tensor with eager's strides (see the module docstring)."""

    order: tuple[int, ...] | None = None
    """The Program computes the output transposed to this memory order (outermost dim first)."""
    strides: tuple[int, ...] | None = None
    """Eager's static strides where the permuted view has others: applied as a view, or by a copy."""
    copy: bool = False
    """`strides` is not dense: the result is copied into `empty_strided`."""

    def __call__(self, t: Any) -> Any:
        if self.order is not None:
            t = t.permute(inverse(self.order))
        if self.strides is None:
            return t
        if not self.copy:
            return t.as_strided(t.shape, self.strides)
        out = torch.empty_strided(t.shape, self.strides, dtype=t.dtype, device=t.device)
        return out.copy_(t)


def output_layout(fake: Any) -> OutputLayout | None:
    """The layout eager gives the fake tensor `fake`; None when it is row-major (the Program's)."""
    if not isinstance(fake, torch.Tensor) or fake.layout != torch.strided:
        return None
    shape = [static_int(d) for d in fake.shape]
    strides = [static_int(s) for s in fake.stride()]
    if any(d is None for d in shape) or any(s is None for s in strides):
        order = dense_order([hint(d) for d in fake.shape], [hint(s) for s in fake.stride()],
                            size_one_strides=True)
        return OutputLayout(order) if order is not None and order != tuple(range(len(order))) else None
    sizes = tuple(int(d) for d in shape if d is not None)
    want = tuple(int(s) for s in strides if s is not None)
    if want == row_major_strides(sizes):
        return None
    if 0 in sizes:
        return OutputLayout(None, want)
    order = dense_order(sizes, want)
    if order is not None:
        permuted = tuple(row_major_strides([sizes[k] for k in order])[inverse(order)[k]] for k
                         in range(len(sizes)))
        identity = order == tuple(range(len(order)))
        if identity and permuted == want:
            return None
        return OutputLayout(None if identity else order, None if permuted == want else want)
    if _non_overlapping(sizes, want):
        return OutputLayout(None, want, copy=True)
    return None  # overlapping (stride 0) results come from views, which torch applies (`OutputView`)


# -- inputs --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class InputLayout:
    """How a strided tensor enters a Program without a copy (see the module docstring)."""

    order: tuple[int, ...]
    """The dims in memory order, outermost first: the Program input's dims are these."""
    broadcast: tuple[int, ...] = ()
    """Dims of stride 0 (an `expand`): they enter with size 1 and the Program broadcasts them."""
    block: tuple[int, ...] | None = None
    """A static slice: the dense block's sizes (in memory order) the tensor is cut from."""
    starts: tuple[int, ...] = ()
    """Where the slice starts in the block, per memory-order dim."""
    strides: tuple[int, ...] = ()
    """The traced strides of a static slice (a call with others is copied into a block)."""

    @property
    def permutes(self) -> bool:
        return self.order != tuple(range(len(self.order)))

    def entry_shape(self, dims: Sequence[Any]) -> list[Any]:
        """The Program input's shape for the tensor's dims `dims`."""
        if self.block is not None:
            return list(self.block)
        return [1 if k in self.broadcast else dims[k] for k in self.order]

    def build(self, nb: Any, var: Any, dims: Sequence[Any]) -> Any:
        """The Program's value of the tensor (dims in their logical order) from its input `var`."""
        memory = [dims[k] for k in self.order]
        if self.block is not None:
            entered = [1 if k in self.broadcast else int(dims[k]) for k in self.order]
            ends = [s + n for s, n in zip(self.starts, entered)]
            if list(self.block) != ends or any(self.starts):
                var = nb.slice(var, list(range(len(memory))), list(self.starts), ends)
        if self.broadcast:
            var = nb.broadcast_to(var, memory, list(range(len(memory))))
        return nb.transpose(var, inverse(self.order)) if self.permutes else var

    def view(self, t: Any) -> Any:
        """The tensor the Program takes for the call's tensor `t`: a view of `t`'s memory when `t`
        has the traced layout, else a copy into that layout (`LayoutMismatch` where none fits)."""
        for k in self.broadcast:
            if t.shape[k] != 1 and t.stride(k) != 0:
                raise LayoutMismatch(f"dim {k} was traced as a broadcast (stride 0), has stride "
                                     f"{t.stride(k)}")
        v = t.permute(self.order) if self.permutes else t
        for pos, k in enumerate(self.order):
            if k in self.broadcast:
                v = v.narrow(pos, 0, 1)
        if self.block is None:
            return v  # to_numpy copies it where its memory order is not the traced one
        block = self._block_view(t)
        return block if block is not None else self._block_copy(v)

    def _block_view(self, t: Any) -> Any:
        """The dense block around `t`, a view of the same storage; None where `t` has other strides
        (dims of size 1 aside) or the block would reach outside its storage."""
        if any(n != 1 and s != want for n, s, want in zip(t.shape, t.stride(), self.strides)):
            return None
        block = self.block or ()
        block_strides = row_major_strides(block)
        base = t.storage_offset() - sum(s * bs for s, bs in zip(self.starts, block_strides))
        size = 1
        for n in block:
            size *= n
        if base < 0 or (base + size) * t.element_size() > t.untyped_storage().nbytes():
            return None
        return t.as_strided(block, block_strides, base)

    def _block_copy(self, memory_view: Any) -> Any:
        """A fresh block with `memory_view` (the tensor in memory order) copied in at `starts`."""
        out = memory_view.new_empty(self.block)
        region = out
        for pos, (s, n) in enumerate(zip(self.starts, memory_view.shape)):
            region = region.narrow(pos, s, n)
        region.copy_(memory_view)
        return out


def input_layout(fake: Any) -> InputLayout | None:
    """How a tensor with the fake tensor's layout is read in place; None: as a row-major tensor."""
    if not isinstance(fake, torch.Tensor) or fake.layout != torch.strided or fake.dim() == 0:
        return None
    shape = [hint(d) for d in fake.shape]
    strides = [hint(s) for s in fake.stride()]
    broadcast = tuple(k for k in range(len(shape)) if strides[k] == 0 and shape[k] != 1)
    reduced = [1 if k in broadcast else n for k, n in enumerate(shape)]
    order = dense_order(reduced, strides)
    if order is not None:
        identity = order == tuple(range(len(order)))
        return None if identity and not broadcast else InputLayout(order, broadcast)
    static = all(static_int(v) is not None for v in (*fake.shape, *fake.stride(), fake.storage_offset()))
    return _slice_layout(reduced, strides, int(fake.storage_offset()), broadcast) if static else None


def _slice_layout(shape: list[int], strides: list[int], offset: int, broadcast: tuple[int, ...]
                  ) -> InputLayout | None:
    """The layout of a static slice of a dense block: the dims by decreasing stride, the innermost
    of stride 1, each stride a multiple of the next one's, the quotient the block's size there."""
    order = tuple(sorted(range(len(shape)), key=lambda k: (-strides[k], k)))
    inner = [k for k in order if shape[k] != 1]
    if not inner or strides[inner[-1]] != 1:
        return None
    block = {k: 1 for k in order}
    block[inner[0]] = shape[inner[0]]
    for outer, k in zip(inner, inner[1:]):
        if strides[outer] % strides[k] or strides[outer] // strides[k] < shape[k]:
            return None
        block[k] = strides[outer] // strides[k]
    sizes = tuple(block[k] for k in order)
    starts, rest = [], offset % strides[inner[0]] if len(inner) > 1 else 0
    for k, bs in zip(order, row_major_strides(sizes)):
        if k == inner[0] or block[k] == 1:
            starts.append(0)
            continue
        starts.append(rest // bs)
        rest -= starts[-1] * bs
    if any(s + shape[k] > block[k] for s, k in zip(starts, order)):
        # cut elsewhere when traced: this layout fits a call cut at the block's start
        starts = [0] * len(order)
    return InputLayout(order, broadcast, sizes, tuple(starts), tuple(strides))
