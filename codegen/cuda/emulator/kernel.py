"""`EmulatedCudaKernel`: a generated CUDA kernel run on the CPU, with the PyCUDA `Kernel`'s interface.

Calling it validates numpy inputs with the same `ArgValidator`, copies them like a host-to-device
copy would (contiguous, 256-byte aligned: `device_copy`), evaluates output shapes, launch
dims, dynamic shared bytes and temp space sizes from the symbolic dims with the same host logic
(`codegen.cuda.launch`), packs the arguments in the same signature order, runs the grid through
the emulator's launch runtime and, for checked builds, turns `cinn_oob_status` into the same
`OutOfBoundsAccessError`. Outputs and temp spaces that the kernel need not zero start filled with
0xff bytes (NaN for floats), so a kernel that reads an element before writing it shows up.

`race_check=True` also runs every launch once more in a ThreadSanitizer build of the same source
(`codegen.cuda.emulator.races`) and raises `DataRaceError` when threads of the grid access memory
without a barrier between them.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any

import numpy as np

from cinn_py.diagnostics import CinnError
from cinn_py.ir import LoweredFunc
from cinn_py.runtime.kernel import KernelBase
from codegen.cuda.generate import GeneratedCode
from codegen.cuda.launch import check_alignment, kernel_arguments
from codegen.cuda.traffic import Traffic
from codegen.cuda.emulator.compile import shared_library

_POISON = 0xFF
_CTYPES = {"P": ctypes.c_void_p, "q": ctypes.c_int64, "i": ctypes.c_int32}


class EmulationError(CinnError):
    """The emulated launch failed: a deadlock (a barrier or warp collective not reached by every
    thread it waits for), divergent barriers, `__trap()`, or a launch the emulator cannot run."""


class EmulatedCudaKernel(KernelBase):
    """`kernel(*inputs, out=None)` -> output array(s), computed by the CUDA source on the CPU."""

    def __init__(self, code: GeneratedCode, func: LoweredFunc, race_check: bool = False) -> None:
        from cinn_py.runtime.args import ArgValidator  # noqa: PLC0415

        self.code = code
        self.func = func
        self.checks = code.checks
        self.race_check = race_check
        self.validator = ArgValidator(func, device="cpu")
        self._lib = shared_library(code.source, code.kernel_name)
        self._lock = threading.Lock()  # cinn_oob_status and cinn_traffic are globals of the library
        self.last_traffic: Traffic | None = None
        """Traffic-counting builds: the global bytes the last launch loaded and stored."""

    @property
    def source(self) -> str:
        return self.code.source

    def __repr__(self) -> str:
        return f"<emulated cuda Kernel {self.code.kernel_name} {self.code.launch}>"

    def __call__(self, *args: Any, out: Any = None) -> Any:
        if any(hasattr(a, "__cuda_array_interface__") for a in args):
            raise TypeError(f"kernel '{self.func.name}' runs in the CPU emulator: pass numpy arrays, not "
                            "CUDA arrays")
        bound = self.validator.validate(args, out)
        shapes = self.validator.output_shapes(bound.symbols)
        inputs = [device_copy(m.array) for m in bound.inputs]
        outputs = [_poisoned(shape, _np_dtype(t)) for shape, t in zip(shapes, self.func.outputs)]
        self.launch(inputs, outputs, bound.symbols)
        if out is not None:
            for result, meta in zip(outputs, bound.outputs):
                meta.array[...] = result
            return out
        return self.results(outputs)

    def launch(self, inputs: list[np.ndarray], outputs: list[np.ndarray], symbols: dict[str, int]) -> None:
        """Run the grid on contiguous host arrays (outputs are written in place)."""
        check_alignment(self.code, self.func.name, [a.ctypes.data for a in (*inputs, *outputs)])
        grid, block, shared = self.code.launch.launch_dims(symbols)
        if 0 in grid or 0 in block:
            return
        temps = [_zeros(s.nbytes(symbols)) if s.zero_init
                 else _poisoned((s.nbytes(symbols),), np.dtype(np.uint8))
                 for s in self.code.temp_spaces]
        arguments = kernel_arguments(self.code, [a.ctypes.data for a in inputs],
                                     [a.ctypes.data for a in outputs],
                                     symbols)
        arguments.extend(("P", t.ctypes.data) for t in temps)
        if self.race_check:
            from codegen.cuda.emulator.races import check_races  # noqa: PLC0415

            check_races(self.code, self.func.name, arguments, (*grid, *block), shared,
                        {a.ctypes.data: a for a in (*inputs, *outputs, *temps)})
        values = [_CTYPES[kind](value) for kind, value in arguments]
        params = (ctypes.c_void_p * max(1, len(values)))(*[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p)
                                                          for v in values])
        dims = (ctypes.c_uint * 6)(*grid, *block)
        with self._lock:
            counters = ((ctypes.c_ulonglong * 2).in_dll(self._lib, "cinn_traffic")
                        if self.code.counts_traffic else None)
            if counters is not None:
                counters[0] = counters[1] = 0
            failed = self._lib.cinn_emu_launch(params, dims, shared)
            if counters is not None:
                self.last_traffic = Traffic(int(counters[0]), int(counters[1]))
            if failed:
                message = (self._lib.cinn_emu_error() or b"").decode(errors="replace")
                raise EmulationError(f"kernel '{self.func.name}' (CUDA emulator, grid={grid} block={block} "
                                     f"shared={shared}): {message}")
            if self.code.checks:
                self._raise_failed_check()

    def _raise_failed_check(self) -> None:
        status = (ctypes.c_longlong * 2).in_dll(self._lib, "cinn_oob_status")
        if not status[0]:
            return
        check, index = int(status[0]), int(status[1])
        status[0] = status[1] = 0
        raise self.out_of_bounds(check - 1, index, "the access went to element 0 instead")


DEVICE_ALIGNMENT = 256
"""Bytes cudaMalloc aligns every allocation to."""


def device_copy(array: np.ndarray) -> np.ndarray:
    """`array` as the kernel sees a host input on the GPU: contiguous, in a buffer aligned like a
    fresh device allocation (the PyCUDA Kernel copies host inputs to new device memory, so a numpy
    view at an odd offset still meets the alignment of vectorised loads)."""
    if array.flags.c_contiguous and array.ctypes.data % DEVICE_ALIGNMENT == 0:
        return array
    raw = np.empty(array.nbytes + DEVICE_ALIGNMENT, dtype=np.uint8)
    start = -raw.ctypes.data % DEVICE_ALIGNMENT
    copy = raw[start:start + array.nbytes].view(array.dtype).reshape(array.shape)
    copy[...] = array
    return copy


def _poisoned(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    array = np.empty(shape, dtype=dtype)
    array.reshape(-1).view(np.uint8)[...] = _POISON
    return array


def _zeros(nbytes: int) -> np.ndarray:
    return np.zeros(nbytes, dtype=np.uint8)


def _np_dtype(tensor: Any) -> np.dtype:
    from cinn_py.runtime.args import storage_dtype  # noqa: PLC0415

    return storage_dtype(tensor.dtype)
