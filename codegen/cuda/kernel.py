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
  pointer alignment that vectorised accesses need, allocates the global temporaries
  (`GeneratedCode.temp_spaces`, zero-filled when needed) and launches on the legacy default
  stream (the one PyTorch uses unless told otherwise, so no extra synchronisation is needed).
  Host calls copy the outputs back with a synchronous copy, which waits for the kernel; device
  calls return without synchronising, like a PyTorch op. A torch call whose (dtype, shape,
  device) signature was validated before skips the checks and the host arithmetic (`_CachedCall`):
  on an H100 a call cost ~130 us of Python against a few us of kernel at small shapes.

Arguments are packed with PyCUDA's prepared-call format (`P` for pointers, `q`/`i` for int64 /
int32 scalars, native alignment = the CUDA parameter layout) in signature order: inputs,
outputs, symbolic dims, then the temp spaces.

PyCUDA is imported lazily: building GeneratedCode never needs it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from cinn_py.diagnostics import CinnError, CompileError
from cinn_py.ir import LoweredFunc
from cinn_py.runtime.kernel import KernelBase
from codegen.cuda.generate import GeneratedCode
from codegen.cuda.launch import check_alignment, kernel_arguments

_EMULATOR_HINT = ("without a GPU, run the kernel in the CPU emulator: build(..., emulate=True) or "
                  "CINN_PY_CUDA=emulate (docs/cuda_emulation.md)")


class CudaRuntimeError(CinnError):
    """The CUDA driver rejected a module load or a launch."""


def _pycuda() -> tuple[Any, Any]:
    try:
        import pycuda.autoprimaryctx  # noqa: F401, PLC0415  # pyright: ignore[reportMissingImports] (keeps the primary context)
        import pycuda.driver as drv  # noqa: PLC0415  # pyright: ignore[reportMissingImports]
        import pycuda.gpuarray as gpuarray  # noqa: PLC0415  # pyright: ignore[reportMissingImports]
    except ImportError as exc:
        raise CompileError("build_cuda: PyCUDA is not installed (pip install 'cinn-py[cuda]')",
                           _EMULATOR_HINT) from exc
    except Exception as exc:  # no driver / no device
        raise CompileError(f"build_cuda: cannot initialise CUDA through PyCUDA: {exc}",
                           _EMULATOR_HINT) from exc
    return drv, gpuarray


_TORCH_CALL_CACHE_SIZE = 64
LaunchDims = tuple[tuple[int, int, int], tuple[int, int, int], int]


@dataclass(frozen=True)
class _CachedCall:
    """A validated torch call: its symbol values, outputs and launch dims (a function of the shapes)."""

    symbols: dict[str, int]
    output_shapes: tuple[Any, ...]
    output_dtypes: tuple[Any, ...]
    dims: LaunchDims


