"""NVRTC compilation of CUDA C source to PTX and CUBIN (no GPU needed).

Uses the `cuda-bindings` NVRTC binding with the library from the `nvidia-cuda-nvrtc-cu12` wheel
(CUDA 12) or `nvidia-cuda-nvrtc` (CUDA 13). The NVRTC wheel ships no headers: `cuda_fp16.h`/
`cuda_bf16.h` come from the runtime wheel's `include/` folder or a toolkit (`cuda_include_dir`,
passed with `-I`). The device runtime
header `cinn_cuda_runtime.cuh` (package data next to this module) is handed to NVRTC as an
in-memory header, so generated sources simply `#include "cinn_cuda_runtime.cuh"`.

Results are cached in memory keyed by (source, arch, options), and on disk
(`cinn_py.runtime.cache`, namespace "cuda": HMAC-signed entries keyed by the source, arch,
options, the runtime header, the include folder, the NVRTC version and `project_digest()`; an untrusted cache
directory is bypassed), so a new process does not recompile the kernels an earlier one did.
A compile failure raises `CompileError` carrying the NVRTC log and the offending source lines
with line numbers.
"""

from __future__ import annotations

import functools
import os
import re
import threading
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from cinn_py.diagnostics import CompileError
from cinn_py.runtime.cache import CompileCache, fingerprint_key, project_digest

RUNTIME_HEADER_NAME = "cinn_cuda_runtime.cuh"
PTXAS_REPORT = "--ptxas-options=-v"
"""Added to every CUBIN compile: the log then holds ptxas's per-kernel resource report."""
_ARCH_RE = re.compile(r"^(sm|compute)_(\d{2,3})[a-z]?$")
_LOG_LINE_RE = re.compile(r"^(?P<file>[^()\s]+)\((?P<line>\d+)\): (?P<kind>error|warning)")
_CACHE: dict[tuple[str, str, tuple[str, ...]], CompiledCuda] = {}
_CACHE_LOCK = threading.Lock()
DISK_CACHE = CompileCache("cuda")


@dataclass(frozen=True)
class CompiledCuda:
    """The products of one NVRTC compilation."""

    source: str
    arch: str
    options: tuple[str, ...]
    ptx: str
    cubin: bytes | None
    """None when `arch` is a virtual `compute_XX` architecture (PTX only)."""
    log: str


@functools.lru_cache(maxsize=1)
def runtime_header() -> str:
    """Text of the device runtime header shipped as package data."""
    return resources.files("codegen.cuda").joinpath(RUNTIME_HEADER_NAME).read_text(encoding="utf-8")


@functools.lru_cache(maxsize=1)
def cuda_include_dir() -> str:
    """The CUDA include folder handed to NVRTC (cuda_fp16.h, cuda_bf16.h).

    Searched in order: the CUDA wheels' folder matching NVRTC's major version (`nvidia/cu13/include`:
    CUDA 13 wheels install everything under `nvidia/cu13/`), the CUDA 12 runtime wheel
    (`nvidia/cuda_runtime/include`), any other `nvidia/cuNN/include`, then a toolkit
    (`$CUDA_HOME`, `$CUDA_PATH`, /usr/local/cuda). Headers of NVRTC's own version come first:
    a CUDA 13 `cuda_fp16.hpp` does not compile under NVRTC 12.
    """
    candidates = include_dir_candidates(_nvrtc_major_or_none())
    for folder in candidates:
        if (folder / "cuda_fp16.h").is_file():
            return str(folder)
    raise CompileError(
        "CUDA codegen: cuda_fp16.h not found (NVRTC needs the CUDA headers); searched "
        + ", ".join(str(c) for c in candidates),
        "install the runtime wheel matching NVRTC (pip install 'cinn-py[nvrtc]' for CUDA 12, "
        "nvidia-cuda-runtime for CUDA 13) or set CUDA_HOME to a CUDA toolkit",
    )


def include_dir_candidates(nvrtc_major: int | None) -> list[Path]:
    """Folders that may hold the CUDA headers, best first (see `cuda_include_dir`)."""
    wheel_roots: list[Path] = []
    try:
        import nvidia  # noqa: PLC0415  # pyright: ignore[reportMissingImports] (namespace package of the CUDA wheels)

        wheel_roots = [Path(p) for p in nvidia.__path__]
    except ImportError:
        pass
    versioned = sorted(d for root in wheel_roots for d in root.glob("cu[0-9]*") if d.is_dir())
    matching = f"cu{nvrtc_major}"
    folders = [d / "include" for d in versioned if d.name == matching]
    folders += [root / "cuda_runtime" / "include" for root in wheel_roots]
    folders += [d / "include" for d in versioned if d.name != matching]
    toolkits = [os.environ.get("CUDA_HOME", ""), os.environ.get("CUDA_PATH", ""), "/usr/local/cuda"]
    folders += [Path(t) / "include" for t in toolkits if t]
    return folders


def _nvrtc_major_or_none() -> int | None:
    try:
        return nvrtc_version()[0]
    except CompileError:
        return None


def _nvrtc():  # type: ignore[no-untyped-def]
    try:
        from cuda.bindings import nvrtc  # noqa: PLC0415  # pyright: ignore[reportAttributeAccessIssue] (a compiled module)
    except ImportError as exc:
        raise CompileError(
            "CUDA codegen: NVRTC is not available (cuda-bindings + nvidia-cuda-nvrtc-cu12, the optional "
            "'nvrtc' extra), so the CUDA C cannot be compiled to PTX/CUBIN; the source itself "
            "(GeneratedCode.source) needs no NVRTC",
            "install it with: pip install 'cinn-py[nvrtc]'",
        ) from exc
    return nvrtc


