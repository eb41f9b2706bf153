"""Run CUDA kernels in the CPU emulator from tests (no GPU needed): see docs/cuda_emulation.md.

    from cinn_py.tools.testing.cuda import run_cuda_emulated
    got = run_cuda_emulated(program, x, y)                       # a NetBuilder Program, auto-scheduled
    got = run_cuda_emulated(func, x, schedule=None)              # a scheduled (bound) LoweredFunc
    got = run_cuda_emulated(func, x, race_check=True)            # + ThreadSanitizer race check

The kernels are the exact CUDA C the CUDA backend generates (the same `cp.build(..., "cuda")`
path, `emulate=True`), compiled with g++ against the emulation header and cached on disk.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from cinn_py.frontend.program import Program
from cinn_py.ir import LoweredFunc

EMULATE_ENV = "CINN_PY_CUDA"  # codegen.cuda.loader.EMULATE_ENV (the core does not import codegen)


@contextmanager
def cuda_emulation(race_check: bool = False) -> Iterator[None]:
    """Every CUDA build inside the block runs in the emulator (`CINN_PY_CUDA=emulate`)."""
    saved = {name: os.environ.get(name) for name in (EMULATE_ENV, "CINN_PY_CUDA_RACE_CHECK")}
    os.environ[EMULATE_ENV] = "emulate"
    if race_check:
        os.environ["CINN_PY_CUDA_RACE_CHECK"] = "1"
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def run_cuda_emulated(what: Program | LoweredFunc, *inputs: Any, schedule: str | None = "auto",
                      fast_math: bool = False, race_check: bool = False) -> Any:
    """Build `what` for CUDA, run it in the CPU emulator on numpy `inputs`, return its output(s).

    A Program goes through the whole pipeline (`compile_program`, every fused group one kernel);
    a LoweredFunc through `build` (`schedule=None` for a function you bound yourself).
    """
    from cinn_py import pipeline  # noqa: PLC0415

    with cuda_emulation(race_check):
        if isinstance(what, Program):
            return pipeline.compile_program(what, "cuda", schedule=schedule, fast_math=fast_math)(*inputs)
        if isinstance(what, LoweredFunc):
            return pipeline.build(what, "cuda", fast_math=fast_math, schedule=schedule)(*inputs)
    raise TypeError(f"run_cuda_emulated: expected a Program or a LoweredFunc, got {type(what).__name__}")
