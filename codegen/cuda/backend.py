"""The CUDA backend object of the backend table (`cinn_py.backend.BACKENDS["cuda"]`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cinn_py.backend import DEFAULT_OPTIONS
from cinn_py.diagnostics import CompileError
from cinn_py.options import BuildOptions
from cinn_py.ir import LoweredFunc
from cinn_py.target import Target
from codegen.cuda import build_cuda
from codegen.cuda.generate import GeneratedCode, generate_cuda
from codegen.cuda.loader import KernelLoader


def _check_target(target: Target) -> None:
    if target.kind != "cuda":
        raise CompileError(f"cuda backend: got a {target} target")


def _arch(arch: str) -> str:
    """The target's arch; "auto" is the current device's."""
    return Target.cuda("auto").arch if arch == "auto" else arch


class CudaBackend:
    """CUDA C through NVRTC, launched with PyCUDA, or run on the CPU by the emulator (see `codegen.cuda`)."""

    name = "cuda"

    def generate(self, func: LoweredFunc, target: Target, options: BuildOptions = DEFAULT_OPTIONS,
                 lowered: bool = False) -> GeneratedCode:
        """CUDA C for `target.arch` (NVRTC runs on first `.ptx`/`.cubin`); unchecked unless
        `options.checked` asks."""
        _check_target(target)
        return generate_cuda(func, fast_math=options.fast_math, arch=_arch(target.arch),
                             options=options.cuda.nvrtc_options, checked=bool(options.checked),
                             lowered=lowered, count_traffic=options.cuda.count_traffic)

    def load(self, code: GeneratedCode, options: BuildOptions = DEFAULT_OPTIONS) -> Any:
        """A PyCUDA Kernel, or the CPU emulator's (`emulate`, `race_check`: see `codegen.cuda.loader`)."""
        return _loader(options)(code, code.func)

    def build(self, func: LoweredFunc, target: Target, options: BuildOptions = DEFAULT_OPTIONS,
              lowered: bool = False) -> Any:
        _check_target(target)
        return build_cuda(func, arch=_arch(target.arch), lowered=lowered, **_build_kwargs(options))

    def build_buckets(self, func: LoweredFunc, target: Target, buckets: Sequence[tuple[Any, LoweredFunc]],
                      options: BuildOptions = DEFAULT_OPTIONS) -> Any:
        """One kernel per shape bucket behind a `BucketDispatch` (`build_cuda`'s `buckets`)."""
        _check_target(target)
        return build_cuda(func, arch=_arch(target.arch), buckets=list(buckets), **_build_kwargs(options))


def _loader(options: BuildOptions) -> KernelLoader:
    return KernelLoader.from_options({"emulate": options.cuda.emulate, "race_check": options.cuda.race_check})


def _build_kwargs(options: BuildOptions) -> dict[str, Any]:
    """`build_cuda`'s keywords for `options` (the package-level function keeps its keyword form)."""
    return {"fast_math": options.fast_math, "nvrtc_options": options.cuda.nvrtc_options,
            "checked": options.checked, "count_traffic": options.cuda.count_traffic,
            "emulate": options.cuda.emulate, "race_check": options.cuda.race_check}


BACKEND = CudaBackend()