def nvrtc_version() -> tuple[int, int]:
    """(major, minor) of the NVRTC library in use."""
    nvrtc = _nvrtc()
    result, major, minor = nvrtc.nvrtcVersion()
    _check(nvrtc, result, "nvrtcVersion")
    return int(major), int(minor)


def _check(nvrtc, result, what: str) -> None:  # type: ignore[no-untyped-def]
    if result != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        _, text = nvrtc.nvrtcGetErrorString(result)
        raise CompileError(f"NVRTC: {what} failed: {text.decode(errors='replace')}")


def check_arch(arch: str) -> None:
    """Raise ValueError unless `arch` looks like `sm_90` / `sm_90a` / `compute_80`."""
    if not isinstance(arch, str) or not _ARCH_RE.match(arch):
        raise ValueError(f"CUDA arch must look like 'sm_90' or 'compute_80', got {arch!r}")


def compile_cuda(source: str, arch: str = "sm_90", options: tuple[str, ...] = (),
                 name: str = "cinn_kernel.cu") -> CompiledCuda:
    """Compile `source` with NVRTC for `arch`; cached by (source, arch, options).

    Raises:
        CompileError: NVRTC is missing or rejected the source (message shows log and lines).
        ValueError: `arch` is malformed.
    """
    check_arch(arch)
    key = (source, arch, tuple(options))
    with _CACHE_LOCK:
        cached = _CACHE.get(key)
    if cached is not None:
        return cached
    disk_key = _disk_key(source, arch, tuple(options))   # needs NVRTC: a missing extra is reported here
    compiled = _from_disk(disk_key, source, arch, tuple(options))
    if compiled is None:
        compiled = _compile_uncached(source, arch, tuple(options), name)
        DISK_CACHE.store(disk_key,
                         {"ptx": compiled.ptx, "log": compiled.log, "cubin": compiled.cubin is not None},
                         compiled.cubin or b"")
    with _CACHE_LOCK:
        _CACHE[key] = compiled
    return compiled


def _disk_key(source: str, arch: str, options: tuple[str, ...]) -> str:
    return fingerprint_key(source=source, arch=arch, options=list(options), header=runtime_header(),
                           include=cuda_include_dir(), nvrtc=list(nvrtc_version()),
                           sources=project_digest(), report=PTXAS_REPORT)


def _from_disk(key: str, source: str, arch: str, options: tuple[str, ...]) -> CompiledCuda | None:
    entry = DISK_CACHE.load(key)
    if entry is None:
        return None
    header, blob = entry
    if not isinstance(header.get("ptx"), str) or not isinstance(header.get("log"), str) \
            or header.get("cubin") is not (arch.startswith("sm_")) or (header["cubin"] and not blob):
        DISK_CACHE.discard(key)
        return None
    return CompiledCuda(source, arch, options, header["ptx"], blob if header["cubin"] else None,
                        header["log"])


def clear_cache() -> None:
    """Drop every cached compilation (tests use it to measure cold compiles)."""
    with _CACHE_LOCK:
        _CACHE.clear()


def cache_size() -> int:
    with _CACHE_LOCK:
        return len(_CACHE)


def _compile_uncached(source: str, arch: str, options: tuple[str, ...], name: str) -> CompiledCuda:
    nvrtc = _nvrtc()
    header = runtime_header().encode()
    result, prog = nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 1, [header],
                                            [RUNTIME_HEADER_NAME.encode()])
    _check(nvrtc, result, "nvrtcCreateProgram")
    try:
        # ptxas's resource report (registers, spills, shared memory) lands in the log: codegen.cuda.resources
        report = [PTXAS_REPORT] if arch.startswith("sm_") else []
        opts = [f"--gpu-architecture={arch}", f"-I{cuda_include_dir()}", "-std=c++17", *report, *options]
        encoded = [o.encode() for o in opts]
        (result,) = nvrtc.nvrtcCompileProgram(prog, len(encoded), encoded)
        log = _program_log(nvrtc, prog)
        if result != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise CompileError(f"NVRTC: compiling '{name}' for {arch} failed",
                               format_compile_failure(source, log, name))
        ptx = _get_bytes(nvrtc, prog, nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX).rstrip(b"\0").decode()
        cubin = None
        if arch.startswith("sm_"):
            cubin = _get_bytes(nvrtc, prog, nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN)
        return CompiledCuda(source, arch, options, ptx, cubin, log)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def _program_log(nvrtc, prog) -> str:  # type: ignore[no-untyped-def]
    return _get_bytes(nvrtc, prog, nvrtc.nvrtcGetProgramLogSize,
                      nvrtc.nvrtcGetProgramLog).rstrip(b"\0").decode(
        errors="replace")


def _get_bytes(nvrtc, prog, size_fn, get_fn) -> bytes:  # type: ignore[no-untyped-def]
    result, size = size_fn(prog)
    _check(nvrtc, result, size_fn.__name__)
    buf = b" " * size
    (result,) = get_fn(prog, buf)
    _check(nvrtc, result, get_fn.__name__)
    return buf


def format_compile_failure(source: str, log: str, name: str, context: int = 2) -> str:
    """The NVRTC log followed by each offending source line (with `context` lines around it)."""
    lines = source.split("\n")
    bad = sorted({int(m.group("line")) for m in map(_LOG_LINE_RE.match, log.splitlines())
                  if m and m.group("kind") == "error" and m.group("file") == name})
    parts = ["NVRTC log:", log.strip()]
    if bad:
        parts.append("offending source lines:")
    shown: set[int] = set()
    for line_no in bad:
        for k in range(max(1, line_no - context), min(len(lines), line_no + context) + 1):
            if k in shown:
                continue
            shown.add(k)
            marker = ">>" if k == line_no else "  "
            parts.append(f"{marker} {k:4d} | {lines[k - 1]}")
    return "\n".join(parts)
