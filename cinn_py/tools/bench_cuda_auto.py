"""GPU benchmark of the auto-scheduled `cinn-py bench` workloads against PyTorch on CUDA.

    python -m cinn_py.tools.bench_cuda_auto [NAMES...] [--repeat 20] [--inner 10] [--json F] [--compile]

Each workload of `cinn_py.tools.bench_workloads` is lowered at a GPU-sized shape (`GPU_SHAPES`:
the x86 shapes move a few MB, which an H100 streams in microseconds, so launch overhead would
dominate), built with `cp.build(func, "cuda", schedule="auto", fast_math=True)`, checked against
its PyTorch version on the same CUDA tensors (relative L2 error `|out - ref| / |ref|`), then timed:
CUDA events around `inner` back-to-back calls, median over `repeat` rounds, so a kernel shorter
than the host's launch cost is reported as that cost (the `us_per_call` column is what a
PyTorch user sees). Memory-bound workloads report GB/s over the bytes that must move (inputs read
once + output written once) and the share of the measured device-to-device copy bandwidth;
matmuls report TFLOP/s. `--compile` also times `torch.compile` (Inductor) of the PyTorch version.

Needs PyCUDA, PyTorch and a GPU (it cannot run in CI; the workloads are tested in the emulator by
tests/codegen/cuda/test_auto_workloads.py). `--json` writes every row, the device name and the
kernels' launch dims and resources.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import cinn_py as cp
from cinn_py.tools.bench_workloads import WORKLOADS, Workload

GPU_SHAPES: dict[str, dict[str, int]] = {
    "relu": {"n": 1 << 26},
    "rmsnorm": {"rows": 32768, "cols": 768},
    "softmax": {"rows": 32768, "cols": 1024},
    "rowsum": {"rows": 16384, "cols": 4096},
    "colsum": {"rows": 16384, "cols": 4096},
    "layernorm": {"rows": 32768, "cols": 768},
    "bias_gelu": {"rows": 16384, "cols": 3072},
    "transpose": {"n": 8192},
    "matmul": {"m": 2048, "n": 2048, "k": 2048},
    "bmm": {"batch": 64, "m": 256, "n": 256, "k": 256},
    "matmul_bias_relu": {"m": 2048, "n": 2048, "k": 2048},
}
FLOPS: dict[str, Callable[[dict[str, int]], int]] = {
    "matmul": lambda s: 2 * s["m"] * s["n"] * s["k"],
    "matmul_bias_relu": lambda s: 2 * s["m"] * s["n"] * s["k"],
    "bmm": lambda s: 2 * s["batch"] * s["m"] * s["n"] * s["k"],
}


def time_calls(fn: Callable[[], Any], repeat: int, inner: int) -> float:
    """Median seconds per call: CUDA events around `inner` back-to-back calls, `repeat` rounds."""
    import torch  # noqa: PLC0415  # pyright: ignore[reportMissingImports] (optional)

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    rounds = []
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(inner):
            fn()
        end.record()
        torch.cuda.synchronize()
        rounds.append(start.elapsed_time(end) * 1e-3 / inner)
    return statistics.median(rounds)


def copy_bandwidth(repeat: int) -> float:
    """Device-to-device copy bandwidth in GB/s (bytes read + written), 1 GiB buffers."""
    import torch  # noqa: PLC0415  # pyright: ignore[reportMissingImports] (optional)

    src = torch.randn(1 << 28, device="cuda")
    dst = torch.empty_like(src)
    seconds = time_calls(lambda: dst.copy_(src), repeat, 1)
    return 2 * src.numel() * 4 / seconds / 1e9


def relative_error(got: Any, want: Any) -> float:
    """|got - want| / |want| in float64 (inf for NaN or a shape mismatch)."""
    g, w = got.double(), want.double()
    if g.shape != w.shape or bool(g.isnan().any()):
        return float("inf")
    return float((g - w).norm() / max(float(w.norm()), 1e-30))


def kernel_resources(kernel: Any) -> dict[str, Any]:
    """What the driver reports for the loaded kernel (`driver`) next to ptxas's static report and
    the theoretical occupancy of the launch (`static`, codegen.cuda.resources)."""
    from dataclasses import asdict  # noqa: PLC0415

    from codegen.cuda.resources import occupancy  # noqa: PLC0415

    usage = getattr(kernel, "resource_usage", None)
    code = getattr(kernel, "code", None)
    report: dict[str, Any] = {"driver": usage() if usage is not None else None}
    if code is not None and code.resources is not None and code.launch.is_static:
        _, block, shared = code.launch.launch_dims({})
        report["static"] = asdict(code.resources)
        report["occupancy"] = asdict(occupancy(code.resources, block[0] * block[1] * block[2], shared))
    return report


def launch_overhead(repeat: int) -> dict[str, float]:
    """Microseconds per call of a 1024-element kernel back to back (host-bound: the kernel takes
    ~2 us), cinn-py's Kernel against the same op in PyTorch eager."""
    import torch  # noqa: PLC0415  # pyright: ignore[reportMissingImports] (optional)

    relu = WORKLOADS["relu"]
    kernel = cp.build(relu.lower({"n": 1024}), "cuda", schedule="auto")
    x = torch.randn(1024, device="cuda")
    assert relu.torch is not None
    reference = relu.torch
    return {"cinn_us": time_calls(lambda: kernel(x), repeat, 100) * 1e6,
            "torch_us": time_calls(lambda: reference(torch, x), repeat, 100) * 1e6}


