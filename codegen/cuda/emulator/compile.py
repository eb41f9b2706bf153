"""g++ builds of a generated CUDA translation unit against the emulation header.

The launch runtime (`include/cuda_emu_runtime.cpp`: fibers, barriers, warp collectives) is built
once as a shared library loaded with RTLD_GLOBAL; each kernel library resolves against it, so a
kernel build compiles only the header and the kernel.

The kernel source is written unchanged to `kernel.cu`; a small driver file includes it and exports
the launch entry (`cinn_emu_launch(params, dims, dynamic_shared)`, the kernel's parameters passed
like `cuLaunchKernel`'s `kernelParams`: one pointer to each argument's value) and the error text
(`cinn_emu_error()`). `-include cuda_emu.h` supplies the CUDA built-ins, the `include/` folder
stands in for `cuda_fp16.h`/`cuda_bf16.h`, and `cinn_cuda_runtime.cuh` is the real device runtime
header (its `CINN_CUDA_EMULATION` hook takes the fixed-width integers from the host).

Two flavours:
- `shared_library`: a `.so` loaded into this process with ctypes (the normal path);
- `race_checker`: an executable built with `-fsanitize=thread` that reads the launch (dims and
  argument bytes) from a file and runs it once; ThreadSanitizer's report names the racing source
  lines (see `codegen.cuda.emulator.races`).

Both are cached in memory and on disk (`CompileCache("cuda_emu")`: HMAC-trusted entries keyed by
the source, kernel name, flavour, flags, the driver, both headers, the g++ version and
`project_digest()`, the project version and a hash of every project source).
"""

from __future__ import annotations

import atexit
import ctypes
import functools
import os
import shutil
import subprocess
import tempfile
import threading
from importlib import resources
from pathlib import Path

from cinn_py.diagnostics import CompileError
from cinn_py.runtime.cache import CompileCache, fingerprint_key, project_digest
from codegen.cuda.nvrtc import RUNTIME_HEADER_NAME, runtime_header

EMU_HEADER = "cuda_emu.h"
EMU_RUNTIME = "cuda_emu_runtime.cpp"
CXX_ENV = "CXX"
BASE_FLAGS = ("-std=c++20", "-fno-strict-aliasing", "-w", "-fPIC")
LIBRARY_FLAGS = ("-O1", "-g0", "-shared")
RACE_FLAGS = ("-O1", "-g", "-fsanitize=thread")
DISK_CACHE = CompileCache("cuda_emu")
_MEMORY: dict[str, object] = {}
_LOCK = threading.Lock()
_PCH_LOCK = threading.Lock()

# NVRTC's int64_t/uint64_t (typedefs in cinn_cuda_runtime.cuh) are `long long`; the host's are
# `long` on LP64. The kernel and the runtime header see NVRTC's types, so a `long long*` helper
# parameter takes an `int64_t*` argument and overloads resolve as on the GPU; the system headers,
# all included before (cuda_emu.h), keep theirs.
_DRIVER = """#define int64_t cinn_emu_int64_t
#define uint64_t cinn_emu_uint64_t
#include "kernel.cu"
#undef int64_t
#undef uint64_t

// The dynamic shared memory array every `extern __shared__` declaration of the kernel names.
extern "C" {{
alignas(16) thread_local unsigned char cinn_dyn_shared[CINN_EMU_MAX_DYNAMIC_SHARED];
}}

extern "C" int cinn_emu_launch(void** params, const unsigned* dims, unsigned long long dynamic_shared) {{
  return cinn_emu::launch_kernel(&{kernel}, params, dims, dynamic_shared);
}}

extern "C" const char* cinn_emu_error(void) {{ return cinn_emu::g_error; }}
"""

