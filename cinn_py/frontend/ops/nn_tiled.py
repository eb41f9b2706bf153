"""`conv2d_tiled`: conv2d lowered by the tiled implicit-GEMM kernel template
(`cinn_py.lowering.conv`) instead of its direct compute. An op only passes build: the CPU
targets' rewrite (`cinn_py.frontend.conv_gemm`) turns a static NCHW float conv2d into it, with
conv2d's resolved attributes (kernel, strides, pads, dilations, out_hw, groups, layout); its
shape rule and numpy reference are conv2d's."""

from __future__ import annotations

from cinn_py.frontend.ops.base import OpDef, OpPatternKind, register
from cinn_py.frontend.ops.nn import _conv_infer, _conv_numpy

__all__: list[str] = []

register(OpDef("conv2d_tiled", OpPatternKind.kNonFusible, _conv_infer, _conv_numpy, None, arity=2))
