"""A program compiled group by group (`cinn_py.compile_program`): runs its kernels in order."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from cinn_py.frontend.fusion import FusionPlan, Group
from cinn_py.frontend.program import Program, bind_inputs, frontend_array, pack
from cinn_py.ir import LoweredFunc, bfloat16


class CompiledProgram:
    """A program compiled group by group; `compiled(*inputs)` returns the outputs."""

    def __init__(self, program: Program, fusion: FusionPlan, funcs: Sequence[LoweredFunc],
                 kernels: Sequence[Any], target: str) -> None:
        self.program = program
        self.plan = fusion
        self.funcs = tuple(funcs)
        self.kernels = tuple(kernels)
        self.target = target

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
        for group, kernel in zip(self.plan.groups, self.kernels):
            result = kernel(*(values[id(v)] for v in group.args))
            results = result if isinstance(result, tuple) else (result,)
            values.update({id(v): r for v, r in zip(group.outputs, results)})
        return pack([values[id(v)] for v in self.plan.program.outputs])

    def __repr__(self) -> str:
        return f"<CompiledProgram {self.program.name}: {len(self.kernels)} kernel(s) for {self.target}>"


def _inputs(inputs: tuple[Any, ...]) -> Sequence[Any] | Mapping[str, Any]:
    return inputs[0] if len(inputs) == 1 and isinstance(inputs[0], Mapping) else inputs