def torch_signature(args: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """(dtype, shape, device) of each argument when all are contiguous torch CUDA tensors, else
    None. Two calls with one signature validate alike: dtypes, ranks, dims and symbol values
    depend on nothing else (the launch checks the pointers' alignment on every call)."""
    key = []
    for a in args:
        if type(a).__name__ != "Tensor" or not type(a).__module__.startswith("torch") \
                or not a.is_cuda or not a.is_contiguous():
            return None
        key.append((a.dtype, a.shape, a.device))
    return tuple(key)


def _is_device_array(obj: Any) -> bool:
    return hasattr(obj, "__cuda_array_interface__")


def param_format(code: GeneratedCode) -> str:
    """PyCUDA `prepare` format of the kernel's parameters (signature order, temp spaces last)."""
    fmt = []
    for arg in code.func.args:
        if arg.tensor is not None:
            fmt.append("P")
        elif arg.var is not None:
            fmt.append("q" if arg.var.dtype.bits == 64 else "i")
    fmt.extend("P" for _ in code.temp_spaces)
    return "".join(fmt)


class Kernel(KernelBase):
    """`kernel(*inputs, out=None)` -> output array(s); see the module docstring."""

    def __init__(self, code: GeneratedCode, func: LoweredFunc) -> None:
        if code.cubin is None:
            raise CompileError(f"build_cuda: '{func.name}' was compiled for {code.arch} (PTX only); "
                               "build for an sm_XX arch to launch it")
        from cinn_py.runtime.args import ArgValidator  # noqa: PLC0415

        self.code = code
        self.func = func
        self.checks = code.checks
        self.host_validator = ArgValidator(func, device="cpu")
        self.device_validator = ArgValidator(func, device="cuda")
        drv, self._gpuarray = _pycuda()
        self._drv = drv
        try:
            self._module = drv.module_from_buffer(code.cubin)
            self._function = self._module.get_function(code.kernel_name)
            self._static_shared = int(self._function.get_attribute(drv.function_attribute.SHARED_SIZE_BYTES))
        except drv.Error as exc:
            raise CudaRuntimeError(f"build_cuda: cannot load '{code.kernel_name}' compiled for {code.arch} "
                                   "on "
                                   f"this device ({_device_arch_or_unknown(drv)}): {exc}; build with "
                                   "arch='auto'") from exc
        self._function.prepare(param_format(code))
        self._shared_opt_in = 0
        self._temps: dict[str, tuple[int, Any]] = {}
        self._torch_calls: dict[tuple[Any, ...], _CachedCall] = {}
        """`torch_signature` of validated calls without `out=` -> what their launch needs."""
        """Temp space name -> (bytes, DeviceAllocation), reused across launches (stream-ordered)."""

    @property
    def source(self) -> str:
        return self.code.source

    def __repr__(self) -> str:
        return f"<cuda Kernel {self.code.kernel_name} {self.code.arch} {self.code.launch}>"

    def resource_usage(self) -> dict[str, int | str]:
        """What the driver reports for the loaded kernel: registers per thread, static shared and
        local (stack/spill) bytes per thread, the most threads per block it can launch with, and
        the launch dims as expressions of the symbolic dims."""
        attr = self._drv.function_attribute
        get = self._function.get_attribute
        return {"kernel": self.code.kernel_name, "arch": self.code.arch, "launch": str(self.code.launch),
                "registers": int(get(attr.NUM_REGS)), "shared_static_bytes": int(get(attr.SHARED_SIZE_BYTES)),
                "local_bytes": int(get(attr.LOCAL_SIZE_BYTES)),
                "max_threads_per_block": int(get(attr.MAX_THREADS_PER_BLOCK))}

    # -- call --------------------------------------------------------------------------------------
    def __call__(self, *args: Any, out: Any = None) -> Any:
        if out is None and args:
            key = torch_signature(args)
            cached = self._torch_calls.get(key) if key is not None else None
            if cached is not None:
                return self._call_cached(args, cached)
        given = () if out is None else tuple(out) if isinstance(out, (list, tuple)) else (out,)
        on_device = [_is_device_array(a) for a in (*args, *given)]
        if any(on_device) and not all(on_device):
            raise TypeError(f"kernel '{self.func.name}': mix of host (numpy) and device arrays; pass all "
                            "inputs "
                            "(and out=) as numpy arrays or all as CUDA arrays (GPUArray / torch CUDA "
                            "tensors)")
        if any(on_device):  # then all are: a kernel without inputs is told so by its out= arrays
            return self._call_device(args, out)
        return self._call_host(args, out)

    def empty_outputs(self, like: Any) -> tuple[Any, ...]:
        """Output arrays on `like`'s device, allocated with its library, for a kernel without
        inputs (a program's `full`/`fill_constant` group): call it as `kernel(out=...)`, since
        `kernel()` alone has no device array to go by and returns numpy arrays."""
        shapes = self.device_validator.output_shapes({})
        return tuple(self._allocate_like(like, shape, t) for shape, t in zip(shapes, self.func.outputs))

    def _call_host(self, args: tuple[Any, ...], out: Any) -> Any:
        bound = self.host_validator.validate(args, out)
        shapes = self.host_validator.output_shapes(bound.symbols)
        gpuarray = self._gpuarray
        dev_in = [gpuarray.to_gpu(np.ascontiguousarray(m.array)) for m in bound.inputs]
        dev_out = [gpuarray.empty(shape, dtype=_np_dtype(t)) for shape, t in zip(shapes, self.func.outputs)]
        self._launch([int(a.gpudata) for a in dev_in], [int(a.gpudata) for a in dev_out], bound.symbols)
        if out is not None:
            # The metas' arrays are numpy views of the user's buffers (uint16 for bfloat16,
            # np.from_dlpack for DLPack CPU tensors), with the dtype the device array has.
            for dev, meta in zip(dev_out, bound.outputs):
                dev.get(ary=meta.array)
            return out
        return self.results([dev.get() for dev in dev_out])

    def _call_device(self, args: tuple[Any, ...], out: Any) -> Any:
        bound = self.device_validator.validate(args, out)
        if out is not None:
            outs = (out,) if not isinstance(out, (list, tuple)) else tuple(out)
            out_ptrs = [m.ptr for m in bound.outputs]
        else:
            shapes = self.device_validator.output_shapes(bound.symbols)
            outs = tuple(self._allocate_like(args[0], shape, t) for shape,
                         t in zip(shapes, self.func.outputs))
            out_ptrs = [int(o.__cuda_array_interface__["data"][0]) for o in outs]
        dims = self._launch([m.ptr for m in bound.inputs], out_ptrs, bound.symbols)
        if out is not None:
            return out
        key = torch_signature(args)
        if key is not None and len(self._torch_calls) < _TORCH_CALL_CACHE_SIZE:
            self._torch_calls[key] = _CachedCall(bound.symbols, tuple(o.shape for o in outs),
                                                 tuple(o.dtype for o in outs), dims)
        return self.results(outs)

    def _call_cached(self, args: tuple[Any, ...], cached: _CachedCall) -> Any:
        """A torch call of a signature that passed validation before: only the pointers change
        (alignment is still checked on each), so the checks and the host arithmetic are skipped."""
        import torch  # noqa: PLC0415  # pyright: ignore[reportMissingImports] (torch tensors came in)

        device = args[0].device
        outs = tuple(torch.empty(shape, dtype=dtype, device=device)
                     for shape, dtype in zip(cached.output_shapes, cached.output_dtypes))
        self._launch([a.data_ptr() for a in args], [o.data_ptr() for o in outs], cached.symbols, cached.dims)
        return self.results(outs)

    def _allocate_like(self, ref: Any, shape: tuple[int, ...], tensor: Any) -> Any:
        module = type(ref).__module__.split(".")[0]
        if module == "torch":
            import torch  # noqa: PLC0415  # pyright: ignore[reportMissingImports] (optional)

            name = "bfloat16" if tensor.dtype.kind == "bfloat" else tensor.dtype.scalar_name()
            torch_dtype = torch.bool if name == "bool" else getattr(torch, name)
            return torch.empty(shape, dtype=torch_dtype, device=ref.device)
        return self._gpuarray.empty(shape, dtype=_np_dtype(tensor))

    def _launch(self, in_ptrs: list[int], out_ptrs: list[int], symbols: dict[str, int],
                dims: LaunchDims | None = None) -> LaunchDims:
        """Launch with `dims` (grid, block, dynamic shared bytes), else those of `symbols`; returns them."""
        check_alignment(self.code, self.func.name, (*in_ptrs, *out_ptrs))
        if dims is None:
            dims = self.code.launch.launch_dims(symbols)
        grid, block, shared = dims
        if 0 in grid or 0 in block:
            return dims  # empty tensors: nothing to compute
        self._opt_in_shared(shared)
        packed = {"P": np.uintp, "q": np.int64, "i": np.int32}
        params = ([packed[kind](value) for kind,
                   value in kernel_arguments(self.code, in_ptrs, out_ptrs, symbols)])
        params.extend(np.uintp(ptr) for ptr in self._temp_pointers(symbols))
        try:
            self._function.prepared_call(grid, block, *params, shared_size=shared)
        except self._drv.Error as exc:
            raise CudaRuntimeError(f"kernel '{self.func.name}': launch with grid={grid} block={block} "
                                   f"shared={shared} failed: {exc}") from exc
        if self.code.checks:
            self._raise_failed_check()
        return dims

    def _raise_failed_check(self) -> None:
        """Checked builds: read and clear `cinn_oob_status` (synchronises with the launch)."""
        ptr, _ = self._module.get_global("cinn_oob_status")
        status = np.zeros(2, dtype=np.int64)
        self._drv.memcpy_dtoh(status, ptr)
        if not status[0]:
            return
        self._drv.memcpy_htod(ptr, np.zeros(2, dtype=np.int64))
        raise self.out_of_bounds(int(status[0]) - 1, int(status[1]), "the access went to element 0 instead")

    def _opt_in_shared(self, dynamic: int) -> None:
        """Kernels using more shared memory than the target's limit without opting in (48 KiB) must
        opt in (once per size increase)."""
        limit = self.code.target.gpu.max_shared_memory_per_block
        if self._static_shared + dynamic <= limit or dynamic <= self._shared_opt_in:
            return
        optin = self.code.target.gpu.max_shared_memory_per_block_optin
        if self._static_shared + dynamic > optin:
            raise CudaRuntimeError(f"kernel '{self.func.name}': {dynamic} bytes of dynamic shared memory "
                                   f"(plus {self._static_shared} static) exceed the opt-in limit of "
                                   f"{self.code.arch} ({optin} bytes per block)")
        attr = self._drv.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES
        try:
            self._function.set_attribute(attr, dynamic)
        except self._drv.Error as exc:
            raise CudaRuntimeError(f"kernel '{self.func.name}': {dynamic} bytes of dynamic shared memory "
                                   "(plus "
                                   f"{self._static_shared} static) exceed this device's limit: "
                                   f"{exc}") from exc
        self._shared_opt_in = dynamic

    def _temp_pointers(self, symbols: dict[str, int]) -> list[int]:
        """Device pointers of the temp spaces for this launch (CINN's temp_spaces).

        Allocations are kept and grown as needed: launches on one stream run in order, so a
        buffer can be reused by the next launch; zero-filling is a stream-ordered memset.
        """
        ptrs = []
        for space in self.code.temp_spaces:
            nbytes = space.nbytes(symbols)
            held = self._temps.get(space.name)
            if held is None or held[0] < nbytes:
                held = (nbytes, self._drv.mem_alloc(nbytes))
                self._temps[space.name] = held
            ptr = int(held[1])
            if space.zero_init:
                self._drv.memset_d8(ptr, 0, nbytes)
            ptrs.append(ptr)
        return ptrs


def _np_dtype(tensor: Any) -> np.dtype:
    from cinn_py.runtime.args import storage_dtype  # noqa: PLC0415

    return storage_dtype(tensor.dtype)


def device_arch() -> str:
    """`sm_XY` of the current CUDA device."""
    drv, _ = _pycuda()
    major, minor = drv.Context.get_device().compute_capability()
    return f"sm_{major}{minor}"


def _device_arch_or_unknown(drv: Any) -> str:
    try:
        major, minor = drv.Context.get_device().compute_capability()
    except Exception:  # describing the device must not hide the load error
        return "unknown arch"
    return f"sm_{major}{minor}"
