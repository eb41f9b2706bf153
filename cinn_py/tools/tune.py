"""The tuner: search each fused group's schedule space, measure candidates, keep the best in the
tuning database that `schedule="auto"` reads.

    cinn_py.tune(kernel_program_or_model, target="x86", trials=32, budget_s=None, ...)
    cinn-py tune FILE [--trials N] [--budget S] [--workers process|ray|inline] [--db PATH]

For each fused group (a `LoweredFunc` or `IRSchedule` is one group; a NetBuilder `Program` is
fused first, every group of it is tuned; a torch model is captured through the `cinn_py`
torch.compile backend and every group of every graph is tuned) the tuner

1. builds the group's search space (`schedules.tuning.space`: the tactics' decisions as knobs
   over the schedule primitives; every candidate passes the primitives' legality checks or is
   refused, and is never measured);
2. runs the evolutionary search (`schedules.tuning.search`) guided by the learned cost model
   (`schedules.tuning.cost_model`, LightGBM / scikit-learn when installed, trained on the
   candidates' loop-nest features; warm-started from the database's measurements of other
   groups and shapes on this CPU), measuring candidates in batches in worker processes or Ray
   tasks (`cinn_py.tools.tune_runners`): each is compiled, checked against the default
   schedule's outputs on the same random inputs and timed (fastest of `repeat` samples);
3. confirms: the fastest few and the default are timed again interleaved, round after round
   (the same load for all), and the winner of that comparison is the result;
4. saves the winner (per CPU, target, group structure and shape bucket) and every measured
   candidate with its features (the model's training data) to the SQLite tuning database.

Candidates are measured one at a time by default (`parallel=1`): timings taken while other
candidates run on the same cores are not comparable.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cinn_py.ir import LoweredFunc, print_ir
from cinn_py.target import Target, TargetLike
from cinn_py.tools.tune_runners import WORKER_KINDS, confirm_job, make_runner, measure_job, run_all

__all__ = ["Progress", "Trial", "TuneResult", "WORKER_KINDS", "groups_of", "make_runner", "run_all",
           "torch_programs", "tune"]


@dataclass
class Trial:
    """One measured candidate (`time_s` None: it failed; `error` says why)."""

    candidate: Any
    time_s: float | None
    error: str | None = None
    batch: int = 0
    predicted: float | None = None

    @property
    def ok(self) -> bool:
        return self.time_s is not None


@dataclass
class TuneResult:
    """The outcome for one group: `trials` in measurement order (the default first), the
    confirmed `best` and `default` times, what the search did."""

    group: str
    key: str
    trials: list[Trial]
    db_path: Path | None
    saved: bool = False
    best_candidate: Any = None
    confirmed: dict[str, float | None] = field(default_factory=dict)
    """{"best": s, "default": s}: the interleaved confirmation's times."""
    model: str = "random"
    refused: int = 0
    duplicates: int = 0
    stopped: str = ""
    elapsed_s: float = 0.0
    space_size: int = 0
    """Candidates in the searched space (after fixing the knobs that change nothing here)."""
    fixed_knobs: list[str] = field(default_factory=list)

    @property
    def default(self) -> Trial:
        return self.trials[0]

    @property
    def best(self) -> Trial:
        """The confirmed winner's trial (else the fastest measured, else the default)."""
        for t in self.trials:
            if self.best_candidate is not None and t.candidate == self.best_candidate and t.ok:
                return t
        good = [t for t in self.trials if t.ok]
        return min(good, key=lambda t: t.time_s or 0.0) if good else self.trials[0]

    @property
    def failed(self) -> list[Trial]:
        return [t for t in self.trials if not t.ok]

    @property
    def speedup(self) -> float | None:
        """default / best, from the confirmation when it ran, else from the search's samples."""
        best, default = self.confirmed.get("best"), self.confirmed.get("default")
        if best is None or default is None:
            best, default = self.best.time_s, self.default.time_s
        return None if best is None or default is None or best <= 0 else default / best

    def best_so_far(self) -> list[float | None]:
        """The fastest time after each trial (the tuning-progress curve)."""
        out: list[float | None] = []
        best: float | None = None
        for t in self.trials:
            if t.time_s is not None and (best is None or t.time_s < best):
                best = t.time_s
            out.append(best)
        return out

    def summary(self) -> str:
        best = self.best
        if not best.ok:
            return f"{self.group}: every trial failed ({self.failed[0].error})"
        ratio = self.speedup
        speed = f"{ratio:.2f}x the default" if ratio is not None else "default failed"
        return (f"{self.group} [{self.key}]: best {best.time_s * 1e3:.3f} ms ({speed}; "  # type: ignore[operator]
                f"{len(self.trials)} trials of a space of {self.space_size}, {len(self.failed)} failed, "
                f"{self.refused} refused, model {self.model}, {self.elapsed_s:.0f} s, "
                f"stopped: {self.stopped}): "
                f"{best.candidate}")