_RACE_MAIN = r"""
#include "cuda_emu_runtime.cpp"
#include <stdio.h>
#include <vector>

// Reads one launch from argv[1]: u32 dims[6], u64 dynamic shared bytes, u32 parameter count, then per
// parameter a u8 kind (0: buffer, 1: int64, 2: int32) and its bytes (buffers: u64 size + contents).
int main(int argc, char** argv) {
  if (argc != 2) return 2;
  FILE* f = fopen(argv[1], "rb");
  if (!f) return 2;
  unsigned dims[6];
  unsigned long long shared = 0;
  unsigned count = 0;
  if (fread(dims, 4, 6, f) != 6 || fread(&shared, 8, 1, f) != 1 || fread(&count, 4, 1, f) != 1) return 2;
  std::vector<void*> values(count), params(count);
  for (unsigned i = 0; i < count; ++i) {
    unsigned char kind = 0;
    if (fread(&kind, 1, 1, f) != 1) return 2;
    if (kind == 0) {
      unsigned long long n = 0;
      if (fread(&n, 8, 1, f) != 1) return 2;
      void* data = aligned_alloc(64, (n + 63) / 64 * 64);
      if (n && fread(data, 1, n, f) != n) return 2;
      values[i] = data;
      params[i] = &values[i];
      fprintf(stderr, "CINN_EMU_BUFFER %u %p %llu\n", i, data, n);
    } else {
      void* scalar = calloc(1, 8);
      if (fread(scalar, kind == 1 ? 8 : 4, 1, f) != 1) return 2;
      params[i] = scalar;
    }
  }
  fclose(f);
  if (cinn_emu_launch(params.data(), dims, shared) != 0) {
    fprintf(stderr, "CINN_EMU_ERROR: %s\n", cinn_emu_error());
    return 3;
  }
  return 0;
}
"""


@functools.lru_cache(maxsize=1)
def emulator_header() -> str:
    """The emulation header and the launch runtime's source (both go into every cache key)."""
    return "".join(_include_dir().joinpath(name).read_text(encoding="utf-8") for name
                   in (EMU_HEADER, EMU_RUNTIME))


def _include_dir() -> Path:
    return Path(str(resources.files("codegen.cuda.emulator").joinpath("include")))


def _runtime_dir() -> Path:
    return Path(str(resources.files("codegen.cuda")))


@functools.lru_cache(maxsize=1)
def compiler() -> str:
    """The C++ compiler (`$CXX`, else g++ on PATH)."""
    cxx = os.environ.get(CXX_ENV) or shutil.which("g++")
    if not cxx:
        raise CompileError("CUDA emulator: no C++ compiler (g++ on PATH or $CXX) to build the kernel for the "
                           "CPU")
    return cxx


@functools.lru_cache(maxsize=4)
def compiler_version(cxx: str) -> str:
    return (subprocess.run([cxx, "--version"], capture_output=True, text=True,
                           check=False).stdout.split("\n")[0])


def _key(source: str, kernel_name: str, flavour: str, flags: tuple[str, ...]) -> str:
    cxx = compiler()
    return fingerprint_key(source=source, kernel=kernel_name, flavour=flavour, flags=list(flags),
                           driver=_DRIVER,
                           race_main=_RACE_MAIN, emu=emulator_header(), runtime=runtime_header(),
                           cxx=compiler_version(cxx), sources=project_digest())


