"""The convolutions lowered by the tiled implicit-GEMM kernel templates (`cinn_py.lowering.conv`)
instead of their direct computes: `conv2d_tiled`, `conv2d_grad_data_tiled`,
`conv2d_grad_filter_tiled`. Ops only passes build: the CPU targets' rewrite
(`cinn_py.frontend.conv_gemm`) turns a static NCHW float32/float64 conv2d (or backward op) into
its tiled form with the same inputs and resolved attributes; shape rules and numpy references
are the originals'."""

from __future__ import annotations

from cinn_py.frontend.ops.base import OpDef, OpPatternKind, register
from cinn_py.frontend.ops.nn import _conv_infer, _conv_numpy
from cinn_py.frontend.ops.nn_grad import _data_infer, _data_numpy, _filter_infer, _filter_numpy

__all__: list[str] = []

register(OpDef("conv2d_tiled", OpPatternKind.kNonFusible, _conv_infer, _conv_numpy, None, arity=2))
register(OpDef("conv2d_grad_data_tiled", OpPatternKind.kNonFusible, _data_infer, _data_numpy, None, arity=2))
register(OpDef("conv2d_grad_filter_tiled", OpPatternKind.kNonFusible, _filter_infer, _filter_numpy, None,
               arity=2))
