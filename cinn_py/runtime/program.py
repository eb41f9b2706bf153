"""A program compiled group by group (`cinn_py.compile_program`): runs its kernels in order.

On x86 the kernels run as one native call (`native`, a `cinn_py.runtime.native.NativeGraph`: an
entry function that calls each kernel with arena buffers of a static memory plan); a repeated call
with the inputs' dtypes, shapes and strides of an earlier one skips every check (a signature
cache), allocates the outputs and makes that one ctypes call. Elsewhere (CUDA), or for a program
the plan cannot express (`native_reason`), the kernels run one by one from Python, each checking
its arguments and allocating its outputs (`run_bound`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from cinn_py.frontend.fusion import FusionPlan, Group
from cinn_py.frontend.program import Program, bind_inputs, frontend_array, pack
from cinn_py.ir import LoweredFunc, bfloat16
from cinn_py.runtime import threadpool
from cinn_py.runtime.args import data_ptr, storage_dtype
from cinn_py.runtime.native import NativeGraph, SizedGraph, aligned_empty
from cinn_py.target import Target

_SIGNATURES = 64


class CompiledProgram:
    """A program compiled group by group for `target`; `compiled(*inputs)` returns the outputs."""

    def __init__(self, program: Program, fusion: FusionPlan, funcs: Sequence[LoweredFunc],
                 kernels: Sequence[Any], target: Target) -> None:
        if not isinstance(target, Target):
            raise TypeError(f"CompiledProgram: expected the Target the kernels were built for, got "
                            f"{type(target).__name__} {target!r} (Target.parse turns a name into one)")
        self.program = program
        self.plan = fusion
        self._funcs = funcs  # each group's lowered function, read on demand (graph_cache.PickledFuncs)
        self.kernels = tuple(kernels)
        self.target = target
        self.steps = tuple(_reshape_view(group, fusion, target) or kernel
                            for group, kernel in zip(fusion.groups, self.kernels))
        """What `run_bound` calls per group: the kernel, or a `ReshapeView` in its place."""
        self.native: NativeGraph | None = None
        """The kernels as one native call (set by `compile_program` where the backend links one)."""
        self.native_reason = "not linked"
        """Why `native` is None (a program the memory plan cannot express, a backend that links none)."""
        self._signatures: dict[tuple[Any, ...] | None, tuple[SizedGraph, bool]] = {}
        # fusion.program's inputs are the user's, by name, possibly fewer (dead inputs dropped)
        positions = {v.name: k for k, v in enumerate(program.inputs)}
        self.input_positions = tuple(positions[v.name] for v in fusion.program.inputs)
        self._output_dtypes = tuple(storage_dtype(v.dtype) for v in fusion.program.outputs)
        self._bf16_outputs = any(v.dtype == bfloat16 for v in fusion.program.outputs)
        self._gpu = target.is_gpu

    @property
    def funcs(self) -> tuple[LoweredFunc, ...]:
        """Each group's lowered function (before scheduling)."""
        if not isinstance(self._funcs, tuple):
            self._funcs = tuple(self._funcs)
        return self._funcs

    @property
    def groups(self) -> tuple[Group, ...]:
        return self.plan.groups

    def __call__(self, *inputs: Any) -> Any:
        """The outputs for numpy inputs. bfloat16 results are `ml_dtypes.bfloat16` arrays, or
        uint16 bit patterns (the kernels' storage, as `cinn_py.torch` passes them) when the
        bfloat16 inputs came as bit patterns."""
        if self.native is not None:
            hit = self._signatures.get(_signature(inputs))
            if hit is not None:
                return self._run_native(hit[0], inputs, hit[1])
        given = _inputs(inputs)
        arrays, env = bind_inputs(self.program, given)
        bits = any(arrays[v.name].dtype == np.uint16 for v in self.program.inputs if v.dtype == bfloat16)
        sized = self.size_native(env)
        if sized is not None:
            bound = [arrays[v.name] for v in self.program.inputs]
            convert = self._bf16_outputs and not bits
            if given is inputs:
                self._remember(inputs, bound, sized, convert)
            return self._run_native(sized, bound, convert)
        result = self.run_bound(arrays)
        if bits:
            return result
        outs = result if isinstance(result, tuple) else (result,)
        return pack([frontend_array(r, v) for r, v in zip(outs, self.plan.program.outputs)])

    def _remember(self, inputs: tuple[Any, ...], bound: list[Any], sized: SizedGraph, convert: bool) -> None:
        """Let later calls with the signature of `inputs` skip the checks: only when the checked
        arrays are the given ones (a strided or converted input was copied: its signature must
        take the checked path again) with numpy's own dtypes (bfloat16 is checked each time)."""
        key = _signature(inputs)
        if key is None or not all(a is b and a.dtype.isbuiltin for a, b in zip(bound, inputs)):
            return
        if len(self._signatures) >= _SIGNATURES:
            self._signatures.pop(next(iter(self._signatures)))
        self._signatures[key] = (sized, convert)

    def size_native(self, env: dict[str, int]) -> SizedGraph | None:
        """The native graph's layout for the symbol values of a call that passed `bind_inputs`;
        None when there is no native graph or its plan does not fit these sizes (the kernels
        then run one by one)."""
        if self.native is None:
            return None
        try:
            return self.native.sized(env)
        except ValueError as exc:
            self.native_reason = str(exc)
            return None

    def _run_native(self, sized: SizedGraph, inputs: Any, convert: bool) -> Any:
        """One native call on numpy `inputs` (the user's positional order, checked before)."""
        outs = [aligned_empty(shape, dtype) for shape, dtype in zip(sized.output_shapes, self._output_dtypes)]
        pointers = [data_ptr(inputs[k]) for k in self.input_positions] + [data_ptr(o) for o in outs]
        self.native.launch(sized, pointers, threadpool.get_num_threads())  # type: ignore[union-attr]
        if convert:
            outs = [frontend_array(o, v) for o, v in zip(outs, self.plan.program.outputs)]
        return outs[0] if len(outs) == 1 else tuple(outs)

    def run_bound(self, arrays: Mapping[str, Any]) -> Any:
        """The kernels on inputs by name, already checked (`bind_inputs`) or device arrays the
        kernels check themselves (CUDA tensors, which numpy cannot bind)."""
        # decomposition rebuilds the program: its input variables are new objects with the same names
        values = {id(v): arrays[v.name] for v in self.plan.program.inputs}
        device_ref = next((a for a in arrays.values() if hasattr(a, "__cuda_array_interface__")), None) \
            if self._gpu else None
        for group, step in zip(self.plan.groups, self.steps):
            args = [values[id(v)] for v in group.args]
            empty_outputs = (getattr(step, "empty_outputs", None) if not args and device_ref
                             is not None else None)
            if empty_outputs is not None:
                # A group without inputs (fill_constant) would return numpy arrays: its outputs go
                # on the device of the program's inputs, where the next kernels expect them.
                kernel: Any = step
                result = kernel(out=empty_outputs(device_ref))
            else:
                result = step(*args)
            results = result if isinstance(result, tuple) else (result,)
            values.update({id(v): r for v, r in zip(group.outputs, results)})
        return pack([values[id(v)] for v in self.plan.program.outputs])

    def __repr__(self) -> str:
        return f"<CompiledProgram {self.program.name}: {len(self.kernels)} kernel(s) for {self.target.kind}>"