def _build(source: str, kernel_name: str, flags: tuple[str, ...], race_main: bool, out_name: str) -> bytes:
    """Run the compiler in a scratch folder; the bytes of the product (kernel_name "": the runtime)."""
    with tempfile.TemporaryDirectory(prefix="cinn-emu-build-") as tmp:
        folder = Path(tmp)
        if kernel_name:
            (folder / "kernel.cu").write_text(source, encoding="utf-8")
            driver = _DRIVER.format(kernel=kernel_name) + (_RACE_MAIN if race_main else "")
        else:
            driver = source
        (folder / "driver.cpp").write_text(driver, encoding="utf-8")
        header = _precompiled_header() if flags == LIBRARY_FLAGS else None
        cmd = [compiler(), *BASE_FLAGS, *flags, f"-I{_include_dir()}", f"-I{_runtime_dir()}",
               "-include", str(header) if header else EMU_HEADER, "driver.cpp", "-o", out_name]
        done = subprocess.run(cmd, cwd=folder, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise CompileError(f"CUDA emulator: g++ rejected kernel '{kernel_name}' (the generated CUDA C, "
                               f"unchanged, against {EMU_HEADER} and {RUNTIME_HEADER_NAME})",
                               _excerpt(done.stderr))
        return (folder / out_name).read_bytes()


def _precompiled_header() -> Path | None:
    with _PCH_LOCK:  # one build per process, finished before any kernel build reads it
        return _build_precompiled_header()


@functools.lru_cache(maxsize=1)
def _build_precompiled_header() -> Path | None:
    """A copy of the emulation header next to its GCC precompiled form (`cuda_emu.h.gch`, built
    once per process with the kernel library flags): parsing the header and the C++ headers it
    includes was two thirds of a kernel build (0.42 -> 0.14 s of CPU per kernel). GCC uses the
    `.gch` beside an `-include`d header when it was built with the same options, else reads the
    header. None (include the header itself) for a compiler that is not GCC or a failed build."""
    cxx = compiler()
    if "clang" in compiler_version(cxx).lower():
        return None
    folder = _process_folder() / "pch"
    folder.mkdir(exist_ok=True)
    header = folder / EMU_HEADER
    shutil.copyfile(_include_dir() / EMU_HEADER, header)
    flags = [flag for flag in LIBRARY_FLAGS if flag != "-shared"]
    cmd = [cxx, *BASE_FLAGS, *flags, f"-I{_include_dir()}", f"-I{_runtime_dir()}", "-x", "c++-header",
           str(header), "-o", f"{header}.gch"]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    return header if done.returncode == 0 else None


def _excerpt(log: str, limit: int = 40) -> str:
    lines = [line for line in log.splitlines() if "error" in line or "note" not in line]
    return "\n".join(lines[:limit])


@functools.lru_cache(maxsize=1)
def _process_folder() -> Path:
    """One private folder per process for the materialised products, removed when the process
    exits (a folder per product, never removed, left thousands behind in /tmp after a test run).
    Only the creating process removes it: a forked child inherits the cache but not the folder."""
    folder = Path(tempfile.mkdtemp(prefix="cinn-emu-"))
    owner = os.getpid()

    def remove() -> None:
        if os.getpid() == owner:
            shutil.rmtree(folder, ignore_errors=True)

    atexit.register(remove)
    return folder


def _cached_file(source: str, kernel_name: str, flavour: str, flags: tuple[str, ...], race_main: bool,
                 suffix: str) -> Path:
    """A private file holding the cached (or freshly built) product."""
    key = _key(source, kernel_name, flavour, flags)
    with _LOCK:
        path = _MEMORY.get(key)
    if isinstance(path, Path) and path.exists():
        return path
    entry = DISK_CACHE.load(key)
    blob = entry[1] if entry is not None else None
    if not blob:
        blob = _build(source, kernel_name, flags, race_main, f"kernel{suffix}")
        DISK_CACHE.store(key, {"flavour": flavour}, blob)
    path = _process_folder() / f"{key[:16]}-{kernel_name or 'cinn_emu_runtime'}{suffix}"
    path.write_bytes(blob)
    path.chmod(0o700)
    with _LOCK:
        _MEMORY[key] = path
    return path


@functools.lru_cache(maxsize=1)
def runtime_library() -> ctypes.CDLL:
    """The launch runtime (`cuda_emu_runtime.cpp`), built once and loaded with RTLD_GLOBAL: every
    kernel library resolves `cinn_emu::launch`, the barriers and the thread state against it."""
    path = _cached_file(f'#include "{EMU_RUNTIME}"\n', "", "runtime", LIBRARY_FLAGS, False, ".so")
    return ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)


def shared_library(source: str, kernel_name: str) -> ctypes.CDLL:
    """The kernel built as a `.so` and loaded (each distinct build is loaded once per process)."""
    runtime_library()
    path = _cached_file(source, kernel_name, "so", LIBRARY_FLAGS, False, ".so")
    lib = _load(str(path))
    lib.cinn_emu_launch.restype = ctypes.c_int
    lib.cinn_emu_launch.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_uint),
                                    ctypes.c_ulonglong]
    lib.cinn_emu_error.restype = ctypes.c_char_p
    return lib


@functools.lru_cache(maxsize=None)
def _load(path: str) -> ctypes.CDLL:
    return ctypes.CDLL(path)


def race_checker(source: str, kernel_name: str) -> Path:
    """The kernel built with ThreadSanitizer as a launch-from-file executable."""
    return _cached_file(source, kernel_name, "tsan", RACE_FLAGS, True, "")
