"""Lowering of one fused group: `lower_group(group)` is the group as ONE LoweredFunc.

The group's inputs are placeholders, every op becomes the computes of its op definition,
intermediates become temp buffers (`cinn_py.lower(group.name, [inputs..., outputs...])`).
"""

from __future__ import annotations

from typing import Any

from cinn_py.frontend import checks
from cinn_py.frontend import compute as cdsl
from cinn_py.frontend.fusion import Group
from cinn_py.frontend.ops import get_op
from cinn_py.frontend.program import Variable
from cinn_py.ir import LoweredFunc, const
from cinn_py.lowering.ast_gen import lower
from cinn_py.lowering.attention import KERNELS as ATTENTION_KERNELS
from cinn_py.lowering.conv import KERNELS as CONV_KERNELS

KERNELS = {**ATTENTION_KERNELS, **CONV_KERNELS}
"""Ops lowered by a kernel template (each alone in its group) instead of their computes."""


def lower_group(group: Group) -> LoweredFunc:
    """One LoweredFunc for a fused group (the fused seed example is ONE function)."""
    if len(group.ops) == 1 and group.ops[0].type in KERNELS:
        return _lower_kernel(group)
    tensors: dict[int, Any] = {id(v): cdsl.placeholder(v.shape, v.dtype, v.name) for v in group.args}
    outputs = {id(v) for v in group.outputs}
    for op in group.ops:
        if op.type == "fill_constant" and id(op.output) not in outputs:
            # an intermediate constant is folded into its readers instead of becoming a temp buffer
            tensors[id(op.output)] = _Constant(op.attrs["value"], op.output)
            continue
        compute = get_op(op.type).compute
        if compute is None:  # fuse() rejects composite ops; only they lack a compute
            raise RuntimeError(f"op '{op.type}' has no compute definition")
        tensors[id(op.output)] = compute([tensors[id(v)] for v in op.inputs], op.attrs, op.output.type,
                                         op.output.name)
    return lower(group.name, [tensors[id(v)] for v in group.args] + [tensors[id(v)] for v in group.outputs])


def _lower_kernel(group: Group) -> LoweredFunc:
    """A compute-intensive op with a kernel template (`cinn_py.lowering.attention`,
    `cinn_py.lowering.conv`): the group is
    the op alone, its arguments the op's distinct inputs and its output."""
    (op,) = group.ops
    tensors = {id(v): cdsl.placeholder(v.shape, v.dtype, v.name).tensor for v in group.args}
    out = cdsl.placeholder(op.output.shape, op.output.dtype, op.output.name).tensor
    ins = [tensors[id(v)] for v in op.inputs]
    return KERNELS[op.type](group.name, ins, [tensors[id(v)] for v in group.args], out, dict(op.attrs))


class _Constant:
    """Stands for a uniform intermediate tensor in the computes: every element reads as the value."""

    def __init__(self, value: Any, var: Variable) -> None:
        self.value = value
        self.dtype = var.dtype
        self.shape = checks.normalize_shape(var.shape, var.name)[0]
        self.ndim = len(self.shape)
        self.name = var.name

    def __getitem__(self, indices: Any) -> Any:
        return const(self.value, self.dtype)
