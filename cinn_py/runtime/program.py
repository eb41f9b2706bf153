"""A program compiled group by group (`cinn_py.compile_program`): runs its kernels in order."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cinn_py.frontend.fusion import FusionPlan, Group
from cinn_py.frontend.program import Program, bind_inputs, frontend_array, pack
from cinn_py.ir import LoweredFunc


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
        arrays, _ = bind_inputs(self.program, _inputs(inputs))
        return self.run_bound(arrays)

    def run_bound(self, arrays: Mapping[str, Any]) -> Any:
        """The kernels on inputs by name, already checked (`bind_inputs`) or device arrays the
        kernels check themselves (CUDA tensors, which numpy cannot bind)."""
        # decomposition rebuilds the program: its input variables are new objects with the same names
        values = {id(v): arrays[v.name] for v in self.plan.program.inputs}
        for group, kernel in zip(self.plan.groups, self.kernels):
            result = kernel(*(values[id(v)] for v in group.args))
            results = result if isinstance(result, tuple) else (result,)
            values.update({id(v): r for v, r in zip(group.outputs, results)})
        return pack([frontend_array(values[id(v)], v) for v in self.plan.program.outputs])

    def __repr__(self) -> str:
        return f"<CompiledProgram {self.program.name}: {len(self.kernels)} kernel(s) for {self.target}>"


def _inputs(inputs: tuple[Any, ...]) -> Sequence[Any] | Mapping[str, Any]:
    return inputs[0] if len(inputs) == 1 and isinstance(inputs[0], Mapping) else inputs
