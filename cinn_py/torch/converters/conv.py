"""Convolution and pooling, forward and backward (NetBuilder conv2d, conv2d_grad_*, pool2d, pool2d_grad)."""

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


def _conv_reason(x: Any, w: Any, bias: Any, stride: Any, padding: Any, dilation: Any, transposed: bool,
                 output_padding: Any, groups: int) -> str | None:
    if transposed or any(output_padding):
        return "transposed convolution"
    if _static_plane(x) is None or len(w.meta["val"].shape) != 4:
        return "convolution other than 2-d with static spatial dims"
    return None


def _conv_args(stride: Any, padding: Any, dilation: Any, groups: int) -> dict[str, Any]:
    return {"strides": _two(stride), "paddings": _two(padding), "dilations": _two(dilation), "groups": groups}


@converts("aten.convolution.default", check=_conv_reason)
def _convolution(e: Emitter, x: Variable, w: Variable, bias: Variable | None, stride: Any, padding: Any,
                 dilation: Any, transposed: bool, output_padding: Any, groups: int) -> Value:
    y = e.nb.conv2d(x, w, **_conv_args(stride, padding, dilation, groups))
    return y if bias is None else e.nb.add(y, e.nb.broadcast_to(bias, list(y.shape), [1]))


def _conv_backward_reason(g: Any, x: Any, w: Any, bias_sizes: Any, stride: Any, padding: Any, dilation: Any,
                          transposed: bool, output_padding: Any, groups: int, mask: Any) -> str | None:
    return _conv_reason(x, w, None, stride, padding, dilation, transposed, output_padding, groups)


@converts("aten.convolution_backward.default", check=_conv_backward_reason)
def _convolution_backward(e: Emitter, g: Variable, x: Variable, w: Variable, bias_sizes: Any, stride: Any,
                          padding: Any, dilation: Any, transposed: bool, output_padding: Any, groups: int,
                          mask: Sequence[bool]) -> Value:
    """(dx, dw, dbias) as the conv2d rule computes them (conv2d_grad_data / _filter), the bias's
    the cotangent summed over batch and plane; None where `mask` asks for none."""
    nb, args = e.nb, _conv_args(stride, padding, dilation, groups)
    dx = nb.conv2d_grad_data(g, w, [int(x.shape[2]), int(x.shape[3])], **args) if mask[0] else None
    dw = nb.conv2d_grad_filter(x, g, [int(w.shape[2]), int(w.shape[3])], **args) if mask[1] else None
    db = nb.reduce_sum(g, [0, 2, 3]) if mask[2] and bias_sizes else None
    return dx, dw, db


def _pool_reason(x: Any, kernel: Any, stride: Any, padding: Any, ceil_mode: bool, divisor: Any = None,
                 inclusive: bool = False) -> str | None:
    """Why torch's pooling differs from pool2d's here: a ceil_mode window starting in the bottom or
    right padding (PyTorch drops it), or an inclusive average whose ceil_mode window runs past the
    padding (PyTorch divides by the clipped window, pool2d by KH * KW), a divisor_override."""
    plane = _static_plane(x)
    if plane is None:
        return "pooling other than 2-d with static spatial dims"
    if divisor is not None:
        return "avg_pool2d with divisor_override"
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


@converts("aten.avg_pool2d.default", check=_avg_pool_reason)
def _avg_pool(e: Emitter, x: Variable, kernel: Any, stride: Any = (), padding: Any = 0,
              ceil_mode: bool = False,
              count_include_pad: bool = True, divisor_override: Any = None) -> Value:
    return e.nb.pool2d(x, **_pool_args("avg", kernel, stride, padding, ceil_mode, not count_include_pad))


def _avg_pool_backward_reason(g: Any, x: Any, kernel: Any, stride: Any, padding: Any, ceil_mode: bool,
                              count_include_pad: bool, divisor_override: Any) -> str | None:
    return _avg_pool_reason(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)


@converts("aten.avg_pool2d_backward.default", check=_avg_pool_backward_reason)
def _avg_pool_backward(e: Emitter, g: Variable, x: Variable, kernel: Any, stride: Any, padding: Any,
                       ceil_mode: bool, count_include_pad: bool, divisor_override: Any) -> Value:
    return e.nb.pool2d_grad(x, g,
                            **_pool_args("avg", kernel, stride, padding, ceil_mode, not count_include_pad))


