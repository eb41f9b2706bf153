"""`cinn-py bench --tuned`: the kernel table with the tuned automatic schedule next to the untuned one.

Before the table, each selected workload is tuned at its bench shape (`cinn_py.tools.tune`, fast
math as the bench kernels are built, `--tune-budget` seconds and `--tune-trials` candidates per
group at most) into the tuning database; then every row times, interleaved, the hand schedule,
the untuned automatic schedule (the database switched off while it is built) and the tuned one
(the database on), and reports `tuned_ms`, `tuned_x_auto` (untuned ms / tuned ms) and, against
the fastest peer that ran on the row (numpy, torch and the `--peers`), `auto_x_best_peer` and
`tuned_x_best_peer` (peer ms / our ms: above 1 is faster than every peer). `--tune-plot FILE`
draws the tuning progress (best time against trials) of every workload.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from typing import Any

__all__ = ["add_best_peer", "tune_workloads", "tuning_db_off"]

PEER_COLUMNS = ("numpy_ms", "torch_ms")


@contextlib.contextmanager
def tuning_db_off() -> Iterator[None]:
    """The tuning database switched off (`CINN_PY_TUNING_DB=off`) inside the block."""
    saved = os.environ.get("CINN_PY_TUNING_DB")
    os.environ["CINN_PY_TUNING_DB"] = "off"
    try:
        yield
    finally:
        if saved is None:
            del os.environ["CINN_PY_TUNING_DB"]
        else:
            os.environ["CINN_PY_TUNING_DB"] = saved


def tune_workloads(workloads: Sequence[Any], budget_s: float, trials: int, tiny: bool = False,
                   progress: bool = True, plot: str | None = None) -> list[tuple[str, Any]]:
    """Tune each workload's group at its bench (or tiny) shape; (name, TuneResult) per group."""
    from cinn_py.tools.tune import tune

    done: list[tuple[str, Any]] = []
    for workload in workloads:
        shape = workload.tiny if tiny else workload.shape
        for result in tune(workload.lower(shape), "x86", trials, budget_s=budget_s, fast_math=True,
                           progress=progress):
            print(f"tuned {workload.name}: {result.summary()}")
            done.append((workload.name, result))
    if plot:
        from cinn_py.tools.tune_plot import plot_progress

        print(f"tuning progress plot: {plot_progress(done, plot)}")
    return done


def add_best_peer(row: dict[str, Any], peer_keys: Sequence[str]) -> None:
    """`best_peer`, `best_peer_ms` and the auto / tuned ratios against it (peer ms / our ms)."""
    times = {key[:-3]: row[key] for key in (*PEER_COLUMNS, *peer_keys) if row.get(key) is not None}
    if not times:
        return
    name, best = min(times.items(), key=lambda kv: kv[1])
    row["best_peer"], row["best_peer_ms"] = name, best
    for ours in ("auto", "tuned"):
        ms = row.get(f"{ours}_ms")
        row[f"{ours}_x_best_peer"] = None if not ms else best / ms
