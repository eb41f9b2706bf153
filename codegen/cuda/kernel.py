"""A compiled CUDA kernel loaded and launched through PyCUDA.

`Kernel(code, func)` loads the CUBIN of a `GeneratedCode` into the current (primary) CUDA
context. Calling it:

- validates the inputs with the shared `cinn_py.runtime.args.ArgValidator` (dtype, rank, static
  dims, consistency and bounds of the symbolic dims, contiguity, aliasing of `out=`);
- accepts either all-numpy inputs (copied to the device; outputs come back as numpy arrays) or
  all-device inputs with `__cuda_array_interface__` (PyCUDA GPUArray, PyTorch CUDA tensors, CuPy;
  outputs are allocated on the device with the inputs' library: torch tensors for torch inputs,
  GPUArrays otherwise);
- evaluates the output shapes and the launch dims from the symbolic dims on the host, checks the
  pointer alignment that vectorised accesses need, and launches on the default stream.

PyCUDA is imported lazily: building GeneratedCode never needs it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cinn_py.diagnostics import CompileError
from cinn_py.ir.func import ArgIO, LoweredFunc
from codegen.cuda.generate import GeneratedCode

_DEFAULT_STATIC_SHARED = 48 * 1024


def _pycuda() -> tuple[Any, Any]:
    try:
        import pycuda.autoprimaryctx  # noqa: F401, PLC0415  (retains the primary context, shared with torch)
        import pycuda.driver as drv  # noqa: PLC0415
        import pycuda.gpuarray as gpuarray  # noqa: PLC0415
    except ImportError as exc:
        raise CompileError("build_cuda: PyCUDA is not installed (pip install 'cinn-py[cuda]')") from exc
    except Exception as exc:  # no driver / no device
        raise CompileError(f"build_cuda: cannot initialise CUDA through PyCUDA: {exc}") from exc
    return drv, gpuarray


def _is_device_array(obj: Any) -> bool:
    return hasattr(obj, "__cuda_array_interface__")


def _param_format(func: LoweredFunc) -> str:
    fmt = []
    for arg in func.args:
        if arg.tensor is not None:
            fmt.append("P")
        else:
            assert arg.var is not None
            fmt.append("q" if arg.var.dtype.bits == 64 else "i")
    return "".join(fmt)


class Kernel:
    """`kernel(*inputs, out=None)` -> output array(s); see the module docstring."""

    def __init__(self, code: GeneratedCode, func: LoweredFunc) -> None:
        if code.cubin is None:
            raise CompileError(f"build_cuda: '{func.name}' was compiled for {code.arch} (PTX only); "
                               "build for an sm_XX arch to launch it")
        from cinn_py.runtime.args import ArgValidator  # noqa: PLC0415

        self.code = code
        self.func = func
        self.host_validator = ArgValidator(func, device="cpu")
        self.device_validator = ArgValidator(func, device="cuda")
        drv, self._gpuarray = _pycuda()
        self._drv = drv
        self._module = drv.module_from_buffer(code.cubin)
        self._function = self._module.get_function(code.kernel_name)
        self._function.prepare(_param_format(code.func))

    @property
    def source(self) -> str:
        return self.code.source

    def __repr__(self) -> str:
        return f"<cuda Kernel {self.code.kernel_name} {self.code.arch} {self.code.launch}>"

    # -- call --------------------------------------------------------------------------------------
    def __call__(self, *args: Any, out: Any = None) -> Any:
        on_device = [_is_device_array(a) for a in args]
        if any(on_device) and not all(on_device):
            raise TypeError(f"kernel '{self.func.name}': mix of host (numpy) and device inputs; pass all inputs "
                            "as numpy arrays or all as CUDA arrays (GPUArray / torch CUDA tensors)")
        if args and all(on_device):
            return self._call_device(args, out)
        return self._call_host(args, out)

    def _call_host(self, args: tuple[Any, ...], out: Any) -> Any:
        bound = self.host_validator.validate(args, out)
        shapes = self.host_validator.output_shapes(bound.symbols)
        gpuarray = self._gpuarray
        dev_in = [gpuarray.to_gpu(np.ascontiguousarray(m.array)) for m in bound.inputs]
        dev_out = [gpuarray.empty(shape, dtype=_np_dtype(t)) for shape, t in zip(shapes, self.func.outputs)]
        self._launch([int(a.gpudata) for a in dev_in], [int(a.gpudata) for a in dev_out], bound.symbols)
        if out is not None:
            outs = (out,) if not isinstance(out, (list, tuple)) else tuple(out)
            for dev, host in zip(dev_out, outs):
                dev.get(ary=host)
            return out
        results = [dev.get() for dev in dev_out]
        return results[0] if len(results) == 1 else tuple(results)

    def _call_device(self, args: tuple[Any, ...], out: Any) -> Any:
        bound = self.device_validator.validate(args, out)
        if out is not None:
            outs = (out,) if not isinstance(out, (list, tuple)) else tuple(out)
            out_ptrs = [m.ptr for m in bound.outputs]
        else:
            shapes = self.device_validator.output_shapes(bound.symbols)
            outs = tuple(self._allocate_like(args[0], shape, t) for shape, t in zip(shapes, self.func.outputs))
            out_ptrs = [int(o.__cuda_array_interface__["data"][0]) for o in outs]
        self._launch([m.ptr for m in bound.inputs], out_ptrs, bound.symbols)
        if out is not None:
            return out
        return outs[0] if len(outs) == 1 else outs

    def _allocate_like(self, ref: Any, shape: tuple[int, ...], tensor: Any) -> Any:
        module = type(ref).__module__.split(".")[0]
        if module == "torch":
            import torch  # noqa: PLC0415

            name = "bfloat16" if tensor.dtype.kind == "bfloat" else tensor.dtype.scalar_name()
            torch_dtype = torch.bool if name == "bool" else getattr(torch, name)
            return torch.empty(shape, dtype=torch_dtype, device=ref.device)
        return self._gpuarray.empty(shape, dtype=_np_dtype(tensor))

    def _launch(self, in_ptrs: list[int], out_ptrs: list[int], symbols: dict[str, int]) -> None:
        align = self.code.vector_alignment
        for ptr in (*in_ptrs, *out_ptrs):
            if align > 1 and ptr % align:
                raise ValueError(f"kernel '{self.func.name}': a tensor pointer (0x{ptr:x}) is not {align}-byte "
                                 "aligned, which this kernel's vectorised loads/stores need; pass a fresh "
                                 "(not offset) tensor")
        grid, block, shared = self.code.launch.launch_dims(symbols)
        if 0 in grid or 0 in block:
            return  # empty tensors: nothing to compute
        if shared > _DEFAULT_STATIC_SHARED:
            attr = self._drv.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES
            self._function.set_attribute(attr, shared)
        scalars = [np.int64(symbols[v.name]) if v.dtype.bits == 64 else np.int32(symbols[v.name])
                   for v in self.code.func.scalar_args]
        # Arguments in signature order: inputs, outputs, then the int64 symbolic dims.
        ins, outs, scalar_iter = iter(in_ptrs), iter(out_ptrs), iter(scalars)
        params: list[Any] = []
        for arg in self.code.func.args:
            if arg.io is ArgIO.INPUT:
                params.append(np.uintp(next(ins)))
            elif arg.io is ArgIO.OUTPUT:
                params.append(np.uintp(next(outs)))
            else:
                params.append(next(scalar_iter))
        self._function.prepared_call(grid, block, *params, shared_size=shared)


def _np_dtype(tensor: Any) -> np.dtype:
    from cinn_py.runtime.args import storage_dtype  # noqa: PLC0415

    return storage_dtype(tensor.dtype)


def device_arch() -> str:
    """`sm_XY` of the current CUDA device."""
    drv, _ = _pycuda()
    major, minor = drv.Context.get_device().compute_capability()
    return f"sm_{major}{minor}"
