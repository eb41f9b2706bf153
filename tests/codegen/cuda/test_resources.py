"""ptxas's resource report (through NVRTC's log) and the theoretical occupancy derived from it."""

from __future__ import annotations

import pytest

import cinn_py as cp
from cinn_py.diagnostics import CompileError
from cinn_py.target import Target
from codegen.cuda import generate_cuda
from codegen.cuda.resources import KernelResources, occupancy, parse_ptxas_report, sm_limits
from schedules import IRSchedule

LOG = """ptxas info    : 17 bytes gmem
ptxas info    : Compiling entry function 'other' for 'sm_90'
ptxas info    : Function properties for other
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 200 registers, used 0 barriers
ptxas info    : Compiling entry function 'k' for 'sm_90'
ptxas info    : Function properties for k
ptxas         .     16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 4096 bytes smem
ptxas info    : Compile time = 2.796 ms
"""


def test_the_named_entry_is_read() -> None:
    r = parse_ptxas_report(LOG, "k")
    assert r == KernelResources("k", "sm_90", 40, 4096, 16, 8, 4, 1) and r.spills
    assert parse_ptxas_report(LOG, "other").registers == 200


def test_a_log_without_the_kernel_is_an_error() -> None:
    with pytest.raises(CompileError, match="no ptxas report of kernel 'missing'"):
        parse_ptxas_report(LOG, "missing")


def _shared_reduce() -> cp.LoweredFunc:
    A = cp.placeholder((64, 256), "float32", "A")
    k = cp.reduce_axis(256, "k")
    B = cp.compute((64,), lambda i: cp.reduce_sum(A[i, k], k), "B")
    s = IRSchedule(cp.lower("rsum", [A, B]))
    i, kk = s.get_loops("B")
    s.bind(i, "blockIdx.x")
    s.bind(kk, "threadIdx.x")
    return s.func


def test_generated_code_reports_what_ptxas_allocated() -> None:
    code = generate_cuda(_shared_reduce(), arch="sm_90")
    r = code.resources
    assert r is not None and r.kernel == code.kernel_name and r.arch == "sm_90"
    assert 0 < r.registers <= 255 and not r.spills
    assert r.shared_static_bytes > 0 and r.barriers >= 1  # the block reduce's __shared__ buffer
    assert generate_cuda(_shared_reduce(), arch="compute_90").resources is None


@pytest.mark.parametrize("regs, threads, shared, blocks, limiter", [
    (32, 256, 0, 8, "warps"),              # 64 warps / 8 per block
    (32, 32, 0, 32, "blocks"),             # one-warp blocks: the 32-block limit
    (128, 256, 0, 2, "registers"),         # 128 * 32 = 4096 regs a warp: 16 warps
    (16, 128, 48 * 1024, 4, "shared memory"),  # 49 KiB a block (1 KiB reserved) in 228 KiB
])
def test_occupancy_limits_on_sm_90(regs: int, threads: int, shared: int, blocks: int, limiter: str) -> None:
    r = KernelResources("k", "sm_90", regs, 0, 0, 0, 0, 0)
    occ = occupancy(r, threads, shared)
    assert (occ.blocks_per_sm, occ.limiter) == (blocks, limiter)
    assert occ.fraction == pytest.approx(blocks * -(-threads // 32) / 64)


def test_unknown_and_newer_archs() -> None:
    assert sm_limits("sm_90a") == sm_limits("sm_90")
    assert sm_limits("sm_91") == sm_limits("sm_90")     # the nearest older listed capability
    with pytest.raises(ValueError, match=r"no SM limits for sm_50 \(oldest known: sm_60\)"):
        sm_limits("sm_50")
    assert sm_limits("sm_87") == Target.cuda("sm_87").gpu  # one table: the Target's
    assert sm_limits("sm_87").max_threads_per_sm == 1536  # 48 resident warps (Orin)
    with pytest.raises(ValueError, match="threads per block must be positive"):
        occupancy(KernelResources("k", "sm_90", 8, 0, 0, 0, 0, 0), 0)


def test_resource_summary_text() -> None:
    text = generate_cuda(_shared_reduce(), arch="sm_90").resource_summary
    lines = text.splitlines()
    assert lines[0] == "kernel rsum (sm_90)" and "launch: grid=(64, 1, 1) block=(256, 1, 1)" in text
    assert lines[-1].startswith("  occupancy: 1.00 (8 blocks, 64 warps per SM; limited by warps)")
    ptx_only = generate_cuda(_shared_reduce(), arch="compute_90").resource_summary
    assert "PTX-only build" in ptx_only