def bench_workload(workload: Workload, shape: dict[str, int], repeat: int, inner: int, peak_gbs: float,
                   with_compile: bool) -> dict[str, Any]:
    import torch  # noqa: PLC0415  # pyright: ignore[reportMissingImports] (optional)

    assert workload.torch is not None
    row: dict[str, Any] = {"name": workload.name, "shape": shape}
    t0 = time.perf_counter()
    kernel = cp.build(workload.lower(shape), "cuda", schedule="auto", fast_math=True)
    row["build_s"] = time.perf_counter() - t0
    row["resources"] = kernel_resources(kernel)
    arrays = workload.inputs(shape, np.random.default_rng(0))
    tensors = [torch.from_numpy(np.ascontiguousarray(a)).cuda() for a in arrays]
    reference = workload.torch
    got, want = kernel(*tensors), reference(torch, *tensors)
    row["rel_err"] = relative_error(got, want)
    row["ok"] = row["rel_err"] <= max(workload.rtol, 1e-3)
    if not row["ok"]:
        return row
    moved = sum(t.numel() * t.element_size() for t in tensors) + got.numel() * got.element_size()
    row["bytes"] = moved
    row["cinn_us"] = time_calls(lambda: kernel(*tensors), repeat, inner) * 1e6
    row["torch_us"] = time_calls(lambda: reference(torch, *tensors), repeat, inner) * 1e6
    if with_compile:
        compiled = torch.compile(lambda *xs: reference(torch, *xs))
        row["inductor_us"] = time_calls(lambda: compiled(*tensors), repeat, inner) * 1e6
    row["gbs"] = moved / row["cinn_us"] / 1e3
    row["pct_copy"] = 100 * row["gbs"] / peak_gbs
    flops = FLOPS.get(workload.name)
    if flops is not None:
        row["tflops"] = flops(shape) / row["cinn_us"] / 1e6
        row["torch_tflops"] = flops(shape) / row["torch_us"] / 1e6
    return row


def format_row(row: dict[str, Any]) -> str:
    if not row.get("ok"):
        return (f"{row['name']:18s} FAILED {row.get('error', '')} "
                f"rel_err={row.get('rel_err', float('nan')):.3g}")
    speed = (f"{row['tflops']:6.2f} TFLOP/s" if "tflops" in row
             else f"{row['gbs']:6.0f} GB/s {row['pct_copy']:3.0f}%")
    inductor = f" inductor {row['inductor_us']:9.1f}" if "inductor_us" in row else ""
    return (f"{row['name']:18s} cinn {row['cinn_us']:9.1f} us  torch {row['torch_us']:9.1f} us{inductor}  "
            f"x{row['torch_us'] / row['cinn_us']:5.2f}  {speed}  err {row['rel_err']:.1e}")


def main(argv: list[str] | None = None) -> int:
    import torch  # noqa: PLC0415  # pyright: ignore[reportMissingImports] (optional)

    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help=f"workloads (default: all of {sorted(WORKLOADS)})")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--inner", type=int, default=10)
    parser.add_argument("--json", help="write the rows and the device to this file")
    parser.add_argument("--compile", action="store_true", help="also time torch.compile (Inductor)")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.names) - set(WORKLOADS))
    if unknown:
        parser.error(f"unknown workloads {unknown}; expected some of {sorted(WORKLOADS)}")
    peak = copy_bandwidth(args.repeat)
    device = torch.cuda.get_device_name()
    print(f"{device}: device copy bandwidth {peak:.0f} GB/s")
    overhead = launch_overhead(args.repeat)
    print(f"launch overhead (1024-element relu, back to back): cinn {overhead['cinn_us']:.1f} us/call, "
          f"torch {overhead['torch_us']:.1f} us/call")
    rows = []
    for name in args.names or sorted(WORKLOADS):
        try:
            row = bench_workload(WORKLOADS[name], GPU_SHAPES[name], args.repeat, args.inner, peak,
                                 args.compile)
        except Exception as exc:  # one broken workload must not hide the others' figures
            row = {"name": name, "ok": False, "error": f"{type(exc).__name__}: {exc}"[:2000]}
        rows.append(row)
        print(format_row(row), flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"device": device, "copy_gbs": peak, "torch": torch.__version__,
                       "launch_overhead": overhead,
                       "rows": rows}, f, indent=1)
    return 0 if all(r.get("ok") for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
