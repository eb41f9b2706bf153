"""Convolution rows of `cinn-py bench`: conv2d forward (with a relu) and backward (dx and dw) on
the resnet18 layer shapes and a depthwise layer, against torch eager (oneDNN) in the same run.

Rows (batch 1, NCHW float32; C x H x W -> O, kernel, stride):

    conv_64x56        64 x 56 x 56 -> 64, 3x3          conv_512x7      512 x 7 x 7 -> 512, 3x3
    conv_128x28      128 x 28 x 28 -> 128, 3x3         conv_1x1s2      256 x 14 x 14 -> 512, 1x1, stride 2
    conv_256x14      256 x 14 x 14 -> 256, 3x3         conv_dw128x28   128 x 28 x 28, depthwise 3x3

Ours: two compiled NetBuilder programs, `relu(conv2d(x, w))` and `conv2d_grad(dy, x, w)` (dx, dw),
schedule="auto". torch: `relu(F.conv2d(x, w))` under `no_grad`, and
`torch.ops.aten.convolution_backward` (dx and dw from dy, the work autograd does for a conv), on
`torch.set_num_threads(threads)` threads (2 by default) with `OMP_WAIT_POLICY=PASSIVE` (set before
torch is first imported). The four are timed in interleaved rounds (each round calls each once),
medians reported; results are checked against torch first. Targets (issue 22), over the five
resnet rows: forward geomean >= 1.0x torch, backward geomean >= 0.8x.
"""

from __future__ import annotations

import math
import os
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cinn_py.diagnostics import CinnError

__all__ = ["CONV", "ConvBenchError", "ConvCase", "conv_summary", "format_conv_table", "run_conv"]

TARGET_FWD = 1.0
TARGET_BWD = 0.8


