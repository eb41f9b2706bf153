"""`cinn-py bench --plot FILE.png`: a bar chart of `run_benchmarks` results.

One group of bars per workload, the speed-up over numpy (numpy ms / ms, log scale) of the
hand-scheduled kernel, the auto-scheduled one and PyTorch when it ran; the auto bar is labelled
with its speed relative to the hand schedule. matplotlib is an optional dependency
(`pip install cinn-py[plot]`); it is only imported here, with the non-interactive Agg backend.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cinn_py.diagnostics import CinnError

__all__ = ["PlotError", "plot_results", "require_matplotlib"]

SERIES = (("hand", "ms", "#4c72b0"), ("auto", "auto_ms", "#dd8452"), ("torch", "torch_ms", "#55a868"))


class PlotError(CinnError):
    """matplotlib is missing, or the results cannot be plotted."""


def require_matplotlib() -> Any:
    """The `matplotlib.pyplot` module (Agg backend), or PlotError saying how to install it."""
    try:
        import matplotlib  # noqa: PLC0415  # pyright: ignore[reportMissingImports] (optional: plot extra)

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415  # pyright: ignore[reportMissingImports] (optional)
    except ImportError as err:
        raise PlotError("bench --plot needs matplotlib: pip install 'cinn-py[plot]' (or matplotlib)") from err
    return plt


def _speedups(results: Sequence[dict[str, Any]], key: str) -> list[float]:
    return [r["numpy_ms"] / r[key] if r.get(key) and r.get("numpy_ms") else 0.0 for r in results]


def plot_results(results: Sequence[dict[str, Any]], path: str | Path) -> Path:
    """Write the chart of `results` (rows of `run_benchmarks` with numpy timings) to `path`."""
    if not results or any(r.get("numpy_ms") is None for r in results):
        raise PlotError("bench --plot: nothing to plot (the rows need numpy timings)")
    plt = require_matplotlib()
    series = [(label, key, color) for label, key, color in SERIES if any(r.get(key) for r in results)]
    width = 0.8 / len(series)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.3 * len(results)), 4.0))
    for k, (label, key, color) in enumerate(series):
        xs = [i + (k - (len(series) - 1) / 2) * width for i in range(len(results))]
        bars = ax.bar(xs, _speedups(results, key), width, label=label, color=color)
        if key == "auto_ms":
            ax.bar_label(bars,
                         labels=[f"{r['auto_x_hand']:.2f}x" if r.get("auto_x_hand") else "" for r in results],
                         fontsize=7, padding=2)
    ax.set_xticks(range(len(results)), [r["name"] for r in results], rotation=30, ha="right")
    ax.set_yscale("log")
    ticks = plt.FuncFormatter(lambda v, _: f"{v:g}x")
    ax.yaxis.set_major_formatter(ticks)
    ax.yaxis.set_minor_formatter(ticks)
    ax.tick_params(axis="y", which="minor", labelsize=7)
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.set_ylabel("speed-up over numpy (log)")
    threads = results[0].get("threads")
    # Two short lines: one long line was cut off at the figure's edge.
    ax.set_title(f"cinn-py x86 kernels, {threads} thread(s)\nauto bars labelled with auto x hand",
                 fontsize=10)
    ax.legend()
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
