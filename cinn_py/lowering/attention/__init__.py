"""Tiled kernel templates of the compute-intensive ops the compute DSL cannot express: fused
attention (`flash_attention`, `flash_attention_grad`). `KERNELS[op]` lowers a group holding
just that op (kNonFusible: it is always alone) to one LoweredFunc."""

from __future__ import annotations

from collections.abc import Callable

from cinn_py.ir import LoweredFunc, Tensor
from cinn_py.lowering.attention.backward import backward_kernel
from cinn_py.lowering.attention.forward import forward_kernel
from cinn_py.lowering.attention.tiles import Geometry

__all__ = ["KERNELS", "Kernel", "geometry"]


def geometry(ins: list[Tensor], attrs: dict[str, object], mask: Tensor | None) -> Geometry:
    """The Geometry of an attention op with inputs q, k, v (static shapes, checked by its infer)."""
    b, hq, l, e = (int(d.value) for d in ins[0].shape)  # type: ignore[attr-defined]
    _, hk, s, _ = (int(d.value) for d in ins[1].shape)  # type: ignore[attr-defined]
    ev = int(ins[2].shape[-1].value)  # type: ignore[attr-defined]
    mask_shape = tuple(int(d.value) for d in mask.shape) if mask is not None else None  # type: ignore[attr-defined]
    return Geometry(b, hq, hk, l, s, e, ev, float(attrs["scale"]), bool(attrs["causal"]),  # type: ignore[arg-type]
                    mask_shape, mask is not None and mask.dtype.is_bool, ins[0].dtype)


def _forward(name: str, ins: list[Tensor], args: list[Tensor], out: Tensor,
             attrs: dict[str, object]) -> LoweredFunc:
    mask = ins[3] if len(ins) == 4 else None
    return forward_kernel(geometry(ins, attrs, mask), name, ins[:3], mask, out, args)


def _backward(name: str, ins: list[Tensor], args: list[Tensor], out: Tensor,
              attrs: dict[str, object]) -> LoweredFunc:
    mask = ins[5] if len(ins) == 6 else None
    return backward_kernel(geometry(ins, attrs, mask), name, ins[:5], mask, out, args)


Kernel = Callable[[str, list[Tensor], list[Tensor], Tensor, dict[str, object]], LoweredFunc]
"""(function name, the op's input tensors in order, the function's distinct input arguments,
the output tensor, the op's attrs) -> the lowered kernel."""

KERNELS: dict[str, Kernel] = {
    "flash_attention": _forward,
    "flash_attention_grad": _backward,
}