class ReshapeView:
    """A group of reshapes only, run as a numpy view of its input (every array between kernels is
    C-contiguous, so the reshape never copies): a copy kernel costs a launch and a pass over the
    data (10-25 us for 128 KiB on x86; a bias gradient's `[1, 1, N] -> [N]`, a matmul operand's
    `[B, S, H] -> [B*S, H]`)."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = shape

    def __call__(self, array: Any) -> Any:
        return array.reshape(self.shape)


def _reshape_view(group: Group, fusion: FusionPlan, target: Target) -> ReshapeView | None:
    """A `ReshapeView` for an x86 group of reshapes of one array to a static shape, when the
    alias is invisible: its output is no program output, or its input is a temporary that
    nothing else reads (a program output must not share memory with an input or another output)."""
    if target.is_gpu:  # a view of a host array: a GPU group's values are device buffers
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


def _signature(inputs: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """(dtype, shape, strides) of each input when all are plain numpy arrays, else None."""
    key = []
    for a in inputs:
        if type(a) is not np.ndarray:
            return None
        key.append((a.dtype, a.shape, a.strides))
    return tuple(key)


def _inputs(inputs: tuple[Any, ...]) -> Sequence[Any] | Mapping[str, Any]:
    return inputs[0] if len(inputs) == 1 and isinstance(inputs[0], Mapping) else inputs
