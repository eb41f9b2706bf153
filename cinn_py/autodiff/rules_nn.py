"""Gradient rules of conv2d and pool2d: each is one backward op (nn_grad.py) emitted with the
forward op's resolved window geometry (pads, strides, dilations, output size), so the backward
sees exactly the windows the forward computed (SAME padding and ceil_mode included).

conv2d: dx = `conv2d_grad_data(dy, w)` onto the input's [H, W] (rows no window reaches get 0),
dw = `conv2d_grad_filter(x, dy)`. pool2d: dx = `pool2d_grad(x, dy)`: avg spreads each window's
cotangent divided by the forward's divisor, max routes it to the window's first maximum in
row-major order (PyTorch's tie rule).
"""

from __future__ import annotations

from cinn_py.autodiff.core import GradContext, define_grad
from cinn_py.frontend.program import Variable


@define_grad("conv2d")
def _conv2d(c: GradContext) -> list[Variable | None]:
    x, w = c.inputs
    layout = c.attrs["data_format"]
    hw = (x.shape[1], x.shape[2]) if layout == "NHWC" else (x.shape[2], x.shape[3])
    dx = c.nb.emit("conv2d_grad_data", [c.dout, w], {**c.attrs, "input_hw": hw})
    dw = c.nb.emit("conv2d_grad_filter", [x, c.dout], dict(c.attrs))
    return [dx, dw]


@define_grad("pool2d")
def _pool2d(c: GradContext) -> list[Variable | None]:
    return [c.nb.emit("pool2d_grad", [c.inputs[0], c.dout], dict(c.attrs))]
