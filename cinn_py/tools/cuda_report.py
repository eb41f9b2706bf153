"""Static quality report of the auto-scheduled CUDA kernels, no GPU needed: `cinn-py bench --target cuda
--static`.

For each `cinn-py bench` workload at a report shape (`REPORT_SHAPES`: the GPU shapes with few rows,
so that the CPU emulator runs them in seconds while each row keeps its real length), the kernel is
auto-scheduled and built for sm_90 as a traffic-counting build (`codegen.cuda.traffic`) and run in the
emulator on random inputs (the result checked against numpy). Reported per kernel:

- the launch configuration, and what ptxas allocated for the plain build (registers, spills, stack
  frame, static shared memory: `codegen.cuda.resources`, the figures the driver reported on an
  H100), with the theoretical occupancy they allow and its limiter;
- the global bytes the kernel loaded and stored as it ran, against the minimum (inputs read once +
  outputs written once): a ratio of 3 means every input byte is requested three times (the
  traffic to L1, an upper bound of HBM traffic; repeated loads of one address by one thread may be
  merged by the compiler, so the ratio can overstate what the hardware does).

`cinn-py bench --target cuda` without `--static` times the same workloads on a GPU against PyTorch
(`cinn_py.tools.bench_cuda_auto`).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from typing import Any

import numpy as np

import cinn_py as cp
from cinn_py.tools.bench_workloads import WORKLOADS

REPORT_ARCH = "sm_90"
REPORT_SHAPES: dict[str, dict[str, int]] = {
    "relu": {"n": 65536},
    "rmsnorm": {"rows": 8, "cols": 768},
    "softmax": {"rows": 8, "cols": 1024},
    "rowsum": {"rows": 8, "cols": 4096},
    "colsum": {"rows": 1024, "cols": 256},
    "layernorm": {"rows": 8, "cols": 768},
    "bias_gelu": {"rows": 8, "cols": 3072},
    "transpose": {"n": 256},
    "matmul": {"m": 128, "n": 128, "k": 128},
    "bmm": {"batch": 2, "m": 64, "n": 64, "k": 64},
    "matmul_bias_relu": {"m": 128, "n": 128, "k": 128},
}


def report_workload(name: str, shape: dict[str, int] | None = None) -> dict[str, Any]:
    """The report row of one workload (see the module docstring)."""
    from codegen.cuda.resources import occupancy  # noqa: PLC0415 - an entry point: codegen loads lazily

    workload = WORKLOADS[name]
    shape = shape or REPORT_SHAPES[name]
    kernel = cp.build(workload.lower(shape), "cuda", schedule="auto", fast_math=True, arch=REPORT_ARCH,
                      emulate=True, count_traffic=True)
    arrays = workload.inputs(shape, np.random.default_rng(0))
    got = kernel(*arrays)
    np.testing.assert_allclose(got, workload.numpy(*arrays), rtol=max(workload.rtol, 1e-3),
                               atol=max(workload.atol, 1e-4),
                               err_msg=f"cuda report: '{name}' differs from numpy")
    traffic = kernel.last_traffic
    # Resources of the build a user gets: the counting build's atomics take registers of their own.
    code = cp.codegen(workload.lower(shape), "cuda", schedule="auto", fast_math=True, arch=REPORT_ARCH)
    if str(code.launch) != str(kernel.code.launch):
        raise AssertionError(f"cuda report: '{name}' scheduled differently in the two builds: {code.launch} "
                             "and "
                             f"{kernel.code.launch}")
    grid, block, shared = code.launch.launch_dims({})
    resources = code.resources
    minimum = int(sum(a.nbytes for a in arrays) + got.nbytes)
    return {
        "name": name, "shape": shape, "kernel": code.kernel_name, "grid": grid, "block": block,
        "dynamic_shared_bytes": shared, "resources": asdict(resources),
        "occupancy": asdict(occupancy(resources, block[0] * block[1] * block[2], shared)),
        "loaded_bytes": traffic.loaded_bytes, "stored_bytes": traffic.stored_bytes, "minimum_bytes": minimum,
        "traffic_ratio": traffic.total_bytes / minimum,
    }


def format_report(rows: list[dict[str, Any]]) -> str:
    header = (f"{'workload':17s} {'grid':>15s} {'block':>12s} {'regs':>4s} {'spill':>5s} {'smem':>6s} "
              f"{'occup':>5s} {'limiter':>9s} {'moved':>9s} {'minimum':>9s} {'ratio':>5s}")
    lines = [f"static CUDA report ({REPORT_ARCH}, auto schedules, traffic counted in the CPU emulator)",
             header]
    for r in rows:
        res, occ = r["resources"], r["occupancy"]
        spill = res["spill_store_bytes"] + res["spill_load_bytes"]
        lines.append(f"{r['name']:17s} {str(tuple(r['grid'])):>15s} {str(tuple(r['block'])):>12s} "
                     f"{res['registers']:4d} {spill:5d} "
                     f"{res['shared_static_bytes'] + r['dynamic_shared_bytes']:6d} "
                     f"{occ['fraction']:5.2f} {occ['limiter']:>9s} "
                     f"{r['loaded_bytes'] + r['stored_bytes']:9d} "
                     f"{r['minimum_bytes']:9d} {r['traffic_ratio']:5.2f}")
    return "\n".join(lines)


def run_static(names: list[str], json_to: str | None = None) -> int:
    """`cinn-py bench --target cuda --static`: print the report (`json_to` "-": as JSON; a file
    name: the table, and the JSON into that file); exit status 0."""
    unknown = sorted(set(names) - set(WORKLOADS))
    if unknown:
        raise ValueError(f"cuda report: unknown workloads {unknown}; expected some of {sorted(WORKLOADS)}")
    rows = [report_workload(name) for name in names or WORKLOADS]
    data = json.dumps(rows, indent=1)
    print(data if json_to == "-" else format_report(rows))
    if json_to and json_to != "-":
        with open(json_to, "w", encoding="utf-8") as f:
            f.write(data + "\n")
    return 0


def run_from_args(ns: argparse.Namespace) -> int:
    """`cinn-py bench --target cuda [--static]`."""
    if ns.static:
        return run_static(list(ns.names), ns.json)
    if not _torch_sees_a_gpu():
        raise ValueError("bench --target cuda times the kernels on a GPU against PyTorch, and PyTorch sees "
                         "no CUDA "
                         "device here; --target cuda --static reports registers, occupancy and memory "
                         "traffic "
                         "without one")
    from cinn_py.tools import bench_cuda_auto  # noqa: PLC0415 - needs PyTorch and a GPU

    repeat = [] if ns.repeat is None else ["--repeat", str(ns.repeat)]
    json_to = [] if ns.json in (None, "-") else ["--json", ns.json]
    return bench_cuda_auto.main([*ns.names, *repeat, *json_to])


def _torch_sees_a_gpu() -> bool:
    try:
        import torch  # noqa: PLC0415  # pyright: ignore[reportMissingImports] (optional)
    except ImportError:
        return False
    return bool(torch.cuda.is_available())
