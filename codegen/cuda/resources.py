"""Static resources of a compiled CUDA kernel and the theoretical occupancy they allow (no GPU).

NVRTC compiles every CUBIN with `--ptxas-options=-v` (codegen.cuda.nvrtc), so its program log
holds ptxas's report of each entry function:

    ptxas info    : Compiling entry function 'k' for 'sm_90'
    ptxas info    : Function properties for k
    ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
    ptxas info    : Used 10 registers, used 1 barriers, 1024 bytes smem

`parse_ptxas_report` reads it into `KernelResources` (the driver reports the same register and
static shared-memory counts for the loaded kernel: `Kernel.resource_usage()`, checked on an
H100). `occupancy` is the CUDA occupancy calculator's rule: resident blocks per SM are limited by
warps, blocks, registers (allocated per warp in units of 256) and shared memory (allocated in
units of 128 bytes, plus 1 KiB the runtime reserves per block on sm_80 and newer).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cinn_py.diagnostics import CompileError
from cinn_py.target import OLDEST_SM, GpuLimits

_ENTRY_RE = re.compile(r"Compiling entry function '(?P<name>[^']+)' for '(?P<arch>[^']+)'")
_FRAME_RE = re.compile(r"(?P<stack>\d+) bytes stack frame, (?P<stores>\d+) bytes spill stores, "
                       r"(?P<loads>\d+) bytes spill loads")
_USED_RE = re.compile(r"Used (?P<regs>\d+) registers")
_BARRIERS_RE = re.compile(r"used (?P<barriers>\d+) barriers")
_SMEM_RE = re.compile(r"(?P<smem>\d+) bytes smem")


@dataclass(frozen=True)
class KernelResources:
    """What ptxas allocated for one kernel."""

    kernel: str
    arch: str
    registers: int
    """Registers per thread."""
    shared_static_bytes: int
    """`__shared__` arrays (dynamic shared memory comes on top, per launch)."""
    stack_frame_bytes: int
    """Local memory per thread (register spills and arrays indexed at run time)."""
    spill_store_bytes: int
    spill_load_bytes: int
    barriers: int

    @property
    def spills(self) -> bool:
        return self.spill_store_bytes > 0 or self.spill_load_bytes > 0


def parse_ptxas_report(log: str, kernel: str) -> KernelResources:
    """`kernel`'s resources from an NVRTC log compiled with `--ptxas-options=-v`.

    Raises:
        CompileError: the log has no ptxas report of `kernel` (a PTX-only build, or no -v).
    """
    lines = log.splitlines()
    for start, line in enumerate(lines):
        entry = _ENTRY_RE.search(line)
        if entry is None or entry.group("name") != kernel:
            continue
        block = []
        for following in lines[start + 1:]:
            if _ENTRY_RE.search(following):
                break
            block.append(following)
        return _resources(kernel, entry.group("arch"), "\n".join(block))
    raise CompileError(f"CUDA resources: no ptxas report of kernel '{kernel}' in the NVRTC log (a PTX-only "
                       "compute_XX build has none; the log must come from --ptxas-options=-v)")


def _resources(kernel: str, arch: str, text: str) -> KernelResources:
    used, frame = _USED_RE.search(text), _FRAME_RE.search(text)
    if used is None:
        raise CompileError(f"CUDA resources: ptxas's report of '{kernel}' names no register count:\n{text}")
    barriers, smem = _BARRIERS_RE.search(text), _SMEM_RE.search(text)
    return KernelResources(
        kernel, arch, int(used.group("regs")), int(smem.group("smem")) if smem else 0,
        int(frame.group("stack")) if frame else 0, int(frame.group("stores")) if frame else 0,
        int(frame.group("loads")) if frame else 0, int(barriers.group("barriers")) if barriers else 0)


_REGISTER_UNIT = 256
_SHARED_UNIT = 128


def sm_limits(arch: str) -> GpuLimits:
    """The GPU limits of `sm_XY` (the Target's: `Target.cuda(arch).limits`), for the capabilities
    the occupancy calculation knows (sm_60 and newer; an unlisted one: the nearest older listed)."""
    match = re.match(r"^(?:sm|compute)_(\d+)", arch)
    if match is None:
        raise ValueError(f"CUDA resources: arch must look like 'sm_90', got {arch!r}")
    if int(match.group(1)) < OLDEST_SM:
        raise ValueError(f"CUDA resources: no SM limits for {arch} (oldest known: sm_{OLDEST_SM})")
    return GpuLimits.of(arch)


@dataclass(frozen=True)
class Occupancy:
    """Resident blocks per SM for one launch configuration, and what limits them."""

    blocks_per_sm: int
    warps_per_sm: int
    fraction: float
    """Resident warps over the SM's maximum."""
    limiter: str
    """"warps", "blocks", "registers" or "shared memory"."""


def occupancy(resources: KernelResources, threads_per_block: int, dynamic_shared_bytes: int = 0) -> Occupancy:
    """Theoretical occupancy of `resources` launched with `threads_per_block` threads."""
    if threads_per_block <= 0:
        raise ValueError(f"CUDA resources: threads per block must be positive, got {threads_per_block}")
    sm = sm_limits(resources.arch)
    max_warps = sm.max_threads_per_sm // sm.warp_size
    warps = -(-threads_per_block // sm.warp_size)
    regs_per_warp = -(-max(resources.registers, 1) * sm.warp_size // _REGISTER_UNIT) * _REGISTER_UNIT
    shared = resources.shared_static_bytes + dynamic_shared_bytes
    limits = {"warps": max_warps // warps, "blocks": sm.max_blocks_per_sm,
              "registers": (sm.registers_per_sm // regs_per_warp) // warps}
    if shared:
        per_block = -(-(shared + sm.reserved_shared_per_block) // _SHARED_UNIT) * _SHARED_UNIT
        limits["shared memory"] = sm.shared_memory_per_sm // per_block
    limiter = min(limits, key=lambda name: limits[name])
    blocks = limits[limiter]
    return Occupancy(blocks, blocks * warps, blocks * warps / max_warps, limiter)


def summary(resources: KernelResources, launch: str, threads: int | None,
            dynamic_shared_bytes: int = 0) -> str:
    """The report `cinn-py codegen --emit resources` prints (`threads`: None when the block size
    depends on symbolic dims, which leaves the occupancy out)."""
    r = resources
    lines = [f"kernel {r.kernel} ({r.arch})",
             f"  registers per thread: {r.registers}",
             f"  spills: {r.spill_store_bytes} bytes stored, {r.spill_load_bytes} bytes loaded; stack frame "
             f"{r.stack_frame_bytes} bytes",
             f"  shared memory: {r.shared_static_bytes} bytes static + {dynamic_shared_bytes} dynamic; "
             f"barriers: {r.barriers}",
             f"  launch: {launch}"]
    if threads is not None:
        occ = occupancy(r, threads, dynamic_shared_bytes)
        lines.append(f"  occupancy: {occ.fraction:.2f} ({occ.blocks_per_sm} blocks, {occ.warps_per_sm} warps "
                     "per SM; "
                     f"limited by {occ.limiter})")
    return "\n".join(lines)
