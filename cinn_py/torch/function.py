"""PyTorch bridge: run a compiled NetBuilder program on torch tensors, differentiable.

    fn = cinn_py.torch.compile_function(program)        # forward and backward compiled for x86
    y = fn(x, w, b)                                     # torch tensors in, torch tensors out
    y.sum().backward()                                  # the backward program of cinn_py.autodiff

Inputs cross as zero-copy views (DLPack: `np.from_dlpack` of the detached tensor; a
`requires_grad` tensor is detached first, which shares its storage), outputs are torch tensors
over the kernels' result arrays (`torch.from_dlpack`, no copy). The backward runs through
`torch.autograd.Function`: the forward saves the input tensors (the recompute policy of
`cinn_py.autodiff`: nothing else), and the backward program, compiled on the first backward,
takes the inputs and the output cotangents. CPU tensors only (the `torch.compile` backend,
cinn_py/torch/backend.py, also runs CUDA tensors).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch  # pyright: ignore[reportMissingImports]

from cinn_py.autodiff import grad
from cinn_py.frontend.program import Program
from cinn_py.ir import DType
from cinn_py.pipeline import compile_program
from cinn_py.target import host


def to_numpy(t: Any) -> np.ndarray:
    """A zero-copy numpy view of a CPU tensor (contiguous first: kernels take dense arrays);
    bfloat16, which numpy lacks and DLPack export refuses, is viewed through its uint16 bits as
    an `ml_dtypes.bfloat16` array (the frontend's bfloat16 values), or as the bits where
    ml_dtypes is absent (the kernels take either)."""
    if t.device.type != "cpu":
        raise TypeError(f"cinn_py.torch: tensor on {t.device}; only CPU tensors are supported")
    dense = t.detach().contiguous()
    if dense.dtype != torch.bfloat16:
        return np.from_dlpack(dense)
    bits = np.from_dlpack(dense.view(torch.uint16))
    try:
        import ml_dtypes  # noqa: PLC0415  # pyright: ignore[reportMissingImports]
    except ImportError:
        return bits
    return bits.view(ml_dtypes.bfloat16)


def to_torch(a: Any, dtype: DType | None = None) -> Any:
    """A torch tensor over the array's memory (no copy unless it is strided); 0-d arrays stay 0-d.
    `dtype` bfloat16: `a` holds the bit patterns (uint16), viewed as torch.bfloat16."""
    arr = np.asarray(a)
    if not arr.flags.c_contiguous:
        arr = np.ascontiguousarray(arr).reshape(arr.shape)  # ascontiguousarray makes 0-d arrays 1-d
    if dtype is not None and dtype.kind == "bfloat":  # uint16 bits or ml_dtypes.bfloat16: same bytes
        return torch.from_dlpack(arr.view(np.uint16)).view(torch.bfloat16)
    return torch.from_dlpack(arr)


@dataclass
class CompiledFunction:
    """`program` compiled for x86 as a differentiable torch function (see the module docstring)."""

    program: Program
    schedule: str | None = "auto"
    _forward: Any = None
    _backward: Any = None
    _wrt: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._forward = compile_program(self.program, host(), schedule=self.schedule)

    def backward_program(self) -> Any:
        if self._backward is None:
            self._wrt = [k for k, v in enumerate(self.program.inputs) if v.dtype.is_float]
            back = grad(self.program, wrt=[self.program.inputs[k] for k in self._wrt])
            self._backward = compile_program(back, host(), schedule=self.schedule)
        return self._backward

    def __call__(self, *tensors: Any) -> Any:
        outs = _Apply.apply(self, *tensors)
        return outs[0] if len(outs) == 1 else outs


def compile_function(program: Program, schedule: str | None = "auto") -> CompiledFunction:
    return CompiledFunction(program, schedule)


class _Apply(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, fn: CompiledFunction, *tensors: Any) -> tuple[Any, ...]:
        result = fn._forward(*[to_numpy(t) for t in tensors])
        outs = result if isinstance(result, tuple) else (result,)
        ctx.fn = fn
        ctx.save_for_backward(*tensors)
        return tuple(to_torch(o, v.dtype) for o, v in zip(outs, fn.program.outputs))

    @staticmethod
    def backward(ctx: Any, *douts: Any) -> tuple[Any, ...]:
        fn: CompiledFunction = ctx.fn
        tensors: Sequence[Any] = ctx.saved_tensors
        run = fn.backward_program()
        float_outs = [k for k, v in enumerate(fn.program.outputs) if v.dtype.is_float]
        cots = [to_numpy(douts[k]) for k in float_outs]  # torch materialises unused outputs' as zeros
        result = run(*[to_numpy(t) for t in tensors], *cots)
        grads = result if isinstance(result, tuple) else (result,)
        by_input = dict(zip(fn._wrt, grads))
        wanted = [k in by_input and ctx.needs_input_grad[k + 1] for k in range(len(tensors))]
        return (None, *[to_torch(by_input[k], fn.program.inputs[k].dtype) if wanted[k] else None
                        for k in range(len(tensors))])
