"""NVRTC wrapper: CompileError with log and offending lines, caching, arch checks."""

from __future__ import annotations

import pytest

from cinn_py.diagnostics import CompileError
from codegen.cuda import nvrtc

GOOD = '#include "cinn_cuda_runtime.cuh"\nextern "C" __global__ void k(float* x) { x[threadIdx.x] = 1.0f; }\n'
BAD = ('#include "cinn_cuda_runtime.cuh"\n'
       'extern "C" __global__ void k(float* x) {\n'
       '  x[threadIdx.x] = undefined_name;\n'
       '}\n')


def test_compile_error_shows_log_and_numbered_source_line() -> None:
    with pytest.raises(CompileError) as info:
        nvrtc.compile_cuda(BAD, name="bad.cu")
    err = info.value
    assert "compiling 'bad.cu' for sm_90 failed" in err.message
    assert 'identifier "undefined_name" is undefined' in err.detail
    assert ">>    3 |   x[threadIdx.x] = undefined_name;" in err.detail
    assert "      2 | extern" in err.detail  # context line


def test_results_are_cached_by_source_arch_and_options() -> None:
    nvrtc.clear_cache()
    first = nvrtc.compile_cuda(GOOD)
    assert nvrtc.compile_cuda(GOOD) is first
    assert nvrtc.cache_size() == 1
    other = nvrtc.compile_cuda(GOOD, arch="sm_80")
    fast = nvrtc.compile_cuda(GOOD, options=("--use_fast_math",))
    assert other is not first and fast is not first and nvrtc.cache_size() == 3
    assert ".target sm_80" in other.ptx and ".target sm_90" in first.ptx


@pytest.mark.parametrize("arch", ["sm90", "90", "", "sm_9"])
def test_malformed_arch(arch: str) -> None:
    with pytest.raises(ValueError, match="CUDA arch must look like"):
        nvrtc.compile_cuda(GOOD, arch=arch)


def test_version_and_include_dir() -> None:
    major, _ = nvrtc.nvrtc_version()
    assert major >= 12
    assert nvrtc.cuda_include_dir().endswith("include")
