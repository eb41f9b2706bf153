"""The fast path of a compiled partition's call: a repeated call checks its tensors in one C++ call.

A partition (`cinn_py.torch.graph.CompiledGraph`) is called with the same tensor signature at every
step of a model: the same dtypes, shapes and strides. The checked path binds the sizes, views
strided inputs in their traced layout, looks the signature up and allocates the outputs, ~1 us of
Python per tensor (`t.shape`, `t.stride()` and the dict key built from them). `FastCall` remembers,
for the signature of a call that went through the checked path and ran natively, everything that
call worked out:

- `guards`: Dynamo's own tensor check (`torch._C._dynamo.guards.TensorGuards`, what a compiled
  frame's guards run): dtype, device, dispatch keys, requires_grad, every size and stride of every
  argument, in C++. The dispatch keys include the thread-local state (autocast on or off), so a
  `FastCall` built inside `torch.autocast` is only used inside it; a call outside misses and takes
  the checked path, which makes a new one;
- `inputs`: for each input of the native call, which argument's memory it is. Only arguments that
  enter the Program as their own memory qualify (a row-major tensor, or a permuted or broadcast view
  read in place, whose data pointer is the argument's); a partition with a SymInt argument, a
  carrier of a size, a factored dim or a slice read through its block takes the checked path
  every time;
- the native layout (`SizedGraph`) and, per output, its shape, row-major strides and dtype, for
  `empty_strided` (`new_output`).

Where `TensorGuards` is missing (another torch version), there is no fast path; every call is
checked.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch  # pyright: ignore[reportMissingImports]

from cinn_py.torch.layout import row_major_strides


def _tensor_guards() -> Any:
    """Dynamo's guard check (C++), or None: it is private, hence optional."""
    try:
        from torch._C._dynamo.guards import TensorGuards  # noqa: PLC0415  # pyright: ignore
    except ImportError:  # pragma: no cover - depends on the torch build
        return None
    return TensorGuards


def _output_allocator() -> Callable[[tuple[int, ...], tuple[int, ...], Any], Any]:
    """What Inductor's generated wrappers allocate with (no dispatcher, no argument parsing), or
    `torch.empty_strided` where this torch has none."""
    try:
        from torch._C._dynamo.guards import _empty_strided_cpu  # noqa: PLC0415  # pyright: ignore
    except ImportError:  # pragma: no cover - depends on the torch build
        return lambda shape, strides, dtype: torch.empty_strided(shape, strides, dtype=dtype)
    return _empty_strided_cpu


TensorGuards: Any = _tensor_guards()
new_output = _output_allocator()
"""`new_output(shape, strides, dtype)`: an uninitialised CPU tensor (0.7 us against torch.empty's
2.5 us, with numpy's 4x4 `np.add` at 0.6 us on the same machine)."""

REBUILDS = 16
"""`FastCall`s a partition makes at most: a partition called alternately inside and outside
autocast, or with two signatures in turn, would otherwise build one per call; past this it stays
on the checked path (which has its own signature caches)."""


@dataclass(frozen=True)
class FastCall:
    """One signature's ready-made native call (see the module docstring)."""

    guards: Any
    inputs: tuple[int, ...]
    """Per input of the native call (the program's order), the index of the argument it reads."""
    sized: Any
    """The `cinn_py.runtime.native.SizedGraph` of the signature."""
    outputs: tuple[tuple[tuple[int, ...], tuple[int, ...], Any], ...]
    """Per output, (shape, row-major strides, torch dtype)."""

    def matches(self, args: Sequence[Any]) -> bool:
        return bool(self.guards.check(*args))

    def run(self, native: Any, args: Sequence[Any]) -> tuple[Any, ...]:
        """The outputs of one native call on `args` (which `matches`)."""
        outs = tuple([new_output(shape, strides, dtype) for shape, strides, dtype in self.outputs])
        native.launch(self.sized, [args[k].data_ptr() for k in self.inputs] + [o.data_ptr() for o in outs],
                      torch.get_num_threads())
        return outs


def make_fast_call(args: Sequence[Any], tensors: Sequence[Any], program_inputs: Sequence[int],
                   sized: Any, out_dtypes: Sequence[Any]) -> FastCall | None:
    """The `FastCall` of a call that just ran natively, or None when it cannot have one.

    `args`: the partition's arguments; `tensors`: the Program's input tensors the checked path
    made of them (one per argument, in order, when every argument is a tensor entering as itself);
    `program_inputs`: the Program input of each native input (`CompiledProgram.input_positions`)."""
    if TensorGuards is None or len(tensors) != len(args):
        return None
    for a, t in zip(args, tensors):
        if not isinstance(a, torch.Tensor) or a.device.type != "cpu" or not t.is_contiguous():
            return None
        if t.data_ptr() != a.data_ptr() or t.dtype != a.dtype:
            return None
    sizes = [list(a.shape) for a in args]
    strides = [list(a.stride()) for a in args]
    guards = TensorGuards(*args, dynamic_dims_sizes=sizes, dynamic_dims_strides=strides)
    return FastCall(guards, tuple(program_inputs), sized, output_specs(sized.output_shapes, out_dtypes))


def output_specs(shapes: Sequence[tuple[int, ...]], dtypes: Sequence[Any]
                 ) -> tuple[tuple[tuple[int, ...], tuple[int, ...], Any], ...]:
    """(shape, row-major strides, dtype) of each output, as `new_output` takes them."""
    return tuple((tuple(shape), row_major_strides(shape), dtype) for shape, dtype in zip(shapes, dtypes))


__all__ = ["REBUILDS", "FastCall", "make_fast_call", "new_output", "output_specs"]