# -- progress -------------------------------------------------------------------------------------------
class Progress:
    """A one-line progress display on stderr:
    `tune mm [#####.....] 5/10 best 7.1 ms (1.21x), 1 failed, model lightgbm, 12/120 s`."""

    def __init__(self, label: str, total: int, enabled: bool, stream: Any = None,
                 budget_s: float | None = None) -> None:
        self.label, self.total, self.enabled, self.budget_s = label, total, enabled, budget_s
        self.stream = stream or sys.stderr
        self.done, self.failed, self.best = 0, 0, math.inf
        self.default: float | None = None
        self.model = "random"
        self.start = time.monotonic()

    def update(self, trial: Trial, model: str | None = None) -> None:
        self.done += 1
        self.model = model or self.model
        if trial.ok:
            self.best = min(self.best, trial.time_s)  # type: ignore[type-var]
            if self.default is None and self.done == 1:
                self.default = trial.time_s
        else:
            self.failed += 1
        if not self.enabled:
            return
        width = 24
        filled = width * min(self.done, self.total) // max(self.total, 1)
        best = f"best {self.best * 1e3:.3f} ms" if self.best < math.inf else "no result yet"
        if self.default is not None and self.best < math.inf:
            best += f" ({self.default / self.best:.2f}x)"
        clock = f"{time.monotonic() - self.start:.0f}"
        clock += f"/{self.budget_s:.0f} s" if self.budget_s is not None else " s"
        line = (f"\rtune {self.label} [{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} "
                f"{best}, {self.failed} failed, model {self.model}, {clock}")
        self.stream.write(line)
        self.stream.flush()

    def finish(self) -> None:
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()


# -- what to tune ---------------------------------------------------------------------------------------
def groups_of(obj: Any, example_inputs: Sequence[Any] | None = None) -> list[LoweredFunc]:
    """The fused groups of a LoweredFunc / IRSchedule (one), a NetBuilder Program (as
    `compile_program` fuses it), or a torch module / function (with `example_inputs`: every
    group of the graphs the `cinn_py` torch.compile backend builds)."""
    from cinn_py.frontend.program import Program

    if isinstance(obj, LoweredFunc):
        return [obj]
    if isinstance(obj, Program):
        from cinn_py.frontend.fusion import plan
        from cinn_py.lowering.group import lower_group

        return [lower_group(g) for g in plan(obj).groups]  # the groups compile_program builds
    func = getattr(obj, "func", None)
    if isinstance(func, LoweredFunc):
        return [func]
    if callable(obj) and example_inputs is not None:
        return [g for program in torch_programs(obj, example_inputs) for g in groups_of(program)]
    raise TypeError(f"tune: expected a LoweredFunc, an IRSchedule, a NetBuilder Program or a torch model "
                    f"with example_inputs, got {type(obj).__name__}")


def torch_programs(model: Any, example_inputs: Sequence[Any]) -> list[Any]:
    """The NetBuilder programs the `cinn_py` torch.compile backend builds for `model` on
    `example_inputs` (one per compiled partition; the model runs once, without gradients)."""
    import torch

    import cinn_py.torch.graph as graph_module

    captured: list[Any] = []
    original = graph_module.to_program

    def recording(*args: Any, **kwargs: Any) -> Any:
        out = original(*args, **kwargs)
        captured.append(out[0])
        return out

    graph_module.to_program = recording  # type: ignore[assignment]
    try:
        torch._dynamo.reset()  # pyright: ignore[reportPrivateImportUsage] (the documented way to recompile)
        with torch.no_grad():
            torch.compile(model, backend="cinn_py", dynamic=False)(*example_inputs)
    finally:
        graph_module.to_program = original  # type: ignore[assignment]
        torch._dynamo.reset()  # pyright: ignore[reportPrivateImportUsage]
    if not captured:
        raise ValueError(f"tune: the cinn_py backend compiled no partition of {type(model).__name__} "
                         "(every op "
                         "ran eagerly); nothing to tune")
    return captured


def _symbols(func: LoweredFunc, dims: dict[str, int] | None) -> dict[str, int]:
    names = [v.name for v in func.scalar_args]
    missing = [n for n in names if n not in (dims or {})]
    if missing:
        raise ValueError(f"tune: '{func.name}' has symbolic dims {missing}; pass their values for the "
                         f"measurements, e.g. dims={{{missing[0]!r}: 1024}}")
    return {n: int((dims or {})[n]) for n in names}


