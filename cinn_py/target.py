"""Compilation targets: what the compiler knows about the machine it generates code for.

A `Target` is a frozen value: its `kind` (`"x86"` or `"cuda"`, the key of the backend table in
`cinn_py.backend`), its `arch` (the host CPU's LLVM name, or `sm_XX`), its `features` (LLVM CPU
features such as `avx512f`; empty for CUDA), its `limits` (vector width and caches on x86; warp
size, threads, shared memory and registers on CUDA) and the names of its post-lowering passes
(`cinn_py.passes` registry names, run after scheduling and before codegen).

Every public API keeps accepting the strings: `Target.parse("x86")` is the host CPU,
`Target.parse("cuda")` the current device's GPU (an `sm_90` one when there is no device).

    >>> from cinn_py.target import Target
    >>> gpu = Target.cuda(arch="sm_80")
    >>> gpu.kind, gpu.limits.warp_size, gpu.limits.max_threads_per_block
    ('cuda', 32, 1024)
    >>> gpu.limits.max_shared_memory_per_block, gpu.limits.max_shared_memory_per_block_optin
    (49152, 166912)
    >>> gpu.passes
    ('cross_thread_reduce', 'gpu_bind', 'simplify_indices')
    >>> Target.parse("cuda").is_gpu, Target.parse(gpu) is gpu
    (True, True)
    >>> cpu = Target.x86(cpu="skylake-avx512", features=("avx2", "avx512f"))
    >>> cpu.limits.vector_bits, cpu.limits.lanes_for("float32"), cpu.limits.lanes_for("float64")
    (512, 16, 8)
    >>> cpu.passes
    ('check_x86_loops', 'inline_blocks_x86', 'privatize_x86_buffers')
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Union

KINDS = ("x86", "cuda")
# What the LLVM printer needs done first (`cinn_py.passes.x86_lowering`): loop kinds checked, schedule
# blocks inlined (blocks carrying x86 attributes kept as attribute scopes), the task-private buffers of
# parallel loops shrunk to what one task reaches (`cinn_py.passes.x86_privatize`).
X86_PASSES = ("check_x86_loops", "inline_blocks_x86", "privatize_x86_buffers")
DEFAULT_CUDA_ARCH = "sm_90"
_ARCH_RE = re.compile(r"^(sm|compute)_(\d+)[a-z]?$")

# Widest vector register an x86 feature gives, in bits (the first feature present wins).
_VECTOR_FEATURES = (("avx512f", 512), ("avx", 256), ("sse2", 128))

# Per compute capability, from the CUDA C Programming Guide's "Technical Specifications per Compute
# Capability": (opt-in shared memory per block in KiB (cudaDevAttrMaxSharedMemoryPerBlockOptin),
# resident threads per SM, resident blocks per SM, shared memory per SM in KiB, shared memory the
# runtime reserves per block in bytes). An unlisted capability takes the nearest older listed one.
_SM_SPECS: dict[int, tuple[int, int, int, int, int]] = {
    60: (48, 2048, 32, 64, 0), 61: (48, 2048, 32, 96, 0), 62: (48, 2048, 32, 64, 0),
    70: (96, 2048, 32, 96, 0), 72: (96, 2048, 32, 96, 0), 75: (64, 1024, 16, 64, 0),
    80: (163, 2048, 32, 164, 1024), 86: (99, 1536, 16, 100, 1024), 87: (163, 1536, 16, 164, 1024),
    89: (99, 1536, 24, 100, 1024), 90: (227, 2048, 32, 228, 1024), 100: (227, 2048, 32, 228, 1024),
    120: (99, 1536, 32, 100, 1024)}
OLDEST_SM = min(_SM_SPECS)

TargetLike = Union["Target", str]


def _dtype_bits(dtype: object) -> int:
    """Bits of one element of `dtype` (a DataType or its name, e.g. "float32", "bfloat16")."""
    bits = getattr(dtype, "bits", None)
    if isinstance(bits, int):
        return bits
    match = re.search(r"(\d+)$", str(dtype))
    if str(dtype) == "bool":
        return 8
    if match is None:
        raise ValueError(f"Target: cannot tell the width of dtype {dtype!r}")
    return int(match.group(1))


@dataclass(frozen=True)
class CpuLimits:
    """What an x86 schedule sizes itself by."""

    vector_bits: int
    """The widest native vector register (512 with AVX-512F, 256 with AVX, 128 with SSE2)."""
    cores: int
    """CPUs this process may run on (the affinity mask, not the machine's total)."""
    cache_bytes: tuple[tuple[str, int], ...] = ()
    """`(("L1d", 49152), ("L2", ...), ...)` where the OS tells it cheaply (Linux sysfs); else empty."""

    def lanes_for(self, dtype: object) -> int:
        """Elements of `dtype` in one native vector register (float32 with AVX-512: 16)."""
        return max(1, self.vector_bits // _dtype_bits(dtype))

    def cache(self, level: str) -> int | None:
        """Size in bytes of cache `level` ("L1d", "L2", "L3"), or None when unknown."""
        return dict(self.cache_bytes).get(level)


@dataclass(frozen=True)
class GpuLimits:
    """What a CUDA schedule and the launcher check against."""

    warp_size: int = 32
    max_threads_per_block: int = 1024
    max_block_dims: tuple[int, int, int] = (1024, 1024, 64)
    max_grid_dims: tuple[int, int, int] = (2**31 - 1, 65535, 65535)
    max_shared_memory_per_block: int = 48 * 1024
    """Static `__shared__` memory a block may use without opting in."""
    max_shared_memory_per_block_optin: int = 48 * 1024
    """Dynamic shared memory a block may use after `cudaFuncSetAttribute` (per arch)."""
    registers_per_block: int = 64 * 1024
    max_registers_per_thread: int = 255
    max_threads_per_sm: int = 2048
    max_blocks_per_sm: int = 32
    shared_memory_per_sm: int = 228 * 1024
    registers_per_sm: int = 64 * 1024
    reserved_shared_per_block: int = 1024
    """Shared memory the CUDA runtime takes from each resident block (sm_80 and newer)."""

    @staticmethod
    def of(arch: str) -> GpuLimits:
        """The limits of compute capability `arch` (`sm_XY`/`compute_XY`, an `a`/`f` suffix
        ignored); an unlisted capability takes the nearest older listed one's, one older than
        every listed one (sm_60) the defaults."""
        match = _ARCH_RE.match(arch)
        if match is None:
            raise ValueError(f"Target.cuda: arch must look like 'sm_90' or 'compute_80', got {arch!r}")
        cc = int(match.group(2))
        known = [c for c in _SM_SPECS if c <= cc]
        if not known:
            return GpuLimits()
        optin, threads, blocks, shared, reserved = _SM_SPECS[max(known)]
        return GpuLimits(max_shared_memory_per_block_optin=optin * 1024, max_threads_per_sm=threads,
                         max_blocks_per_sm=blocks, shared_memory_per_sm=shared * 1024,
                         reserved_shared_per_block=reserved)


@dataclass(frozen=True)
class Target:
    """One compilation target; build it with `Target.x86()`, `Target.cuda()` or `Target.parse()`."""

    kind: str
    arch: str
    features: frozenset[str] = field(default_factory=frozenset)
    limits: CpuLimits | GpuLimits = field(default_factory=GpuLimits)
    passes: tuple[str, ...] = ()
    """Post-lowering passes (names in `cinn_py.passes`), run in order after scheduling."""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"Target: unknown kind '{self.kind}'; expected one of {KINDS}")

    @property
    def name(self) -> str:
        """The backend table key (`"x86"` or `"cuda"`); what the string spelling of a target was."""
        return self.kind

    @property
    def is_gpu(self) -> bool:
        return isinstance(self.limits, GpuLimits)

    @property
    def cpu(self) -> CpuLimits:
        """The x86 limits; TypeError on a GPU target (a schedule asked for the wrong machine)."""
        if not isinstance(self.limits, CpuLimits):
            raise TypeError(f"Target {self}: has GPU limits, not CPU limits")
        return self.limits

    @property
    def gpu(self) -> GpuLimits:
        """The CUDA limits; TypeError on a CPU target."""
        if not isinstance(self.limits, GpuLimits):
            raise TypeError(f"Target {self}: has CPU limits, not GPU limits")
        return self.limits

    def has(self, feature: str) -> bool:
        return feature in self.features

    def __str__(self) -> str:
        return f"{self.kind} ({self.arch})"

    @staticmethod
    def x86(cpu: str | None = None, features: tuple[str, ...] | frozenset[str] | None = None) -> Target:
        """The host CPU (llvmlite's host CPU name and features), or the given ones."""
        name = cpu if cpu is not None else _host_cpu()[0]
        feats = frozenset(features) if features is not None else _host_cpu()[1]
        bits = next((b for f, b in _VECTOR_FEATURES if f in feats), 128)
        limits = CpuLimits(bits, _cores(), _caches())
        return Target("x86", name, feats, limits, X86_PASSES)

    @staticmethod
    def cuda(arch: str | None = None) -> Target:
        """A GPU of compute capability `arch` (`sm_XX`/`compute_XX`); None or `"auto"`: the
        current device's, `sm_90` when there is no device."""
        if arch is None or arch == "auto":
            arch = _device_arch() or DEFAULT_CUDA_ARCH
        limits = GpuLimits.of(arch)
        return Target("cuda", arch, frozenset(), limits,
                      ("cross_thread_reduce", "gpu_bind", "simplify_indices"))

    @staticmethod
    def parse(target: TargetLike) -> Target:
        """A Target from a Target (returned as is) or its string spelling ("x86", "cuda")."""
        if isinstance(target, Target):
            return target
        if not isinstance(target, str):
            raise TypeError(f"expected a Target or one of {KINDS}, got {type(target).__name__}")
        make = _BY_NAME.get(target)
        if make is None:
            raise ValueError(f"unknown target '{target}'; expected one of {KINDS} or a Target")
        return make()


@lru_cache(maxsize=None)
def host() -> Target:
    """The host CPU's target (cached: reading the CPU's features costs an LLVM call)."""
    return Target.x86()


# CINN's Python spellings (`cinn.common.DefaultHostTarget()`), so CINN's op tests port unchanged.
def DefaultHostTarget() -> Target:  # noqa: N802
    """CINN's name for the host CPU target (`host()`)."""
    return host()


def DefaultNVGPUTarget() -> Target:  # noqa: N802
    """CINN's name for the CUDA target of the local GPU's architecture (else sm_90)."""
    return Target.cuda()


_BY_NAME = {"x86": host, "cuda": Target.cuda}


@lru_cache(maxsize=None)
def _host_cpu() -> tuple[str, frozenset[str]]:
    import llvmlite.binding as llvm  # noqa: PLC0415 - only x86 targets need LLVM

    flags = llvm.get_host_cpu_features()
    return llvm.get_host_cpu_name(), frozenset(name for name, on in flags.items() if on)


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


@lru_cache(maxsize=None)
def _caches() -> tuple[tuple[str, int], ...]:
    """Cache sizes of CPU 0 from Linux sysfs; empty where that is not readable."""
    root = Path("/sys/devices/system/cpu/cpu0/cache")
    found: dict[str, int] = {}
    for index in sorted(root.glob("index*")):
        try:
            level = (index / "level").read_text().strip()
            kind = (index / "type").read_text().strip()
            size = (index / "size").read_text().strip()
        except OSError:
            continue
        label = f"L{level}" + {"Data": "d", "Instruction": "i"}.get(kind, "")
        units = {"K": 1024, "M": 1024**2, "G": 1024**3}
        found[label] = int(size[:-1]) * units[size[-1]] if size[-1] in units else int(size)
    return tuple(sorted(found.items()))


@lru_cache(maxsize=None)
def _device_arch() -> str | None:
    """`sm_XY` of CUDA device 0 through the driver API, or None without a driver or device."""
    try:
        from cuda.bindings import driver  # noqa: PLC0415  # pyright: ignore[reportAttributeAccessIssue] (optional, compiled)

        if driver.cuInit(0)[0] != driver.CUresult.CUDA_SUCCESS:
            return None
        err, device = driver.cuDeviceGet(0)
        attr = driver.CUdevice_attribute
        _, major = driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device)
        _, minor = driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device)
    except Exception:  # no bindings, no driver library, no device: fall back to the default arch
        return None
    return f"sm_{major}{minor}" if err == driver.CUresult.CUDA_SUCCESS else None


__all__ = ["CpuLimits", "DefaultHostTarget", "DefaultNVGPUTarget", "GpuLimits", "Target",
           "TargetLike", "host"]
