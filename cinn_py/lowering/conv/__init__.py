"""Tiled kernel templates of convolutions: `conv2d_tiled`, `conv2d_grad_data_tiled`,
`conv2d_grad_filter_tiled` (the CPU targets' forms of conv2d and its backward ops, see
`cinn_py.frontend.conv_gemm`), each an implicit GEMM (`cinn_py.lowering.conv.forward`).
`KERNELS[op]` lowers a group holding just that op (kNonFusible) to one LoweredFunc, as
`cinn_py.lowering.attention.KERNELS` does for attention."""

from __future__ import annotations

from cinn_py.frontend.ops.nn_tiled import epilogue_steps
from cinn_py.ir import IntImm, LoweredFunc, Tensor
from cinn_py.lowering.attention import Kernel
from cinn_py.lowering.conv.forward import (
    ConvGeometry, conv_forward_kernel, conv_grad_data_kernel, conv_grad_filter_kernel,
)

__all__ = ["KERNELS", "conv_geometry"]


def _dims(t: Tensor) -> tuple[int, ...]:
    return tuple(d.value for d in t.shape if isinstance(d, IntImm))


def conv_geometry(x: Tensor, w: Tensor, attrs: dict[str, object]) -> ConvGeometry:
    """The geometry of a convolution of x [N, C, H, W] (or [N, H, W, C] with data_format NHWC)
    by w [O, Cg, KH, KW] (static shapes and resolved window attrs, checked when the rewrite chose
    the template)."""
    channels_last = attrs.get("data_format") == "NHWC"
    n, c, h, wd = _dims(x)
    if channels_last:
        n, h, wd, c = _dims(x)
    o, _, kh, kw = _dims(w)
    return ConvGeometry(n, c, h, wd, o, int(attrs["groups"]), kh, kw,  # type: ignore[call-overload]
                        tuple(attrs["strides"]), tuple(attrs["dilations"]),  # type: ignore[arg-type]
                        tuple(attrs["pads"]), tuple(attrs["out_hw"]), x.dtype,  # type: ignore[arg-type]
                        channels_last)


def _forward(name: str, ins: list[Tensor], args: list[Tensor], out: Tensor,
             attrs: dict[str, object]) -> LoweredFunc:
    x, w = ins[:2]
    epilogue = [(kind, ins[k] if k >= 0 else None) for kind, k in epilogue_steps(attrs, len(ins))]
    return conv_forward_kernel(conv_geometry(x, w, attrs), name, x, w, out, args, epilogue)


def _grad_data(name: str, ins: list[Tensor], args: list[Tensor], out: Tensor,
               attrs: dict[str, object]) -> LoweredFunc:
    dy, w = ins
    return conv_grad_data_kernel(conv_geometry(out, w, attrs), name, dy, w, out, args)


def _grad_filter(name: str, ins: list[Tensor], args: list[Tensor], out: Tensor,
                 attrs: dict[str, object]) -> LoweredFunc:
    x, dy = ins
    return conv_grad_filter_kernel(conv_geometry(x, out, attrs), name, x, dy, out, args)


KERNELS: dict[str, Kernel] = {"conv2d_tiled": _forward, "conv2d_grad_data_tiled": _grad_data,
                              "conv2d_grad_filter_tiled": _grad_filter}