@dataclass(frozen=True)
class ConvCase:
    name: str
    channels: int
    size: int
    out_channels: int
    kernel: int
    stride: int = 1
    groups: int = 1

    @property
    def padding(self) -> int:
        return self.kernel // 2

    @property
    def resnet(self) -> bool:
        """One of the resnet18 layers the targets average over."""
        return self.groups == 1

    def tiny(self) -> ConvCase:
        channels = max(8, self.channels // 8)
        depthwise = self.groups > 1
        out = channels if depthwise else max(8, self.out_channels // 8)
        return ConvCase(self.name, channels, min(self.size, 9), out, self.kernel, self.stride,
                        channels if depthwise else 1)

    @property
    def shape(self) -> dict[str, int]:
        return {"c": self.channels, "hw": self.size, "o": self.out_channels, "k": self.kernel,
                "s": self.stride, "groups": self.groups}


CONV: dict[str, ConvCase] = {c.name: c for c in (
    ConvCase("conv_64x56", 64, 56, 64, 3),
    ConvCase("conv_128x28", 128, 28, 128, 3),
    ConvCase("conv_256x14", 256, 14, 256, 3),
    ConvCase("conv_512x7", 512, 7, 512, 3),
    ConvCase("conv_1x1s2", 256, 14, 512, 1, stride=2),
    ConvCase("conv_dw128x28", 128, 28, 128, 3, groups=128),
)}


def _attrs(case: ConvCase) -> dict[str, Any]:
    return {"strides": [case.stride] * 2, "paddings": [case.padding] * 2, "groups": case.groups}


def _programs(case: ConvCase) -> tuple[Any, Any]:
    """(relu(conv2d), conv2d_grad) NetBuilder programs."""
    from cinn_py.frontend import NetBuilder  # noqa: PLC0415

    x_shape = [1, case.channels, case.size, case.size]
    w_shape = [case.out_channels, case.channels // case.groups, case.kernel, case.kernel]
    fwd = NetBuilder(f"bench_{case.name}")
    y = fwd.conv2d(fwd.create_input("float32", x_shape, "X"), fwd.create_input("float32", w_shape, "W"),
                   **_attrs(case))
    bwd = NetBuilder(f"bench_{case.name}_grad")
    x, w = bwd.create_input("float32", x_shape, "X"), bwd.create_input("float32", w_shape, "W")
    dy = bwd.create_input("float32", [int(d) for d in y.shape], "DY")
    return fwd.build([fwd.relu(y)]), bwd.build(bwd.conv2d_grad(dy, x, w, **_attrs(case)))


def _torch(threads: int) -> Any:
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        import torch  # noqa: PLC0415  # pyright: ignore[reportMissingImports] (optional)
    except ImportError:
        raise ConvBenchError("bench: the conv rows compare with torch's convolutions; install "
                             "torch") from None
    torch.set_num_threads(threads)
    return torch


def run_case(case: ConvCase, repeat: int, threads: int | None, tiny: bool) -> dict[str, Any]:
    """Build, check against torch and time one case (module docstring); its result row."""
    from cinn_py import compile_program  # noqa: PLC0415
    from cinn_py.runtime.threadpool import num_threads_override  # noqa: PLC0415
    from cinn_py.tools.bench import time_alternating  # noqa: PLC0415

    shape = case.tiny() if tiny else case
    torch = _torch(threads or 2)
    fwd_prog, bwd_prog = _programs(shape)
    fwd = compile_program(fwd_prog, "x86", schedule="auto")
    bwd = compile_program(bwd_prog, "x86", schedule="auto")
    rng = np.random.default_rng(0)
    arrays = {v.name: rng.standard_normal([int(d) for d in v.shape]).astype(np.float32)
              for v in bwd_prog.inputs}
    tx, tw, tdy = (torch.from_numpy(arrays[k]) for k in ("X", "W", "DY"))
    st, pad, groups = [shape.stride] * 2, [shape.padding] * 2, shape.groups

    def torch_fwd() -> Any:
        with torch.no_grad():
            return torch.relu(torch.nn.functional.conv2d(tx, tw, stride=st, padding=pad, groups=groups))

    def torch_bwd() -> Any:
        return torch.ops.aten.convolution_backward(tdy, tx, tw, None, st, pad, [1, 1], False, [0, 0], groups,
                                                   [True, True, False])

    fwd_args = [arrays[v.name] for v in fwd_prog.inputs]
    bwd_args = [arrays[v.name] for v in bwd_prog.inputs]
    want = [torch_fwd().numpy(), *(t.numpy() for t in torch_bwd()[:2])]
    max_err = _check(case.name, [fwd(*fwd_args), *bwd(*bwd_args)], want)
    fns = [lambda: fwd(*fwd_args), lambda: bwd(*bwd_args), torch_fwd, torch_bwd]
    load_before = os.getloadavg()
    with num_threads_override(threads):
        times = [statistics.median(t) * 1e3 for t in time_alternating(fns, repeat, warmup=2)]
    return {"kind": "conv", "name": case.name, "shape": shape.shape, "resnet": case.resnet,
            "fwd_ms": times[0], "bwd_ms": times[1], "torch_fwd_ms": times[2], "torch_bwd_ms": times[3],
            "x_torch_fwd": times[2] / times[0], "x_torch_bwd": times[3] / times[1], "max_abs_err": max_err,
            "kernels": [o.type for g in fwd.groups for o in g.ops], "repeat": repeat,
            "torch_threads": torch.get_num_threads(), "load_before": load_before,
            "load_after": os.getloadavg()}


def _check(name: str, got: Sequence[np.ndarray], want: Sequence[np.ndarray]) -> float:
    err = 0.0
    for label, a, b in zip(("y", "dx", "dw"), got, want):
        scale = max(1.0, float(np.max(np.abs(b))))
        if not np.allclose(a, b, rtol=1e-3, atol=1e-4 * scale):
            raise CinnError(f"bench '{name}': {label} differs from torch's: max abs error "
                            f"{float(np.max(np.abs(a - b))):.3g} (largest value {scale:.3g})")
        err = max(err, float(np.max(np.abs(a - b))))
    return err


def run_conv(names: Sequence[str], repeat: int = 20, threads: int | None = None,
             tiny: bool = False) -> list[dict[str, Any]]:
    """One row per named case: `fwd_ms, bwd_ms` (ours), `torch_fwd_ms, torch_bwd_ms`,
    `x_torch_fwd, x_torch_bwd` (torch ms / ours), `max_abs_err`, `kernels` (the forward's ops after
    the CPU rewrites), `load_before/after`."""
    return [run_case(CONV[n], repeat, threads, tiny) for n in names]


def _geomean(values: Sequence[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def conv_summary(rows: Sequence[dict[str, Any]], tiny: bool = False) -> dict[str, Any]:
    """Geomeans of the resnet rows' speed ratios and whether they meet the targets (none at tiny
    shapes or without all five resnet rows)."""
    resnet = [r for r in rows if r["resnet"]]
    if not resnet:
        return {}
    fwd, bwd = _geomean([r["x_torch_fwd"] for r in resnet]), _geomean([r["x_torch_bwd"] for r in resnet])
    summary: dict[str, Any] = {"geomean_fwd": fwd, "geomean_bwd": bwd, "rows": len(resnet), "targets": {}}
    if not tiny and len(resnet) == sum(c.resnet for c in CONV.values()):
        summary["targets"] = {f">={TARGET_FWD:g}x torch fwd": fwd >= TARGET_FWD,
                              f">={TARGET_BWD:g}x torch bwd": bwd >= TARGET_BWD}
    return summary


def format_conv_table(rows: Sequence[dict[str, Any]], tiny: bool = False) -> str:
    """The conv rows as a fixed-width table (medians of interleaved rounds, with the load), then
    the resnet rows' geomeans and targets."""
    if not rows:
        return ""
    first, last = rows[0], rows[-1]
    head = (f"conv2d vs torch eager (torch {first['torch_threads']} threads, OMP_WAIT_POLICY="
            f"{os.environ.get('OMP_WAIT_POLICY', '-')}; medians of {first['repeat']} interleaved rounds; "
            f"load average before {'/'.join(f'{v:.2f}' for v in first['load_before'])}, after "
            f"{'/'.join(f'{v:.2f}' for v in last['load_after'])})")
    header = ("workload", "CxHW->O kxk/s g", "fwd ms", "torch fwd ms", "x torch fwd", "bwd ms",
              "torch bwd ms", "x torch bwd", "kernel")
    table: list[tuple[str, ...]] = [header]
    for r in rows:
        s = r["shape"]
        table.append((r["name"], f"{s['c']}x{s['hw']}->{s['o']} {s['k']}x{s['k']}/{s['s']} {s['groups']}",
                      f"{r['fwd_ms']:.3f}", f"{r['torch_fwd_ms']:.3f}", f"{r['x_torch_fwd']:.2f}x",
                      f"{r['bwd_ms']:.3f}", f"{r['torch_bwd_ms']:.3f}", f"{r['x_torch_bwd']:.2f}x",
                      r["kernels"][0]))
    widths = [max(len(row[k]) for row in table) for k in range(len(header))]
    lines = [head]
    for k, row in enumerate(table):
        lines.append("  ".join(c.ljust(w) if i in (0, 1, len(header) - 1) else c.rjust(w)
                               for i, (c, w) in enumerate(zip(row, widths))).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    summary = conv_summary(rows, tiny)
    if summary:
        targets = ", ".join(f"{k} {'ok' if ok else 'MISSED'}" for k, ok in summary["targets"].items())
        lines.append(f"resnet rows ({summary['rows']}): geomean x torch fwd {summary['geomean_fwd']:.2f}x, "
                     f"bwd {summary['geomean_bwd']:.2f}x" + (f"; targets: {targets}" if targets else ""))
    return "\n".join(lines)


class ConvBenchError(CinnError):
    """A conv row cannot run (torch is not installed)."""