def _key(func: LoweredFunc, kind: str, target: Target) -> str:
    from schedules.tactics.tuning_db import group_key, matmul_key
    from schedules.tuning.space import matmul_info

    if kind == "matmul":
        return matmul_key(matmul_info(func), target.name)
    return group_key(func, target.name)


# -- the entry point ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Setup:
    target: Target
    runner: Any
    options: Any
    repeat: int
    seed: int
    fast_math: bool
    confirm: int
    progress: bool
    model: str
    history: list[tuple[list[float], float]]
    min_speedup: float


def tune(obj: Any, target: TargetLike = "x86", trials: int = 32, *,
         example_inputs: Sequence[Any] | None = None,
         budget_s: float | None = None, batch_size: int = 8, workers: str = "process", parallel: int = 1,
         dims: dict[str, int] | None = None, repeat: int = 5, timeout_s: float = 120.0,
         db: str | Path | None = None, seed: int = 0, save: bool = True, progress: bool = True,
         fast_math: bool = False, model: str = "auto", confirm: int = 3, min_speedup: float = 1.03,
         log: Callable[[str], None] | None = None) -> list[TuneResult]:
    """Tune every group of `obj` for the CPU `target` (see the module docstring).

    Args:
        obj: a LoweredFunc, an IRSchedule, a NetBuilder Program, or a torch model / function
            (then `example_inputs` are its inputs).
        trials: candidates measured per group, the default included; `budget_s`: wall seconds
            per group (whichever ends first); `batch_size`: candidates per measured batch.
        workers: "process", "ray" or "inline"; `parallel`: concurrent measurements.
        dims: values of the symbolic dims for the measurements (their bucket is what is tuned).
        db: the database file (default: `$CINN_PY_TUNING_DB`, else `<cache dir>/tuning.sqlite`).
        fast_math: measure kernels built with fast math (as the program will be compiled).
        model: the cost model: "auto" (LightGBM, else scikit-learn, else random), "lightgbm",
            "sklearn" or "none" (random search).
        confirm: how many of the fastest candidates are re-timed against the default,
            interleaved (0: trust the search's samples); `min_speedup`: the confirmed speed-up a
            candidate needs over the default to be kept (below it the default is the result:
            on shared cores smaller differences are noise).
        save: write the winners and the measurements to the database.

    Returns one `TuneResult` per group (`.best`, `.default`, `.speedup`, `.trials`, `.summary()`).
    """
    from schedules.tactics.tuning_db import TuningDB, db_path, host_cpu
    from schedules.tuning.search import SearchOptions

    tgt = Target.parse(target)
    if tgt.is_gpu:
        raise ValueError(f"tune: only CPU targets are measured by this tuner, got {target!r}")
    if trials < 1:
        raise ValueError(f"tune: trials must be >= 1, got {trials}")
    if budget_s is not None and budget_s <= 0:
        raise ValueError(f"tune: budget_s must be > 0 seconds, got {budget_s}")
    groups = groups_of(obj, example_inputs)
    path = Path(db) if db is not None else db_path()
    store = TuningDB.load(path)
    history = [(f, _relative(t, d)) for _, _, f, t, d in store.measurements(host_cpu(), tgt.name) if d]
    # the search gets 85% of the budget: pruning the space and the confirmation need the rest
    options = SearchOptions(trials=trials, batch_size=batch_size, seed=seed,
                            budget_s=None if budget_s is None else 0.85 * budget_s)
    runner = make_runner(workers, parallel, timeout_s)
    setup = _Setup(tgt, runner, options, repeat, seed, fast_math, confirm, progress, model, history,
                   min_speedup)
    results: list[TuneResult] = []
    try:
        for func in groups:
            result = _tune_group(func, _symbols(func, dims), setup, path, store)
            results.append(result)
            if log is not None:
                log(result.summary())
    finally:
        runner.close()
    if save and path is not None:
        store.save()
        for res in results:
            res.saved = res.best.ok
    return results


def _relative(time_s: float, default_s: float | None) -> float:
    from schedules.tuning.cost_model import relative_cost

    return relative_cost(time_s, default_s)


