"""The text table of the x86 kernel benchmarks (`bench.run_benchmarks` rows): the measured
bandwidth and load line on top, one row per workload with the hand and auto schedules' times,
GB/s against the bandwidth measured around the row, the numpy / torch / peer baselines, the tuned
columns when a row has them, and each target as ok / MISSED.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cinn_py.tools.bench_compare import _peer_key
from cinn_py.tools.bench_peers import PEERS


def format_table(results: Sequence[dict[str, Any]]) -> str:
    """A fixed-width text table of `run_benchmarks` results, with the bandwidth line on top."""
    if not results:
        return "(no results)"
    first = results[0]
    lines = [f"memory bandwidth: numpy copy {first['numpy_copy_gbs']:.1f} GB/s, cinn-py copy "
             f"{first['cinn_copy_gbs']:.1f} GB/s (best before/after: {first['bandwidth_gbs']:.1f} GB/s); "
             f"% BW is against BW@run, the cinn-py copy timed right before/after each workload; "
             f"threads: {first['threads']}; GB/s, % BW, x numpy and x torch are the hand schedule's; "
             "auto x hand = hand ms / auto ms; load average (1/5/15 min) before "
             f"{_fmt_load(first.get('load_before'))}, "
             f"after {_fmt_load(first.get('load_after'))}"]
    peers = [p for p in PEERS if any(_peer_key(p) in r for r in results)]
    tuned = any(r.get("tuned_ms") is not None for r in results)
    header = ("workload", "shape", "hand ms", "auto ms", "auto x hand", "GB/s", "BW@run", "% BW", "numpy ms",
              "x numpy", "torch ms", "x torch", *(f"{p} ms" for p in peers),
              *(("tuned ms", "tuned x auto", "auto x peer", "tuned x peer") if tuned else ()), "targets")
    rows: list[tuple[str, ...]] = [header]
    for r in results:
        shape = "x".join(str(v) for v in r["shape"].values())
        targets = ", ".join(f"{k} {'ok' if ok else 'MISSED'}" for k, ok in r.get("targets", {}).items())
        rows.append((r["name"], shape, f"{r['ms']:.3f}", _opt(r.get("auto_ms"), ".3f"),
                     _opt(r.get("auto_x_hand"), ".2f", "x"), f"{r['gbs']:.1f}",
                     f"{r['local_bandwidth_gbs']:.1f}",
                     f"{r['pct_bw']:.0f}%", _opt(r.get("numpy_ms"), ".2f"),
                     _opt(r.get("x_numpy"), ".1f", "x"),
                     _opt(r.get("torch_ms"), ".2f"), _opt(r.get("x_torch"), ".1f", "x"),
                     *(_opt(r.get(_peer_key(p)), ".2f") for p in peers),
                     *((_opt(r.get("tuned_ms"), ".3f"), _opt(r.get("tuned_x_auto"), ".2f", "x"),
                        _opt(r.get("auto_x_best_peer"), ".2f", "x"),
                        _opt(r.get("tuned_x_best_peer"), ".2f", "x"))
                       if tuned else ()), targets or "-"))
    widths = [max(len(row[k]) for row in rows) for k in range(len(header))]
    for k, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(w) if c in (0, 1, len(header) - 1) else cell.rjust(w)
                               for c, (cell, w) in enumerate(zip(row, widths))).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _fmt_load(load: Sequence[float] | None) -> str:
    return "-" if load is None else "/".join(f"{v:.2f}" for v in load)


def _opt(value: float | None, fmt: str, suffix: str = "") -> str:
    return "-" if value is None else f"{value:{fmt}}{suffix}"
