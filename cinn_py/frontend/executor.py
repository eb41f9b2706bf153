"""Compile and run a `Program`: optimize (decompose, constant folding, CSE, DCE), fuse, lower each
group to one LoweredFunc, build it, and run the groups in topological order.

    compiled = compile_program(program, target="x86")
    y = compiled(x, w)                       # one output: the array; several: a tuple

Each group lowers with `cinn_py.lower(group.name, [inputs..., outputs...])`: the group's
inputs are placeholders, every op becomes the computes of its op definition, intermediates
become temp buffers. Kernels are built without a schedule (serial loop nests) through
`cinn_py.driver.build`. `run_interpreted` runs the same lowered functions in the numpy IR
interpreter (`Program.run_reference`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cinn_py.frontend import checks
from cinn_py.frontend import compute as cdsl
from cinn_py.frontend.fusion import FusionPlan, Group, fuse
from cinn_py.frontend.graph_passes import optimize
from cinn_py.frontend.ops import get_op
from cinn_py.frontend.program import Program, Variable, bind_inputs, pack
from cinn_py.ir import LoweredFunc, const


def plan(program: Program) -> FusionPlan:
    """The fused groups of `program` after the default graph passes."""
    if not isinstance(program, Program):
        raise TypeError(f"expected a Program (NetBuilder.build()), got {type(program).__name__}")
    return fuse(optimize(program))


def lower_group(group: Group) -> LoweredFunc:
    """One LoweredFunc for a fused group (the fused seed example is ONE function)."""
    from cinn_py.lowering.ast_gen import lower  # noqa: PLC0415

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


def compile_program(program: Program, target: str = "x86", schedule: str | None = None,
                    fast_math: bool = False) -> CompiledProgram:
    """Optimize, fuse, lower and build every group of `program` for `target` ("x86" or "cuda").

    `schedule=None` builds each group's loop nests as lowered (serial); `schedule="auto"` lets
    the driver's automatic group scheduler (`cinn_py.driver.build(..., schedule="auto")`)
    schedule each group first.
    """
    from cinn_py.driver import build  # noqa: PLC0415 - the driver reaches codegen lazily

    fusion = plan(program)
    funcs = [g.lower() for g in fusion.groups]
    kernels = [build(f, target, fast_math=fast_math, schedule=schedule) for f in funcs]
    return CompiledProgram(program, fusion, funcs, kernels, target)


def run_interpreted(program: Program, inputs: Sequence[Any] | Mapping[str, Any]) -> Any:
    """Run every group's LoweredFunc in the IR interpreter (`cinn_py.interp.run_ir`)."""
    from cinn_py.interp import run_ir  # noqa: PLC0415

    arrays, env = bind_inputs(program, inputs)
    fusion = plan(program)
    values = {id(v): arrays[v.name] for v in fusion.program.inputs}
    for group in fusion.groups:
        func = group.lower()
        outs = run_ir(func, {v.name: values[id(v)] for v in group.args}, env)
        values.update({id(v): outs[v.name] for v in group.outputs})
    return pack([values[id(v)] for v in fusion.program.outputs])
