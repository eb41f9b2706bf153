"""Build options: checked once at the door (`cinn_py.build / codegen / compile`, and the backends'
keyword conveniences `build_x86` / `build_cuda`) into a frozen `BuildOptions`, which reaches the
backend typed; an unknown or ill-typed option is an error naming it."""

from __future__ import annotations

import numpy as np
import pytest

import cinn_py as cp
from cinn_py.ir import LoweredFunc
from cinn_py.options import BuildOptions, CudaOptions
from cinn_py.target import Target
from codegen.cuda import build_cuda
from codegen.llvm import build_x86
from codegen.llvm.backend import X86Backend


def _func() -> LoweredFunc:
    x = cp.placeholder((4, 8), "float32", "X")
    return cp.lower("twice", [x, cp.compute((4, 8), lambda i, j: x[i, j] * 2.0, "Y")])


def test_the_backend_gets_the_options_typed(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[Target, BuildOptions]] = []
    original = X86Backend.build

    def spy(self: X86Backend, func: LoweredFunc, target: Target, options: BuildOptions) -> object:
        seen.append((target, options))
        return original(self, func, target, options)

    monkeypatch.setattr(X86Backend, "build", spy)
    kernel = cp.build(_func(), "x86", num_threads=2, cache=False, checked=True)
    x = np.ones((4, 8), np.float32)
    np.testing.assert_array_equal(kernel(x), x * 2)
    assert seen == [(Target.parse("x86"), BuildOptions(checked=True, num_threads=2, cache=False))]


@pytest.mark.parametrize(("options", "error", "message"), [
    ({"fast_maths": True}, TypeError,
     r"build option 'fast_maths' is unknown; the options are: cache, checked, count_traffic, emulate, "
     r"fast_math, num_threads, nvrtc_options, race_check"),
    ({"checked": "yes"}, TypeError, r"build option checked: expected a bool or None, got str 'yes'"),
    ({"fast_math": 1}, TypeError, r"build option fast_math: expected a bool, got int 1"),
    ({"num_threads": 0}, ValueError, r"build option num_threads: expected a positive int or None, got 0"),
    ({"num_threads": 2.0}, TypeError, r"build option num_threads: expected a positive int or None, got 2.0"),
    ({"nvrtc_options": "-lineinfo"}, TypeError,
     r"build option nvrtc_options: expected a sequence of strings"),
    ({"arch": "sm_90"}, TypeError, r"build option 'arch': a GPU architecture, but the target is x86"),
])
def test_the_door_names_a_wrong_option(options: dict[str, object], error: type[Exception],
                                       message: str) -> None:
    with pytest.raises(error, match=message):
        cp.build(_func(), "x86", **options)  # type: ignore[arg-type]


def test_an_arch_must_be_a_string() -> None:
    with pytest.raises(TypeError, match=r"build option arch: expected a string such as 'sm_90', got int 90"):
        cp.codegen(_func(), "cuda", schedule="auto", arch=90)
    assert cp.codegen(_func(), "cuda", schedule="auto", arch="sm_80").target == Target.cuda("sm_80")


def test_the_backend_conveniences_check_like_the_door() -> None:
    with pytest.raises(ValueError, match=r"build option num_threads: expected a positive int or None, got 0"):
        build_x86(_func(), num_threads=0)
    with pytest.raises(TypeError, match=r"build option emulate: expected a bool or None, got str 'yes'"):
        build_cuda(cp.auto_schedule(_func(), "cuda").func, emulate="yes")
    with pytest.raises(TypeError, match=r"build option 'emulat' is unknown"):
        build_cuda(cp.auto_schedule(_func(), "cuda").func, emulat=True)


def test_cuda_options_travel_in_the_build_options() -> None:
    options = BuildOptions.parse(True, nvrtc_options=["-lineinfo"], emulate=True, race_check=False)
    assert options == BuildOptions(fast_math=True, cuda=CudaOptions(("-lineinfo",), True, False, False))
    code = cp.codegen(_func(), "cuda", schedule="auto", fast_math=True, nvrtc_options=["-lineinfo"])
    assert code.options == ("--use_fast_math", "-lineinfo")
    kernel = cp.build(_func(), "cuda", schedule="auto", emulate=True)
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    np.testing.assert_array_equal(kernel(x), x * 2)
