"""Adaptive average/max pooling (2-d, NCHW), forward and backward.

Adaptive pooling whose output divides the input is a plain pool2d (kernel = stride = in / out);
a global average pool is a mean over H, W. Otherwise adaptive average pooling is separable:
out = A_h x A_w^T with A[o, i] = 1 / |window o| on window o's rows [floor(o in / out),
ceil((o + 1) in / out)), built from `arange` and two matmuls (the backward: the transposes).

Interpolation (`F.interpolate`, nearest and bilinear) needs no converter here: AOT autograd
decomposes `upsample_*2d` into `arange` arithmetic and `_unsafe_index` gathers before the
backend sees the graph.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cinn_py.frontend.program import Variable
from cinn_py.torch.converters.base import Emitter, Value, converts


def _fake(node: Any) -> Any:
    return getattr(node, "meta", {}).get("val")


def _static_4d(op: str, x: Any) -> str | None:
    fake = _fake(x)
    if fake is None:
        return None
    if fake.dim() != 4:
        return f"{op} of a {fake.dim()}-d input (2-d NCHW only)"
    bad = [d for d in fake.shape if not isinstance(d, int)]
    return f"{op} with the symbolic extent {bad[0]}" if bad else None


def _divides(size: int, out: int) -> bool:
    return out > 0 and size % out == 0


# ---------------------------------------------------------------------------------------------------------
# adaptive pooling
# ---------------------------------------------------------------------------------------------------------
def _window_matrix(e: Emitter, size: int, out: int, dtype: str) -> Variable:
    """[out, size]: 1 / |window o| where row o's window covers input i, else 0."""
    nb = e.nb
    o = nb.broadcast_to(nb.arange(0, out, 1, dtype="int64"), [out, size], [0])
    i = nb.broadcast_to(nb.arange(0, size, 1, dtype="int64"), [out, size], [1])
    start = nb.floor_divide(nb.multiply(o, size), out)
    end = nb.floor_divide(nb.add(nb.multiply(nb.add(o, 1), size), out - 1), out)  # ceil((o + 1) in / out)
    inside = nb.logical_and(nb.greater_equal(i, start), nb.less_than(i, end))
    weight = nb.reciprocal(nb.cast(nb.subtract(end, start), dtype))
    return nb.select(inside, weight, nb.fill_constant([out, size], 0.0, dtype=dtype))


def _separable(e: Emitter, x: Variable, rows: Variable, cols: Variable) -> Variable:
    """rows x cols^T over the last two axes of x (rows [OH, H], cols [OW, W])."""
    nb = e.nb
    y = nb.matmul(x, cols, transpose_y=True)  # [N, C, H, OW]
    t = nb.matmul(nb.transpose(y, [0, 1, 3, 2]), rows, transpose_y=True)  # [N, C, OW, OH]
    return nb.transpose(t, [0, 1, 3, 2])


def _adaptive_kernel(x: Variable, out: Sequence[int]) -> list[int] | None:
    h, w = int(x.shape[2]), int(x.shape[3])
    oh, ow = int(out[0]), int(out[1])
    return [h // oh, w // ow] if _divides(h, oh) and _divides(w, ow) else None


def _avg_reason(x: Any, out: Sequence[Any]) -> str | None:
    if any(not isinstance(d, int) for d in out):
        return "adaptive_avg_pool2d to a symbolic size"
    return _static_4d("adaptive_avg_pool2d", x)


@converts("aten._adaptive_avg_pool2d.default", "aten.adaptive_avg_pool2d.default", check=_avg_reason)
def _adaptive_avg(e: Emitter, x: Variable, out: Sequence[int]) -> Value:
    nb = e.nb
    if list(out) == [1, 1]:
        return nb.reduce_mean(x, [2, 3], keep_dim=True)
    kernel = _adaptive_kernel(x, out)
    if kernel is not None:
        return nb.pool2d(x, pooling_type="avg", kernel_size=kernel, stride=kernel, padding=[0, 0])
    dtype = str(x.dtype)
    rows = _window_matrix(e, int(x.shape[2]), int(out[0]), dtype)
    return _separable(e, x, rows, _window_matrix(e, int(x.shape[3]), int(out[1]), dtype))


@converts("aten._adaptive_avg_pool2d_backward.default",
          check=lambda g, x: _static_4d("adaptive_avg_pool2d", x))
def _adaptive_avg_backward(e: Emitter, g: Variable, x: Variable) -> Value:
    nb = e.nb
    out = [int(g.shape[2]), int(g.shape[3])]
    h, w = int(x.shape[2]), int(x.shape[3])
    if out == [1, 1]:
        return nb.broadcast_to(nb.scale(g, 1.0 / (h * w)), list(x.shape), [0, 1, 2, 3])
    kernel = _adaptive_kernel(x, out)
    if kernel is not None:
        return nb.pool2d_grad(x, g, pooling_type="avg", kernel_size=kernel, stride=kernel, padding=[0, 0])
    dtype = str(g.dtype)
    rows, cols = _window_matrix(e, h, out[0], dtype), _window_matrix(e, w, out[1], dtype)
    return _separable(e, g, nb.transpose(rows, [1, 0]), nb.transpose(cols, [1, 0]))


def _max_reason(x: Any, out: Sequence[Any]) -> str | None:
    reason = _static_4d("adaptive_max_pool2d", x)
    if reason is not None or _fake(x) is None:
        return reason
    h, w = _fake(x).shape[2:]
    if not (_divides(h, int(out[0])) and _divides(w, int(out[1]))):
        return f"adaptive_max_pool2d from {h}x{w} to {out[0]}x{out[1]} (overlapping windows)"
    return None


@converts("aten.adaptive_max_pool2d.default", check=_max_reason)
def _adaptive_max(e: Emitter, x: Variable, out: Sequence[int]) -> Value:
    """(out, indices): a max pool with kernel = stride = in / out; indices are pool2d_argmax's."""
    kernel = _adaptive_kernel(x, out)
    assert kernel is not None
    y = e.nb.pool2d(x, pooling_type="max", kernel_size=kernel, stride=kernel, padding=[0, 0])
    return y, e.nb.pool2d_argmax(x, kernel, stride=kernel, padding=[0, 0])


@converts("aten.adaptive_max_pool2d_backward.default",
          check=lambda g, x, indices: _max_reason(x, list(_fake(g).shape[2:]) if _fake(g) is not None
                                                  else [1, 1]))
def _adaptive_max_backward(e: Emitter, g: Variable, x: Variable, indices: Variable) -> Value:
    kernel = _adaptive_kernel(x, [int(g.shape[2]), int(g.shape[3])])
    assert kernel is not None
    return e.nb.pool2d_grad(x, g, pooling_type="max", kernel_size=kernel, stride=kernel, padding=[0, 0])
