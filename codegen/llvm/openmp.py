"""One thread pool for torch and cinn-py: parallel loops as OpenMP parallel regions, when that helps.

PyTorch's CPU ops run on its OpenMP runtime (libgomp, shipped in `torch/lib`); cinn-py's parallel
loops on its own native pool (`codegen.llvm.native_pool`), whose idle workers spin ~2 us, yield,
then sleep on a futex. When libgomp is loaded, the launcher can instead run each parallel loop as
a `GOMP_parallel` region on torch's threads: one pool for both. Which is better depends on
libgomp's wait policy, measured with examples/bench_bert_layer.py --compare-native (BERT layer
training step, 2 cores, load average ~18, medians of 15 interleaved rounds):

| OMP_WAIT_POLICY | torch's pool (shared) | cinn-py's own pool | eager |
|---|---|---|---|
| PASSIVE | 52 ms | 68 ms | 38 ms |
| unset (libgomp spins ~300k iterations after each region) | 978 ms | 92 ms | 1207 ms |

With spinning OpenMP threads, a shared pool inherits the spinning (our regions' threads spin
against everything else, as torch's own ops do); the own pool's workers sleep, and our timing
barely moves. With PASSIVE OpenMP threads sleep at once, and sharing saves the hand-offs between
two pools. So by default (`CINN_PY_SHARE_OPENMP` unset) launches share torch's pool only when
`OMP_WAIT_POLICY` is `passive`; `CINN_PY_SHARE_OPENMP=1` always shares, `=0` never.

`adopt_loaded_openmp(pool)` finds a libgomp already mapped into the process (it never loads one:
a numpy-only process keeps the pool's own workers) and hands its entry points to the pool. A
forked child drops the sharing (libgomp's threads do not survive a fork).
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

from codegen.llvm.native_pool import NativePool

ENV = "CINN_PY_SHARE_OPENMP"
_ENTRY_POINTS = ("GOMP_parallel", "omp_get_thread_num", "omp_get_num_threads")


def sharing_enabled() -> bool:
    """`CINN_PY_SHARE_OPENMP` as a bool; unset: whether OpenMP's threads sleep when idle
    (`OMP_WAIT_POLICY=passive`, see the module docstring)."""
    value = os.environ.get(ENV, "").strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    return os.environ.get("OMP_WAIT_POLICY", "").strip().lower() == "passive"


def loaded_libgomp() -> str | None:
    """The path of a libgomp mapped into this process (torch's), or None."""
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return None
    for line in maps.splitlines():
        path = line.split(maxsplit=5)[-1] if line.count(" ") >= 5 else ""
        if Path(path).name.startswith("libgomp") and ".so" in path:
            return path
    return None


def entry_points(path: str) -> tuple[int, int, int] | None:
    """Addresses of GOMP_parallel, omp_get_thread_num and omp_get_num_threads in the already
    loaded library at `path` (RTLD_NOLOAD: never a second copy of the runtime), or None."""
    try:
        lib = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
        addresses = [ctypes.cast(getattr(lib, name), ctypes.c_void_p).value for name in _ENTRY_POINTS]
    except (OSError, AttributeError):
        return None
    if not all(addresses):
        return None
    return (int(addresses[0] or 0), int(addresses[1] or 0), int(addresses[2] or 0))


def adopt_loaded_openmp(pool: NativePool) -> bool:
    """Make `pool` launch through the process's OpenMP runtime when one is loaded (see the
    module docstring); whether it does now."""
    if not sharing_enabled():
        pool.share_openmp(None)
        return False
    if pool.openmp is not None:
        return True
    path = loaded_libgomp()
    points = entry_points(path) if path else None
    if points is not None:
        pool.share_openmp(points)
    return points is not None


__all__ = ["ENV", "adopt_loaded_openmp", "entry_points", "loaded_libgomp", "sharing_enabled"]
