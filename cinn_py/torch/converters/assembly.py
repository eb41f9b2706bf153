"""Tensors assembled from pieces or re-laid through computed flat positions: `block_diag`,
`_chunk_cat` (FSDP's gradient bucketing), and `as_strided` with its copy and scatter, as gathers
from (scatters into) the flattened input at positions offset + sum(index_k * stride_k).

`as_strided` reads the input's storage, not its logical elements: it converts only when the two
coincide (a contiguous input at storage offset 0 whose storage holds exactly its elements);
any other input stays in eager PyTorch, with the reason. A scatter whose positions overlap
(a zero stride) has no defined result order and stays eager too."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from cinn_py.frontend.ops.shapes import numel
from cinn_py.frontend.program import Variable
from cinn_py.torch.converters.base import Emitter, Value, converts, static_dim


def _fake(x: Any) -> Any:
    return getattr(x, "meta", {}).get("val")


def _static_shapes(op: str, xs: Sequence[Any]) -> str | None:
    for x in xs:
        fake = _fake(x)
        if fake is not None and not all(isinstance(s, int) for s in fake.shape):
            return f"{op} of symbolic shape {tuple(fake.shape)}"
    return None


@converts("aten.block_diag.default", check=lambda xs: _static_shapes("block_diag", xs))
def _block_diag(e: Emitter, xs: Sequence[Variable]) -> Value:
    """Each operand (0-d and 1-d: one row) padded with zeros left and right to the total width,
    the rows concatenated."""
    nb = e.nb
    blocks = [x if x.ndim == 2 else e.to_shape(x, [1, numel(x.shape)]) for x in xs]
    width = sum(static_dim(b.shape[1]) for b in blocks)
    rows, start = [], 0
    for b in blocks:
        b = b if str(b.dtype) == e.dtype else nb.cast(b, e.dtype)
        cols = static_dim(b.shape[1])
        rows.append(nb.pad(b, [[0, 0], [start, width - start - cols]], 0.0))
        start += cols
    return rows[0] if len(rows) == 1 else nb.concat(rows, axis=0)


@converts("aten._chunk_cat.default", check=lambda xs, dim, chunks: _static_shapes("_chunk_cat", xs))
def _chunk_cat(e: Emitter, xs: Sequence[Variable], dim: int, num_chunks: int) -> Value:
    """Each tensor's dims from `dim` on flattened, zero-padded to a multiple of `num_chunks` and
    split into [num_chunks, -1]; concatenated along the second."""
    nb = e.nb
    axis = dim % xs[0].ndim
    pieces = []
    for x in xs:
        lead = [static_dim(s) for s in x.shape[:axis]]
        size = static_dim(x.shape[axis])
        padded = -(-size // num_chunks) * num_chunks
        if padded != size:
            pads = [[0, 0] for _ in range(x.ndim)]
            pads[axis] = [0, padded - size]
            x = nb.pad(x, pads, 0.0)
        pieces.append(e.to_shape(x, [*lead, num_chunks, numel(x.shape[axis:]) // num_chunks]))
    return pieces[0] if len(pieces) == 1 else nb.concat(pieces, axis=axis + 1)


def _plain_storage(x: Any) -> str | None:
    """Why `x`'s storage is not just its elements in order (None: it is)."""
    fake = _fake(x)
    if fake is None:
        return None
    if not all(isinstance(s, int) for s in fake.shape):
        return f"as_strided of symbolic shape {tuple(fake.shape)}"
    if not fake.is_contiguous() or fake.storage_offset() != 0:
        return "as_strided of a strided view (it reads the storage, not the elements)"
    if fake.untyped_storage().nbytes() != fake.numel() * fake.element_size():
        return "as_strided of a tensor sharing a larger storage"
    return None


def _strided_fits(x: Any, size: Sequence[Any], stride: Sequence[Any], offset: Any = None) -> str | None:
    if not all(isinstance(v, int) for v in (*size, *stride, offset or 0)):
        return "as_strided with symbolic sizes or strides"
    return _plain_storage(x)


def _positions(e: Emitter, size: Sequence[int], stride: Sequence[int], offset: int) -> Variable:
    """int64 [*size]: offset + sum over k of index_k * stride_k."""
    nb = e.nb
    shape = list(size)
    total = nb.fill_constant(shape, offset, dtype="int64")
    for k, (n, s) in enumerate(zip(size, stride)):
        if n <= 1 or s == 0:
            continue
        line = nb.multiply(nb.arange(0, n, 1, "int64"), nb.fill_constant([n], s, dtype="int64"))
        total = nb.add(total, nb.broadcast_to(line, shape, [k]))
    return total


@converts("aten.as_strided.default", "aten.as_strided_copy.default", check=_strided_fits)
def _as_strided(e: Emitter, x: Variable, size: Sequence[int], stride: Sequence[int], offset: int | None = None
                ) -> Value:
    if numel(size) == 0:
        return e.nb.fill_constant(list(size), 0, dtype=e.dtype)
    flat = e.to_shape(x, [numel(x.shape)])
    positions = _positions(e, size, stride, offset or 0)
    return e.to_shape(e.nb.gather(flat, e.to_shape(positions, [numel(size)]), axis=0), list(size))


def _scatter_fits(x: Any, src: Any, size: Sequence[Any], stride: Sequence[Any], offset: Any = None
                  ) -> str | None:
    reason = _strided_fits(x, size, stride, offset)
    if reason is not None:
        return reason
    if any(n > 1 and s == 0 for n, s in zip(size, stride)):
        return "as_strided_scatter to overlapping positions (a zero stride)"
    if _prod(size) > _ENUMERATED:
        return f"as_strided_scatter of more than {_ENUMERATED} elements (overlap not checked)"
    places = [sum(i * s for i, s in zip(index, stride))
              for index in itertools.product(*(range(n) for n in size))]
    return "as_strided_scatter to overlapping positions" if len(set(places)) != len(places) else None


_ENUMERATED = 1 << 16
"""The largest scatter whose positions the check enumerates to rule out overlaps."""


def _prod(sizes: Sequence[int]) -> int:
    total = 1
    for n in sizes:
        total *= n
    return total


@converts("aten.as_strided_scatter.default", check=_scatter_fits)
def _as_strided_scatter(e: Emitter, x: Variable, src: Variable, size: Sequence[int], stride: Sequence[int],
                        offset: int | None = None) -> Value:
    """x with the elements as_strided(x, size, stride, offset) views replaced by src."""
    if numel(size) == 0:
        return x
    nb = e.nb
    rows = numel(size)
    flat = e.to_shape(x, [numel(x.shape)])
    src = src if str(src.dtype) == str(x.dtype) else nb.cast(src, str(x.dtype))
    positions = e.to_shape(_positions(e, size, stride, offset or 0), [rows])
    return e.to_shape(nb.scatter_assign(flat, e.to_shape(src, [rows]), positions, axis=0))
