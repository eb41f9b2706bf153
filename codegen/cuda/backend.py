"""The CUDA backend object of the backend table (`cinn_py.backend.BACKENDS["cuda"]`)."""

from __future__ import annotations

from typing import Any

from cinn_py.diagnostics import CompileError
from cinn_py.ir import LoweredFunc
from cinn_py.target import Target
from codegen.cuda import build_cuda
from codegen.cuda.generate import GeneratedCode, generate_cuda
from codegen.cuda.loader import KernelLoader


def _check_target(target: Target) -> None:
    if target.kind != "cuda":
        raise CompileError(f"cuda backend: got a {target} target")


def _arch(arch: str) -> str:
    """An explicit `arch=` option wins over the target's; "auto" is the current device's."""
    return Target.cuda("auto").arch if arch == "auto" else arch


class CudaBackend:
    """CUDA C through NVRTC, launched with PyCUDA, or run on the CPU by the emulator (see `codegen.cuda`)."""

    name = "cuda"

    def generate(self, func: LoweredFunc, target: Target, fast_math: bool = False,
                 **options: Any) -> GeneratedCode:
        _check_target(target)
        arch = _arch(options.pop("arch", target.arch))
        # build's spelling of the extra NVRTC flags (`nvrtc_options`) works here too
        extra = tuple(options.pop("nvrtc_options", ())) + tuple(options.pop("options", ()))
        return generate_cuda(func, fast_math=fast_math, arch=arch, options=extra, **options)

    def load(self, code: GeneratedCode, **options: Any) -> Any:
        """A PyCUDA Kernel, or the CPU emulator's (`emulate`, `race_check`: see `codegen.cuda.loader`)."""
        loader = KernelLoader.from_options(options)
        if options:
            raise TypeError(f"cuda backend load: unknown options {sorted(options)}")
        return loader(code, code.func)

    def build(self, func: LoweredFunc, target: Target, fast_math: bool = False, **options: Any) -> Any:
        _check_target(target)
        return build_cuda(func, fast_math=fast_math, arch=_arch(options.pop("arch", target.arch)), **options)


BACKEND = CudaBackend()
