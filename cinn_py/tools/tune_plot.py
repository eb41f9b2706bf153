"""The tuning-progress plot: the best time so far against the trials, one line per tuned group.

Times are shown relative to the group's default (what `schedule="auto"` does untuned), so that
groups of any size share the axis: a line that drops below 1.0 found a faster schedule.
Needs matplotlib (`pip install 'cinn-py[plot]'`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["progress_series", "plot_progress"]


def progress_series(result: Any) -> list[float]:
    """The best time so far after each trial, relative to the default's time (trials before the
    first success are left out)."""
    default = result.default.time_s
    if default is None:
        return []
    return [b / default for b in result.best_so_far() if b is not None]


def plot_progress(results: Sequence[tuple[str, Any]], path: str | Path) -> Path:
    """Write the plot of `(label, TuneResult)` pairs to `path` (PNG, SVG or PDF by suffix)."""
    try:
        import matplotlib  # pyright: ignore[reportMissingImports]
    except ImportError:
        raise RuntimeError("tune --plot needs matplotlib (pip install 'cinn-py[plot]')") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # pyright: ignore[reportMissingImports]

    fig, ax = plt.subplots(figsize=(8, 5))
    for label, result in results:
        series = progress_series(result)
        if series:
            ax.plot(range(1, len(series) + 1), series, marker=".", label=f"{label} ({1 / series[-1]:.2f}x)")
    ax.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
    ax.set_xlabel("trials measured")
    ax.set_ylabel("best time / untuned auto schedule")
    ax.set_title("cinn-py tune: best time against trials")
    ax.legend(fontsize="small")
    ax.grid(True, alpha=0.3)
    out = Path(path)
    fig.savefig(out, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return out
