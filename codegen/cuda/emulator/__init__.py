"""The CUDA emulator: generated CUDA C run on the CPU, for machines without a GPU.

The exact translation unit NVRTC compiles is built with g++ against `include/cuda_emu.h` (the
CUDA built-ins: threads as fibers per block, barriers, warp shuffles and votes, per-block shared
memory, atomics, half types) and launched through ctypes by `EmulatedCudaKernel`, which has the
PyCUDA `Kernel`'s call interface. See docs/cuda_emulation.md.

    build_cuda(func, emulate=True)         -> EmulatedCudaKernel (or a BucketDispatch of them)
    cp.build(func, "cuda", emulate=True)   -> the same through the pipeline
    CINN_PY_CUDA=emulate                   -> every CUDA build emulates
"""

from __future__ import annotations

from codegen.cuda.emulator.kernel import EmulatedCudaKernel, EmulationError
from codegen.cuda.emulator.races import DataRaceError

__all__ = ["DataRaceError", "EmulatedCudaKernel", "EmulationError"]
