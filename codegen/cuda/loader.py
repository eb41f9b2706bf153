"""Which loader runs a generated CUDA kernel: PyCUDA on a GPU, or the CPU emulator.

`build_cuda(..., emulate=None)` reads `CINN_PY_CUDA`: unset or `gpu` loads through PyCUDA (needs a
GPU), `emulate` runs every kernel in the CPU emulator (`codegen.cuda.emulator`); `emulate=True`/
`False` overrides the variable. `race_check=True` (emulator only; default from
`CINN_PY_CUDA_RACE_CHECK=1`) also runs each launch under ThreadSanitizer and raises
`DataRaceError` on unsynchronised shared-memory accesses.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from cinn_py.ir import LoweredFunc
from cinn_py.options import CudaOptions
from codegen.cuda.generate import GeneratedCode

EMULATE_ENV = "CINN_PY_CUDA"
RACE_CHECK_ENV = "CINN_PY_CUDA_RACE_CHECK"
_MODES = {"": False, "gpu": False, "emulate": True}
DEFAULT_EMULATED_ARCH = "sm_90"
"""What `arch="auto"` means in the emulator (there is no device to ask)."""


def resolve_race_check(race_check: bool | None) -> bool:
    """`race_check` as given, else `$CINN_PY_CUDA_RACE_CHECK` (`1`: on)."""
    if race_check is not None:
        return bool(race_check)
    return os.environ.get(RACE_CHECK_ENV, "").strip() not in ("", "0")


def resolve_emulate(emulate: bool | None) -> bool:
    """`emulate` as given, else from `$CINN_PY_CUDA` (`gpu` or unset: False, `emulate`: True)."""
    if emulate is not None:
        return bool(emulate)
    value = os.environ.get(EMULATE_ENV, "").strip().lower()
    if value not in _MODES:
        raise ValueError(f"{EMULATE_ENV}={value!r}: expected 'gpu' (PyCUDA on a GPU) or 'emulate' (the CPU "
                         "emulator)")
    return _MODES[value]


@dataclass(frozen=True)
class KernelLoader:
    """Turns GeneratedCode into a callable kernel: a PyCUDA `Kernel` or an `EmulatedCudaKernel`."""

    emulate: bool = False
    race_check: bool = False

    def __post_init__(self) -> None:
        if self.race_check and not self.emulate:
            raise ValueError("build_cuda: race_check=True needs the CPU emulator (emulate=True or "
                             "CINN_PY_CUDA=emulate)")

    @staticmethod
    def for_options(options: CudaOptions) -> KernelLoader:
        """The loader `options.emulate` and `options.race_check` ask for (None: the environment
        decides); race checking from the environment applies to emulated builds only."""
        emulate = resolve_emulate(options.emulate)
        race_check = options.race_check
        return KernelLoader(emulate,
                            resolve_race_check(race_check) if race_check is not None or emulate else False)

    def __call__(self, code: GeneratedCode, func: LoweredFunc) -> Any:
        if self.emulate:
            from codegen.cuda.emulator import EmulatedCudaKernel  # noqa: PLC0415

            return EmulatedCudaKernel(code, func, race_check=self.race_check)
        from codegen.cuda.kernel import Kernel  # noqa: PLC0415 - PyCUDA loads only to launch

        return Kernel(code, func)

    def arch(self, arch: str) -> str:
        """`arch="auto"`: the current device's, or sm_90 in the emulator."""
        if arch != "auto":
            return arch
        if self.emulate:
            return DEFAULT_EMULATED_ARCH
        from codegen.cuda.kernel import device_arch  # noqa: PLC0415

        return device_arch()
