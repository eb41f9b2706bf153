"""A program compiled group by group (`cinn_py.compile_program`): runs its kernels in order."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from cinn_py.frontend.fusion import FusionPlan, Group
from cinn_py.frontend.program import Program, bind_inputs, frontend_array, pack
from cinn_py.ir import LoweredFunc, bfloat16
from cinn_py.target import Target


class CompiledProgram:
    """A program compiled group by group; `compiled(*inputs)` returns the outputs."""

    def __init__(self, program: Program, fusion: FusionPlan, funcs: Sequence[LoweredFunc],
                 kernels: Sequence[Any], target: str) -> None:
        self.program = program
        self.plan = fusion
        self.funcs = tuple(funcs)
        self.kernels = tuple(kernels)
        self.target = target
        self.steps = tuple(_reshape_view(group, fusion, target) or kernel
                            for group, kernel in zip(fusion.groups, self.kernels))
        """What `run_bound` calls per group: the kernel, or a `ReshapeView` in its place."""

    @property
    def groups(self) -> tuple[Group, ...]:
        return self.plan.groups

    def __call__(self, *inputs: Any) -> Any:
        """The outputs for numpy inputs. bfloat16 results are `ml_dtypes.bfloat16` arrays, or
        uint16 bit patterns (the kernels' storage, as `cinn_py.torch` passes them) when the
        bfloat16 inputs came as bit patterns."""
        arrays, _ = bind_inputs(self.program, _inputs(inputs))
        result = self.run_bound(arrays)
        if any(arrays[v.name].dtype == np.uint16 for v in self.program.inputs if v.dtype == bfloat16):
            return result
        outs = result if isinstance(result, tuple) else (result,)
        return pack([frontend_array(r, v) for r, v in zip(outs, self.plan.program.outputs)])

    def run_bound(self, arrays: Mapping[str, Any]) -> Any:
        """The kernels on inputs by name, already checked (`bind_inputs`) or device arrays the
        kernels check themselves (CUDA tensors, which numpy cannot bind)."""
        # decomposition rebuilds the program: its input variables are new objects with the same names
        values = {id(v): arrays[v.name] for v in self.plan.program.inputs}
        for group, kernel in zip(self.plan.groups, self.steps):
            result = kernel(*(values[id(v)] for v in group.args))
            results = result if isinstance(result, tuple) else (result,)
            values.update({id(v): r for v, r in zip(group.outputs, results)})
        return pack([values[id(v)] for v in self.plan.program.outputs])

    def __repr__(self) -> str:
        return f"<CompiledProgram {self.program.name}: {len(self.kernels)} kernel(s) for {self.target}>"


class ReshapeView:
    """A group of reshapes only, run as a numpy view of its input (every array between kernels is
    C-contiguous, so the reshape never copies): a copy kernel costs a launch and a pass over the
    data (10-25 us for 128 KiB on x86; a bias gradient's `[1, 1, N] -> [N]`, a matmul operand's
    `[B, S, H] -> [B*S, H]`)."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = shape

    def __call__(self, array: Any) -> Any:
        return array.reshape(self.shape)


def _reshape_view(group: Group, fusion: FusionPlan, target: str) -> ReshapeView | None:
    """A `ReshapeView` for an x86 group of reshapes of one array to a static shape, when the
    alias is invisible: its output is no program output, or its input is a temporary that
    nothing else reads (a program output must not share memory with an input or another output)."""
    if Target.parse(target).is_gpu:  # a view of a host array: a GPU group's values are device buffers
        return None
    if len(group.args) != 1 or len(group.outputs) != 1:
        return None
    if any(op.type != "reshape" for op in group.ops):
        return None
    source, result = group.args[0], group.outputs[0]
    if not all(isinstance(d, int) for d in result.shape):
        return None
    program = fusion.program
    outputs = {id(v) for v in program.outputs}
    if id(result) in outputs:
        readers = sum(1 for g in fusion.groups for v in g.args if v is source)
        if readers != 1 or id(source) in outputs or any(v is source for v in program.inputs):
            return None
    return ReshapeView(tuple(int(d) for d in result.shape))


def _inputs(inputs: tuple[Any, ...]) -> Sequence[Any] | Mapping[str, Any]:
    return inputs[0] if len(inputs) == 1 and isinstance(inputs[0], Mapping) else inputs