def _tune_group(func: LoweredFunc, symbols: dict[str, int], setup: _Setup, path: Path | None,
                store: Any) -> TuneResult:
    from schedules.tactics.tuning_db import TuningRecord, host_cpu, now
    from schedules.tuning.cost_model import CostModel
    from schedules.tuning.search import Measured, evolutionary_search
    from schedules.tuning.space import apply_candidate, prune_space, space_for

    start = time.monotonic()
    tgt = setup.target
    full = space_for(func, tgt)
    key = _key(func, full.kind, tgt)
    default_fallbacks = len(apply_candidate(func, tgt, full.default).schedule.auto_report.fallbacks)
    space, dropped = prune_space(full, lambda c: apply_candidate(func, tgt, c, default_fallbacks, full))
    text = print_ir(func, decls=True)
    budget = None if setup.options.budget_s is None else setup.options.budget_s / 0.85
    bar = Progress(func.name, setup.options.trials, setup.progress, budget_s=budget)
    cost_model = CostModel(setup.model, setup.seed)

    def measure(batch: Sequence[Any]) -> list[tuple[float | None, str | None]]:
        jobs = [(text, s.candidate, space.default, symbols, setup.repeat, setup.seed, tgt.name,
                 setup.fast_math) for s in batch]
        return list(run_all(setup.runner, jobs))

    def on_trial(m: Measured) -> None:
        bar.update(Trial(m.candidate, m.time_s, m.error, m.batch, m.predicted),
                   cost_model.backend if cost_model.trained else "random")

    outcome = evolutionary_search(space, lambda c: apply_candidate(func, tgt, c, default_fallbacks, space),
                                  measure, cost_model, setup.options, setup.history, on_trial)
    bar.finish()
    trials = [Trial(m.candidate, m.time_s, m.error, m.batch, m.predicted) for m in outcome.measured]
    result = TuneResult(func.name, key, trials, path, model=outcome.model, refused=outcome.refused,
                        duplicates=outcome.duplicates, stopped=outcome.stopped, space_size=space.size,
                        fixed_knobs=dropped)
    _confirm(result, text, symbols, setup)
    result.elapsed_s = time.monotonic() - start
    default, best = result.default, result.best
    store.add_measurements([(key, m.candidate.as_dict(), list(m.features), m.time_s, default.time_s)
                            for m in outcome.measured if m.ok])
    if best.ok:
        time_s = result.confirmed.get("best") or best.time_s
        default_s = result.confirmed.get("default") or default.time_s
        store.put(key, TuningRecord(best.candidate.as_dict(), float(time_s),  # type: ignore[arg-type]
                                    default_s, len(trials),
                                    {"cpu": host_cpu(), "target": tgt.name, "tuned_at": now(),
                                     "group": func.name, "model": outcome.model}))
    return result


def _confirm(result: TuneResult, text: str, symbols: dict[str, int], setup: _Setup) -> None:
    """Re-time the fastest `setup.confirm` candidates and the default interleaved; the winner
    of that comparison is the result (the search's samples were taken at different times)."""
    good = sorted((t for t in result.trials[1:] if t.ok), key=lambda t: t.time_s or 0.0)[:setup.confirm]
    if not good or not result.default.ok or setup.confirm <= 0:
        result.best_candidate = result.best.candidate if result.best.ok else None
        return
    cands = [result.default.candidate] + [t.candidate for t in good]
    job = (text, cands, symbols, max(3, setup.repeat), setup.seed, setup.target.name, setup.fast_math)
    times, _err = next(iter(setup.runner.run([job], fn=confirm_job)))
    timed = [(t, c) for t, c in zip(times or [], cands) if t is not None]
    if not timed:  # the confirmation's worker failed: the search's samples decide
        result.best_candidate = result.best.candidate
        return
    best_time, best_cand = min(timed, key=lambda tc: tc[0])
    default_time = times[0]  # type: ignore[index]
    if default_time is not None and best_time * setup.min_speedup > default_time:
        # within the noise of a shared machine: keep what auto does untuned
        best_time, best_cand = default_time, result.default.candidate
    result.best_candidate = best_cand
    result.confirmed = {"best": best_time, "default": default_time}


def measure(func: LoweredFunc, cand: Any, dims: dict[str, int] | None = None, repeat: int = 5,
            fast_math: bool = False) -> float:
    """Seconds per call of `func` scheduled with `cand`, in this process (ArithmeticError when
    its result differs from the default schedule's)."""
    from schedules.tuning.space import space_for

    tgt = Target.parse("x86")
    default = space_for(func, tgt).default
    secs, err = measure_job(print_ir(func, decls=True), cand, default, dims or {}, repeat, 0, tgt.name,
                            fast_math)
    if secs is None:
        raise ArithmeticError(f"tune: candidate {cand} of '{func.name}' failed: {err}")
    return secs
