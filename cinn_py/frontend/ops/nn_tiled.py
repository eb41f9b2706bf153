"""The convolutions lowered by the tiled implicit-GEMM kernel templates (`cinn_py.lowering.conv`)
instead of their direct computes: `conv2d_tiled`, `conv2d_grad_data_tiled`,
`conv2d_grad_filter_tiled`. Ops only passes build: the CPU targets' rewrite
(`cinn_py.frontend.conv_gemm`) turns a static float32/float64 conv2d (or backward op) into its
tiled form with the same inputs and resolved attributes; shape rules and numpy references are
the originals'.

`conv2d_tiled(x, w, *epilogue_inputs)` may carry a fused epilogue (`cinn_py.frontend.conv_epilogue`):
attribute `epilogue`, steps applied in order to the convolution's result: "relu",
"channel_add:<i>" / "channel_mul:<i>" (input i holds one value per output channel, size 1 in
its other dims: bias, folded batch norm), "add:<i>" (input i has the output's shape: residual).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cinn_py.frontend.ops.base import (
    Attrs, FrontendError, OpDef, OpPatternKind, SymbolEnv, TensorType, register,
)
from cinn_py.frontend.ops.nn import _conv_infer, _conv_numpy
from cinn_py.frontend.ops.nn_grad import _data_infer, _data_numpy, _filter_infer, _filter_numpy
from cinn_py.frontend.ops.shapes import fmt_shape

__all__ = ["epilogue_steps"]

_KINDS = ("relu", "channel_add", "channel_mul", "add")


def epilogue_steps(attrs: Attrs, arity: int) -> list[tuple[str, int]]:
    """The epilogue as (kind, input index) pairs (-1 for relu), checked against the op's arity."""
    steps: list[tuple[str, int]] = []
    for step in attrs.get("epilogue", ()):
        kind, _, index = str(step).partition(":")
        if kind not in _KINDS or (kind == "relu") != (index == "") or \
                (index and not (index.isdigit() and 2 <= int(index) < arity)):
            raise FrontendError(f"conv2d_tiled: epilogue step '{step}' must be one of relu, channel_add:<i>, "
                                f"channel_mul:<i>, add:<i> with 2 <= i < {arity} (the op's inputs)")
        steps.append((kind, int(index) if index else -1))
    return steps


def _infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    if len(ins) < 2:
        raise FrontendError(f"conv2d_tiled: expects x, w and the epilogue's inputs, got {len(ins)} "
                            "operand(s)")
    (out,) = _conv_infer(ins[:2], attrs)
    channel = 1 if attrs["data_format"] == "NCHW" else 3
    for kind, k in epilogue_steps(attrs, len(ins)):
        if k < 0:
            continue
        t = ins[k]
        if kind == "add":
            want = tuple(out.shape)
        else:
            want = tuple(out.shape[channel] if a == channel else 1 for a in range(4))
        if tuple(t.shape) != want or t.dtype != out.dtype:
            raise FrontendError(f"conv2d_tiled: epilogue step '{kind}:{k}' needs input {k} of "
                                f"{out.dtype}{fmt_shape(want)}, got {t.dtype}{fmt_shape(t.shape)}")
    return [out]


def _numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    (y,) = _conv_numpy(arrays[:2], attrs, env)
    channel = 1 if attrs["data_format"] == "NCHW" else 3
    for kind, k in epilogue_steps(attrs, len(arrays)):
        if kind == "relu":
            y = np.maximum(y, 0).astype(y.dtype)
        elif kind == "add":
            y = y + arrays[k]
        else:
            v = arrays[k].reshape([-1 if a == channel else 1 for a in range(4)])
            y = y + v if kind == "channel_add" else y * v
    return [y]


register(OpDef("conv2d_tiled", OpPatternKind.kNonFusible, _infer, _numpy, None, arity=None))
register(OpDef("conv2d_grad_data_tiled", OpPatternKind.kNonFusible, _data_infer, _data_numpy, None, arity=2))
register(OpDef("conv2d_grad_filter_tiled", OpPatternKind.kNonFusible, _filter_infer, _filter_numpy, None,
               arity=2))
