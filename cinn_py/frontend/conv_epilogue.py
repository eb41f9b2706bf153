"""Epilogues fused into `conv2d_tiled`: the elementwise ops that follow a convolution (bias,
folded batch norm, residual add, relu) become steps of the kernel's store, so the output is
written once, finished, instead of re-read by a separate elementwise kernel.

Rewrites (part of `conv_to_gemm`, after conv2d became `conv2d_tiled`), each taking a
single-use `conv2d_tiled` y:

    add(y, broadcast_to(v, .., channel axis))    -> step "channel_add:<i>"   (bias, BN shift)
    multiply(y, broadcast_to(v, .., channel axis)) -> step "channel_mul:<i>" (BN scale)
    add(y, r)   with r of y's shape and dtype    -> step "add:<i>"           (residual)
    relu(y)                                      -> step "relu"

`<i>` is the operand's position among the op's inputs (x, w, then the epilogue's tensors); a
per-channel vector `v` holds y's channels along one dim and has size 1 elsewhere. The steps
run in order on the accumulator (`epilogue` attribute, a tuple of strings).
"""

from __future__ import annotations

from cinn_py.frontend.net_builder import NetBuilder
from cinn_py.frontend.ops.shapes import shapes_equal
from cinn_py.frontend.program import Operator, Variable
from cinn_py.frontend.rewrite import Match, OpPat, Rewrite, op, var

__all__ = ["EPILOGUE_RULES", "MAX_EPILOGUE_INPUTS", "channel_vector"]

MAX_EPILOGUE_INPUTS = 4
"""Tensors an epilogue may read (bias, scale, shift, residual)."""


def _conv(arity: int, layout: str | None = None) -> OpPat:
    def fits(conv: Operator) -> bool:
        return layout is None or conv.attrs["data_format"] == layout
    return op("conv2d_tiled", *(var(f"in{k}") for k in range(arity)), where=fits, name="conv")


def channel_vector(bcast: Operator, layout: str) -> bool:
    """Whether `bcast` (broadcast_to) gives each channel of its 4-d output one value of its input:
    the input's dims are 1 but the one mapped to the channel axis of `layout`."""
    channel = 1 if layout == "NCHW" else 3
    axes, shape = bcast.attrs["broadcast_axes"], bcast.attrs["shape"]
    v = bcast.inputs[0]
    if len(shape) != 4 or channel not in axes:
        return False
    return all(d == (shape[channel] if a == channel else 1) for d, a in zip(v.shape, axes))


def _inputs(m: Match, arity: int) -> list[Variable]:
    return [m[f"in{k}"] for k in range(arity)]


def _emit(nb: NetBuilder, m: Match, inputs: list[Variable], step: str) -> Variable:
    conv = m.op("conv").attrs
    attrs = {**conv, "epilogue": (*conv.get("epilogue", ()), step)}
    return nb.emit("conv2d_tiled", inputs, attrs, name=m.name)


def _relu(arity: int) -> Rewrite:
    def build(nb: NetBuilder, m: Match) -> Variable:
        return _emit(nb, m, _inputs(m, arity), "relu")
    return Rewrite(f"conv_epilogue_relu_{arity}", op("relu", _conv(arity)), build)


def _channel(kind: str, arity: int, layout: str) -> Rewrite:
    def build(nb: NetBuilder, m: Match) -> Variable:
        v, channels = m["v"], m.root.output.shape[1 if layout == "NCHW" else 3]
        shape = [1, channels, 1, 1] if layout == "NCHW" else [1, 1, 1, channels]
        if list(v.shape) != shape:  # [O] or [1, O] ...: the [1, O, 1, 1] (or NHWC) view of its elements
            v = nb.reshape(v, shape)
        return _emit(nb, m, [*_inputs(m, arity), v], f"channel_{kind}:{arity}")

    pattern = op("add" if kind == "add" else "multiply", _conv(arity, layout),
                 op("broadcast_to", var("v"), where=lambda b: channel_vector(b, layout)), commutative=True)
    return Rewrite(f"conv_epilogue_channel_{kind}_{layout}_{arity}", pattern, build)


def _same_operands(root: Operator) -> bool:
    a, b = root.inputs
    return shapes_equal(tuple(a.shape), tuple(b.shape)) and a.dtype == b.dtype


def _residual(arity: int) -> Rewrite:
    def build(nb: NetBuilder, m: Match) -> Variable:
        return _emit(nb, m, [*_inputs(m, arity), m["r"]], f"add:{arity}")

    return Rewrite(f"conv_epilogue_residual_{arity}",
                   op("add", _conv(arity), var("r"), commutative=True, where=_same_operands), build)


def _rules() -> tuple[Rewrite, ...]:
    rules: list[Rewrite] = []
    for arity in range(2, 2 + MAX_EPILOGUE_INPUTS + 1):
        rules.append(_relu(arity))
        if arity < 2 + MAX_EPILOGUE_INPUTS:
            rules += [_channel(kind, arity, layout) for kind in ("add", "mul") for layout in ("NCHW", "NHWC")]
            rules.append(_residual(arity))
    return tuple(rules)


EPILOGUE_RULES: tuple[Rewrite, ...] = _rules()
