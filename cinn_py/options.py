"""Build options as values: what `cinn_py.build / codegen / compile_program` accept besides the
function and the target, checked once at that door and handed typed to the steps and backends
that read them.

    >>> from cinn_py.options import BuildOptions
    >>> options = BuildOptions.parse(fast_math=True, checked=True, nvrtc_options=["-lineinfo"])
    >>> options.fast_math, options.checked, options.cuda.nvrtc_options
    (True, True, ('-lineinfo',))
    >>> BuildOptions.parse(fast_maths=True)
    Traceback (most recent call last):
      ...
    TypeError: build option 'fast_maths' is unknown; the options are: cache, checked, count_traffic, ...
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class CudaOptions:
    """What the CUDA backend reads (`codegen.cuda`)."""

    nvrtc_options: tuple[str, ...] = ()
    """Extra NVRTC flags."""
    emulate: bool | None = None
    """Run the kernels in the CPU emulator; None: `$CINN_PY_CUDA` decides (`codegen.cuda.loader`)."""
    race_check: bool | None = None
    """Emulator only: ThreadSanitizer on each launch (a data race raises `DataRaceError`)."""
    count_traffic: bool = False
    """Emulator only: the kernel counts its global loads and stores (`kernel.last_traffic`)."""


@dataclass(frozen=True)
class BuildOptions:
    """Every option of a build, for either backend (each reads its own)."""

    fast_math: bool = False
    """Fast transcendental functions (x86: polynomial exp/log/tanh/...; CUDA: `__expf` and
    `--use_fast_math`)."""
    checked: bool | None = None
    """Bounds-checked kernels; None: the process default (`cinn_py.runtime.checked`)."""
    num_threads: int | None = None
    """x86: threads of the kernel's parallel loops; None: the runtime thread pool's setting."""
    cache: bool = True
    """x86: use the memory and disk compile caches."""
    cuda: CudaOptions = field(default_factory=CudaOptions)

    @staticmethod
    def parse(fast_math: object = False, **options: object) -> BuildOptions:
        """The options of a keyword call (`cinn_py.build(func, target, fast_math, checked=True)`),
        each name and type checked: a TypeError names the option, what it expects and what it got."""
        unknown = sorted(set(options) - _NAMES)
        if unknown:
            raise TypeError(f"build option '{unknown[0]}' is unknown; the options are: "
                            f"{', '.join(sorted(_NAMES | {'fast_math'}))}")
        cuda = CudaOptions(nvrtc_options=_strings("nvrtc_options", options.get("nvrtc_options", ())),
                           emulate=_optional_bool("emulate", options.get("emulate")),
                           race_check=_optional_bool("race_check", options.get("race_check")),
                           count_traffic=_bool("count_traffic", options.get("count_traffic", False)))
        threads = options.get("num_threads")
        if threads is not None and (not isinstance(threads, int) or isinstance(threads, bool)):
            raise TypeError(f"build option num_threads: expected a positive int or None, got {threads!r}")
        if threads is not None and threads < 1:  # the right type, a wrong value: ValueError, as Python's own
            raise ValueError(f"build option num_threads: expected a positive int or None, got {threads!r}")
        return BuildOptions(_bool("fast_math", fast_math), _optional_bool("checked", options.get("checked")),
                            threads, _bool("cache", options.get("cache", True)), cuda)

    def with_checked(self, checked: bool) -> BuildOptions:
        return dataclasses.replace(self, checked=checked)


_NAMES = {f.name for f in dataclasses.fields(BuildOptions) if f.name not in ("cuda", "fast_math")} | {
    f.name for f in dataclasses.fields(CudaOptions)}


def _bool(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"build option {name}: expected a bool, got {type(value).__name__} {value!r}")
    return value


def _optional_bool(name: str, value: object) -> bool | None:
    if value is not None and not isinstance(value, bool):
        raise TypeError(f"build option {name}: expected a bool or None, got {type(value).__name__} {value!r}")
    return value


def _strings(name: str, value: object) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence) or not all(isinstance(v, str)
                                                                             for v in value):
        raise TypeError(f"build option {name}: expected a sequence of strings, got {value!r}")
    return tuple(value)


__all__ = ["BuildOptions", "CudaOptions"]
