"""NVRTC wrapper: CompileError with log and offending lines, caching (memory and the signed disk
cache), arch checks."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from cinn_py.diagnostics import CompileError
from cinn_py.runtime import cache
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


@pytest.fixture
def cuda_cache(cache_dir: Path) -> Iterator[Path]:
    """The disk cache under a temporary folder, NVRTC's memory cache empty; yields the CUDA folder."""
    nvrtc.clear_cache()
    nvrtc.DISK_CACHE._warned.clear()
    yield cache_dir.parent / "cuda"
    nvrtc.clear_cache()


def _no_compiles(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object) -> None:
        raise AssertionError("NVRTC ran although the disk cache holds the kernel")
    monkeypatch.setattr(nvrtc, "_compile_uncached", refuse)


def test_disk_cache_serves_a_new_process_without_nvrtc_compiling(cuda_cache: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    first = nvrtc.compile_cuda(GOOD)
    (entry,) = cuda_cache.glob("*.bin")
    nvrtc.clear_cache()                        # as a new process would start
    with pytest.MonkeyPatch.context() as mp:
        _no_compiles(mp)
        again = nvrtc.compile_cuda(GOOD)
    assert (again.ptx, again.cubin, again.arch) == (first.ptx, first.cubin, "sm_90")
    virtual = nvrtc.compile_cuda(GOOD, arch="compute_80")
    assert virtual.cubin is None and len(list(cuda_cache.glob("*.bin"))) == 2
    nvrtc.clear_cache()
    with pytest.MonkeyPatch.context() as mp:
        _no_compiles(mp)
        assert nvrtc.compile_cuda(GOOD, arch="compute_80").cubin is None
    assert entry.exists()


def test_disk_cache_refuses_copied_and_planted_entries(cuda_cache: Path) -> None:
    other_source = GOOD.replace("1.0f", "2.0f")
    good, other = nvrtc.compile_cuda(GOOD), nvrtc.compile_cuda(other_source)
    entries = {e.stem for e in cuda_cache.glob("*.bin")}
    good_key = nvrtc._disk_key(GOOD, "sm_90", ())
    other_key = nvrtc._disk_key(other_source, "sm_90", ())
    assert entries == {good_key, other_key}
    shutil.copyfile(cuda_cache / f"{other_key}.bin", cuda_cache / f"{good_key}.bin")   # copied entry
    nvrtc.clear_cache()
    with pytest.warns(RuntimeWarning, match="foreign entry"):
        assert nvrtc.compile_cuda(GOOD).ptx == good.ptx != other.ptx
    forged = cache._encode({"ptx": other.ptx, "log": "", "cubin": True}, other.cubin or b"", os.urandom(32),
                           "cuda", good_key)
    (cuda_cache / f"{good_key}.bin").write_bytes(forged)                               # planted entry
    nvrtc.clear_cache()
    with pytest.warns(RuntimeWarning, match="foreign entry"):
        assert nvrtc.compile_cuda(GOOD).cubin == good.cubin


def test_include_dir_prefers_the_wheel_matching_nvrtc(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """CUDA 13 wheels install their headers under nvidia/cu13/include (no nvidia.cuda_runtime package):
    the folder of NVRTC's major version comes first, then the CUDA 12 runtime wheel, then a toolkit."""
    import nvidia  # pyright: ignore[reportMissingImports]

    for folder in ("cu12/include", "cu13/include", "cuda_runtime/include"):
        (tmp_path / folder).mkdir(parents=True)
    monkeypatch.setattr(nvidia, "__path__", [str(tmp_path)])
    monkeypatch.setenv("CUDA_HOME", "/opt/toolkit")
    found = nvrtc.include_dir_candidates(13)
    assert found[:4] == [tmp_path / "cu13/include", tmp_path / "cuda_runtime/include",
                         tmp_path / "cu12/include",
                         Path("/opt/toolkit/include")]
    assert nvrtc.include_dir_candidates(None)[0] == tmp_path / "cuda_runtime/include"


def test_missing_headers_name_the_folders_searched(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nvrtc, "include_dir_candidates", lambda major: [Path("/nowhere/include")])
    nvrtc.cuda_include_dir.cache_clear()
    try:
        with pytest.raises(CompileError, match=r"cuda_fp16.h not found .*searched /nowhere/include"):
            nvrtc.cuda_include_dir()
    finally:
        nvrtc.cuda_include_dir.cache_clear()
