"""Convolution and pooling, forward and backward (NetBuilder conv2d, conv2d_grad_*, pool2d, pool2d_grad).

A 1-d convolution is the 2-d one over a plane of height 1 (the input [N, C, L] as [N, C, 1, L],
the weight [O, I, K] as [O, I, 1, K], unit stride/padding/dilation along the new axis)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cinn_py.frontend.program import Variable
from cinn_py.torch.converters.base import (
    Emitter,
    Value,
    converts,
)


def _two(values: Any, default: Any = None) -> list[int]:
    """aten's int-or-list window argument as [h, w] (an empty list: `default`, pooling's stride)."""
    items = [values] if isinstance(values, int) else list(values)
    if not items and default is not None:
        return _two(default)
    return items * 2 if len(items) == 1 else items


def _static_plane(node: Any) -> tuple[int, int] | None:
    """The static (H, W) of a 4-d NCHW FX node, or None (another rank, symbolic, or not a node)."""
    shape = getattr(node, "meta", {}).get("val", None)
    shape = None if shape is None else tuple(shape.shape)
    if shape is None or len(shape) != 4 or not all(isinstance(d, int) for d in shape[2:]):
        return None
    return shape[2], shape[3]


def _static_line(node: Any) -> bool:
    """A 3-d NCL FX node with a static length (a 1-d convolution's input)."""
    shape = getattr(node, "meta", {}).get("val", None)
    return shape is not None and shape.dim() == 3 and isinstance(shape.shape[2], int)


def _conv_reason(x: Any, w: Any, bias: Any, stride: Any, padding: Any, dilation: Any, transposed: bool,
                 output_padding: Any, groups: int) -> str | None:
    if transposed or any(output_padding):
        return "transposed convolution"
    rank = len(w.meta["val"].shape)
    if not ((rank == 4 and _static_plane(x) is not None) or (rank == 3 and _static_line(x))):
        return "convolution other than 1-d or 2-d with static spatial dims"
    return None


def _conv_args(stride: Any, padding: Any, dilation: Any, groups: int, line: bool = False) -> dict[str, Any]:
    """conv2d's attributes; `line`: a 1-d convolution's, as a plane of height 1."""
    if line:
        return {"strides": [1, *_one(stride)], "paddings": [0, *_one(padding)],
                "dilations": [1, *_one(dilation)], "groups": groups}
    return {"strides": _two(stride), "paddings": _two(padding), "dilations": _two(dilation), "groups": groups}


def _one(values: Any) -> list[int]:
    return [values] if isinstance(values, int) else list(values)[:1]


def _as_plane(e: Emitter, v: Variable) -> Variable:
    """[A, B, L] as [A, B, 1, L]."""
    return e.to_shape(v, [v.shape[0], v.shape[1], 1, v.shape[2]])


@converts("aten.convolution.default", check=_conv_reason)
def _convolution(e: Emitter, x: Variable, w: Variable, bias: Variable | None, stride: Any, padding: Any,
                 dilation: Any, transposed: bool, output_padding: Any, groups: int) -> Value:
    line = x.ndim == 3
    if line:
        x, w = _as_plane(e, x), _as_plane(e, w)
    y = e.nb.conv2d(x, w, **_conv_args(stride, padding, dilation, groups, line))
    y = y if bias is None else e.nb.add(y, e.nb.broadcast_to(bias, list(y.shape), [1]))
    return e.to_shape(y) if line else y


def _conv_backward_reason(g: Any, x: Any, w: Any, bias_sizes: Any, stride: Any, padding: Any, dilation: Any,
                          transposed: bool, output_padding: Any, groups: int, mask: Any) -> str | None:
    return _conv_reason(x, w, None, stride, padding, dilation, transposed, output_padding, groups)


@converts("aten.convolution_backward.default", check=_conv_backward_reason)
def _convolution_backward(e: Emitter, g: Variable, x: Variable, w: Variable, bias_sizes: Any, stride: Any,
                          padding: Any, dilation: Any, transposed: bool, output_padding: Any, groups: int,
                          mask: Sequence[bool]) -> Value:
    """(dx, dw, dbias) as the conv2d rule computes them (conv2d_grad_data / _filter), the bias's
    the cotangent summed over batch and plane; None where `mask` asks for none."""
    line = x.ndim == 3
    nb, args = e.nb, _conv_args(stride, padding, dilation, groups, line)
    x_shape, w_shape = list(x.shape), list(w.shape)
    if line:
        g, x, w = _as_plane(e, g), _as_plane(e, x), _as_plane(e, w)
    dx = nb.conv2d_grad_data(g, w, [int(x.shape[2]), int(x.shape[3])], **args) if mask[0] else None
    dw = nb.conv2d_grad_filter(x, g, [int(w.shape[2]), int(w.shape[3])], **args) if mask[1] else None
    db = nb.reduce_sum(g, [0, 2, 3]) if mask[2] and bias_sizes else None
    if line:
        dx = None if dx is None else e.to_shape(dx, x_shape)
        dw = None if dw is None else e.to_shape(dw, w_shape)
    return dx, dw, db


def _pool_reason(x: Any, kernel: Any, stride: Any, padding: Any, ceil_mode: bool, divisor: Any = None,
                 inclusive: bool = False) -> str | None:
    """Why torch's pooling differs from pool2d's here: a ceil_mode window starting in the bottom or
    right padding (PyTorch drops it), or an inclusive average whose ceil_mode window runs past the
    padding (PyTorch divides by the clipped window, pool2d by KH * KW), a divisor_override."""
    plane = _static_plane(x)
    if plane is None:
        return "pooling other than 2-d with static spatial dims"
    inclusive = inclusive or divisor is not None  # the window sum, divided by the override
    for size, k, s, p in zip(plane, _two(kernel), _two(stride, kernel), _two(padding)):
        out = -(-(size + 2 * p - k) // s) + 1 if ceil_mode else (size + 2 * p - k) // s + 1
        if ceil_mode and (out - 1) * s >= size + p:
            return "ceil_mode window starting in the padding (PyTorch drops it, pool2d keeps it)"
        if inclusive and (out - 1) * s + k > size + 2 * p:
            return "avg_pool2d ceil_mode window past the padding with count_include_pad (divisor differs)"
    return None


def _max_pool_reason(x: Any, kernel: Any, stride: Any = (), padding: Any = 0, dilation: Any = 1,
                     ceil_mode: bool = False, *_: Any) -> str | None:
    if any(d != 1 for d in _two(dilation)):
        return "max_pool2d with dilation"
    return _pool_reason(x, kernel, stride, padding, ceil_mode)


def _pool_args(kind: str, kernel: Any, stride: Any, padding: Any, ceil_mode: bool,
               exclusive: bool = True) -> dict[str, Any]:
    return {"pooling_type": kind, "kernel_size": _two(kernel), "stride": _two(stride, kernel),
            "padding": _two(padding), "ceil_mode": ceil_mode, "exclusive": exclusive}


@converts("aten.max_pool2d_with_indices.default", check=_max_pool_reason)
def _max_pool(e: Emitter, x: Variable, kernel: Any, stride: Any = (), padding: Any = 0, dilation: Any = 1,
              ceil_mode: bool = False) -> Value:
    """(y, indices): the indices are `pool2d_argmax`'s, PyTorch's (the first maximum of a window)."""
    args = _pool_args("max", kernel, stride, padding, ceil_mode)
    indices = e.nb.pool2d_argmax(x, args["kernel_size"], stride=args["stride"], padding=args["padding"],
                                 ceil_mode=ceil_mode)
    return e.nb.pool2d(x, **args), indices


def _max_pool_backward_reason(g: Any, x: Any, kernel: Any, stride: Any, padding: Any, dilation: Any,
                              ceil_mode: bool, indices: Any) -> str | None:
    return _max_pool_reason(x, kernel, stride, padding, dilation, ceil_mode)


@converts("aten.max_pool2d_with_indices_backward.default", check=_max_pool_backward_reason)
def _max_pool_backward(e: Emitter, g: Variable, x: Variable, kernel: Any, stride: Any, padding: Any,
                       dilation: Any, ceil_mode: bool, indices: Variable) -> Value:
    """pool2d_grad finds each window's first maximum again from x: the positions `indices` holds."""
    return e.nb.pool2d_grad(x, g, **_pool_args("max", kernel, stride, padding, ceil_mode))


def _avg_pool_reason(x: Any, kernel: Any, stride: Any = (), padding: Any = 0, ceil_mode: bool = False,
                     count_include_pad: bool = True, divisor_override: Any = None) -> str | None:
    return _pool_reason(x, kernel, stride, padding, ceil_mode, divisor_override, count_include_pad)


def _override(e: Emitter, v: Variable, kernel: Any, divisor: Any) -> Variable:
    """An inclusive average (window sum / KH KW) as the window sum / `divisor` (divisor_override)."""
    if divisor is None:
        return v
    kh, kw = _two(kernel)
    return e.nb.scale(v, kh * kw / float(divisor))


@converts("aten.avg_pool2d.default", check=_avg_pool_reason)
def _avg_pool(e: Emitter, x: Variable, kernel: Any, stride: Any = (), padding: Any = 0,
              ceil_mode: bool = False,
              count_include_pad: bool = True, divisor_override: Any = None) -> Value:
    """divisor_override: the inclusive average rescaled (the window sum over the override)."""
    exclusive = not count_include_pad and divisor_override is None
    y = e.nb.pool2d(x, **_pool_args("avg", kernel, stride, padding, ceil_mode, exclusive))
    return _override(e, y, kernel, divisor_override)


def _avg_pool_backward_reason(g: Any, x: Any, kernel: Any, stride: Any, padding: Any, ceil_mode: bool,
                              count_include_pad: bool, divisor_override: Any) -> str | None:
    return _avg_pool_reason(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)


@converts("aten.avg_pool2d_backward.default", check=_avg_pool_backward_reason)
def _avg_pool_backward(e: Emitter, g: Variable, x: Variable, kernel: Any, stride: Any, padding: Any,
                       ceil_mode: bool, count_include_pad: bool, divisor_override: Any) -> Value:
    exclusive = not count_include_pad and divisor_override is None
    dx = e.nb.pool2d_grad(x, g, **_pool_args("avg", kernel, stride, padding, ceil_mode, exclusive))
    return _override(e, dx, kernel, divisor_override)


