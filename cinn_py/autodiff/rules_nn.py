"""Gradient rules of conv2d and pool2d: each is one backward op (nn_grad.py) emitted with the
forward op's resolved window geometry (pads, strides, dilations, output size), so the backward
sees exactly the windows the forward computed (SAME padding and ceil_mode included).

conv2d: dx = `conv2d_grad_data(dy, w)` onto the input's [H, W] (rows no window reaches get 0),
dw = `conv2d_grad_filter(x, dy)`. pool2d: dx = `pool2d_grad(x, dy)`: avg spreads each window's
cotangent divided by the forward's divisor, max routes it to the window's first maximum in
row-major order (PyTorch's tie rule).

Second order: the backward ops are bilinear (conv) or linear in dy (pool), so their rules are the
forward ops again: <g, conv2d_grad_data(dy, w)> = <conv2d(g, w), dy>, so d/d(dy) is `conv2d(g, w)`
and d/dw `conv2d_grad_filter(g, dy)`; likewise for `conv2d_grad_filter`. `pool2d_grad`'s d/d(dy)
is the average pooling of g (avg), or g read at each window's first maximum (max: `pool2d_argmax`
and a `gather`); its x only picks the windows' maxima, a piecewise constant choice: no gradient.
"""

from __future__ import annotations

from typing import Any

from cinn_py.autodiff.core import GradContext, define_grad
from cinn_py.frontend.net_builder import NetBuilder
from cinn_py.frontend.program import Variable


def _plane(x: Variable, layout: str) -> tuple[Any, Any]:
    return (x.shape[1], x.shape[2]) if layout == "NHWC" else (x.shape[2], x.shape[3])


def _conv_attrs(attrs: Any) -> dict[str, Any]:
    """A backward op's attrs as the forward conv2d's (its window geometry, without input_hw)."""
    return {k: v for k, v in attrs.items() if k != "input_hw"}


@define_grad("conv2d", "conv2d_tiled")  # conv2d_tiled: the CPU targets' conv2d (frontend/conv_gemm.py)
def _conv2d(c: GradContext) -> list[Variable | None]:
    x, w = c.inputs
    dx = c.nb.emit("conv2d_grad_data", [c.dout, w],
                   {**c.attrs, "input_hw": _plane(x, c.attrs["data_format"])})
    dw = c.nb.emit("conv2d_grad_filter", [x, c.dout], dict(c.attrs))
    return [dx, dw]


@define_grad("pool2d")
def _pool2d(c: GradContext) -> list[Variable | None]:
    return [c.nb.emit("pool2d_grad", [c.inputs[0], c.dout], dict(c.attrs))]


@define_grad("conv2d_grad_data", "conv2d_grad_data_tiled")
def _conv2d_grad_data(c: GradContext) -> list[Variable | None]:
    dy, _ = c.inputs
    attrs = _conv_attrs(c.attrs)
    return [c.nb.emit("conv2d", [c.dout, c.inputs[1]], attrs),
            c.nb.emit("conv2d_grad_filter", [c.dout, dy], attrs)]


@define_grad("conv2d_grad_filter", "conv2d_grad_filter_tiled")
def _conv2d_grad_filter(c: GradContext) -> list[Variable | None]:
    x, dy = c.inputs
    attrs = _conv_attrs(c.attrs)
    dx = c.nb.emit("conv2d_grad_data", [dy, c.dout], {**attrs, "input_hw": _plane(x, attrs["data_format"])})
    return [dx, c.nb.emit("conv2d", [x, c.dout], attrs)]


@define_grad("pool2d_grad")
def _pool2d_grad(c: GradContext) -> list[Variable | None]:
    x, _ = c.inputs
    if c.attrs["pooling_type"] == "avg":
        return [None, c.nb.emit("pool2d", [c.dout], dict(c.attrs))]
    return [None, _at_first_max(c.nb, c.dout, c.nb.emit("pool2d_argmax", [x], dict(c.attrs)), c.attrs)]


def _at_first_max(nb: NetBuilder, g: Variable, index: Variable, attrs: Any) -> Variable:
    """g (x's shape) read at each window's first maximum (`index`: h * W + w, -1 for none: 0)."""
    nhwc = attrs["data_format"] == "NHWC"
    n, c = index.shape[0], index.shape[3 if nhwc else 1]
    h, w = _plane(g, attrs["data_format"])
    oh, ow = attrs["out_hw"]
    axis = 1 if nhwc else 2
    flat_g = nb.reshape(g, [n, h * w, c] if nhwc else [n, c, h * w])
    flat_i = nb.reshape(index, [n, oh * ow, c] if nhwc else [n, c, oh * ow])
    covered = nb.greater_equal(flat_i, nb.fill_constant(list(flat_i.shape), 0, dtype="int64"))
    safe = nb.select(covered, flat_i, nb.fill_constant(list(flat_i.shape), 0, dtype="int64"))
    picked = nb.gather(flat_g, safe, axis=axis)
    picked = nb.select(covered, picked, nb.fill_constant(list(flat_i.shape), 0.0, dtype=g.dtype))
    return nb.reshape(picked, list(index.shape))
