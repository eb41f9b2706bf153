"""The tuner: measure the auto scheduler's tactic parameters and keep the best in the tuning database.

    cinn_py.tune(func_or_program, target="x86", trials=16, workers="process", dims=None, ...)
    cinn-py tune FILE [--trials N] [--workers process|ray|inline] [--dims M=512,...] [--db PATH]

For each fused group (a `LoweredFunc` is one group; a NetBuilder `Program` is decomposed and
fused first), the search space is the group's tactic parameters:

* matmul groups (`schedules.tactics.matmul`): register tile rows `mr` and vectors per row `nv`
  (tiles that fit the vector register file: mr*nv accumulators + nv B vectors + 1 broadcast),
  vector width (`lanes`: native, half), k block `kc`, whether B panels are packed;
* other groups: vector width in bits and `min_parallel_work` (how much work a nest needs before
  its outer loop is run on the thread pool: the task granularity); groups with a reduction also
  the reduction strategy: vectors of partial results (`reduce_vectors`) and whether elementwise
  stages are computed inside the reduction's vector loop (`fuse_reduce_producers`).

The defaults are always trial 0; the other candidates are a seeded random sample without
repetition. Each candidate is scheduled, compiled and timed in a worker (after a warm-up, the
fastest of `repeat` samples of enough calls to last >= 2 ms: noise on shared cores only adds
time), and its outputs are compared with the default schedule's on the same random inputs: a
wrong result, an exception, a crash of the worker or a hang past `timeout_s`
is a failed trial, never a failure of the tuner. Workers:

* `process` (default): a `concurrent.futures.ProcessPoolExecutor` (spawned processes); a worker
  that crashes or hangs is killed and replaced;
* `ray`: tasks on a Ray cluster (`ray.init()` of the running cluster or a local one; install
  `cinn-py[distributed]`); a crashed or timed-out task is cancelled and counted as failed;
* `inline`: in this process (no isolation; for debugging).

Candidates are measured one at a time by default (`parallel=1`): timings taken while other
candidates run on the same cores are not comparable. The best candidate per (CPU, group
structure, shape bucket) goes to the tuning database (`schedules.tactics.tuning_db`), which
`schedule="auto"` reads; it replaces an existing record only when it is faster.
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import math
import multiprocessing
import random
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cinn_py.ir import LoweredFunc, print_ir
from cinn_py.target import Target, TargetLike, host
from cinn_py.tools.runner import random_inputs

__all__ = ["Candidate", "Progress", "Trial", "TuneResult", "candidates_for", "make_runner", "measure",
           "run_all", "tune"]

WORKER_KINDS = ("process", "ray", "inline")


@dataclass(frozen=True)
class Candidate:
    """One point of the search space: `kind` "matmul" (MatmulParams fields) or "group"
    (ScheduleConfig fields)."""

    kind: str
    params: tuple[tuple[str, Any], ...]

    def as_dict(self) -> dict[str, Any]:
        return dict(self.params)

    def __str__(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.params)


@dataclass
class Trial:
    candidate: Candidate
    time_s: float | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.time_s is not None


@dataclass
class TuneResult:
    """The outcome for one group."""

    group: str
    key: str
    trials: list[Trial]
    db_path: Path | None
    saved: bool = False

    @property
    def default(self) -> Trial:
        return self.trials[0]

    @property
    def best(self) -> Trial:
        good = [t for t in self.trials if t.ok]
        return min(good, key=lambda t: t.time_s) if good else self.trials[0]  # type: ignore[arg-type,return-value]

    @property
    def failed(self) -> list[Trial]:
        return [t for t in self.trials if not t.ok]

    def summary(self) -> str:
        best, default = self.best, self.default
        if not best.ok:
            return f"{self.group}: every trial failed ({self.failed[0].error})"
        speed = f"{default.time_s / best.time_s:.2f}x the default" if default.ok else "default failed"  # type: ignore[operator]
        return (f"{self.group} [{self.key}]: best {best.time_s * 1e3:.3f} ms "  # type: ignore[operator]
                f"({speed}; {len(self.trials)} trials, {len(self.failed)} failed): {best.candidate}")


# -- the search space ---------------------------------------------------------------------------
def _matmul_space(info: Any, native_bits: int) -> list[dict[str, Any]]:
    regs = 32 if native_bits >= 512 else 16
    space = []
    for bits in sorted({native_bits, native_bits // 2} - {0}, reverse=True):
        for mr in (2, 4, 6, 8, 12, 14):
            for nv in (1, 2, 3, 4):
                if mr * nv + nv + 1 > regs:
                    continue
                for kc in (64, 128, 256, 512):
                    for pack in (True, False):
                        space.append({"mr": mr, "nv": nv, "lanes": bits // 32, "kc": kc, "pack_b": pack,
                                      "parallel": "outer"})
    return space


GROUP_KNOBS = ("vector_width_bits", "min_parallel_work", "reduce_vectors", "fuse_reduce_producers")
"""The `ScheduleConfig` fields the tuner searches for a group that is not a matmul."""


def _group_space(native_bits: int, has_reduce: bool) -> list[dict[str, Any]]:
    widths = sorted({128, 256, native_bits})
    reduce_strategies = [(v, f) for v in (0, 1, 2, 4) for f in (False, True)] if has_reduce else [(0, False)]
    return [{"vector_width_bits": w, "min_parallel_work": g, "reduce_vectors": v, "fuse_reduce_producers": f}
            for w in widths for g in (1024, 4096, 16384, 65536) for v, f in reduce_strategies]


def candidates_for(func: LoweredFunc, trials: int, seed: int = 0) -> tuple[str, list[Candidate]]:
    """(database key, candidates): the defaults first, then a seeded sample of the space."""
    from schedules.tactics import analyze_group, build_schedule_config
    from schedules.tactics.matmul import default_matmul_params, fit_params
    from schedules.tactics.tuning_db import group_key, matmul_key

    bits = host().cpu.vector_bits
    info = _matmul_info(func)
    if info is not None:
        default = default_matmul_params(info).as_dict()
        space = [fit_params(info, _params(p)).as_dict() for p in _matmul_space(info, bits)]
        kind, key = "matmul", matmul_key(info)
    else:
        group = analyze_group(func)
        # the default is what schedule="auto" does without a record: the native vector width
        cfg = dataclasses.replace(build_schedule_config(group), vector_width_bits=bits)
        default = {knob: getattr(cfg, knob) for knob in GROUP_KNOBS}
        space = _group_space(bits, group.has_reduce)
        kind, key = "group", group_key(func)
    unique = list({tuple(sorted(p.items())): p for p in space if p != default}.values())
    random.Random(seed).shuffle(unique)
    chosen = [default] + unique[:max(0, trials - 1)]
    return key, [Candidate(kind, tuple(sorted(p.items()))) for p in chosen]


def _matmul_info(func: LoweredFunc) -> Any:
    from schedules import IRSchedule
    from schedules.tactics.compute_inline import compute_inline_tactic
    from schedules.tactics.matmul import match_matmul

    sch = IRSchedule(func)
    compute_inline_tactic(sch)
    return match_matmul(sch.func)


def _params(p: dict[str, Any]) -> Any:
    from schedules.tactics.matmul import MatmulParams

    return MatmulParams(**p)


# -- one measurement (runs in a worker) -----------------------------------------------------------
def schedule_candidate(func: LoweredFunc, cand: Candidate) -> Any:
    """The IRSchedule of `func` with `cand`'s parameters."""
    from schedules.tactics import analyze_group, auto_schedule, build_schedule_config

    if cand.kind == "matmul":
        return auto_schedule(func, "x86", matmul=_params(cand.as_dict()))
    cfg = dataclasses.replace(build_schedule_config(analyze_group(func)), **cand.as_dict())
    return auto_schedule(func, "x86", config=cfg)


_REFERENCE: dict[str, list[np.ndarray]] = {}


def measure(func: LoweredFunc, cand: Candidate, default: Candidate, dims: dict[str, int], repeat: int,
            seed: int = 0) -> float:
    """Median seconds of one call of `func` scheduled with `cand`; raises when its outputs differ
    from the default schedule's (computed once per worker process)."""
    import cinn_py as cp
    from cinn_py.runtime.cache import func_fingerprint

    arrays = list(random_inputs(func, dims, seed).values())
    kernel = cp.build(schedule_candidate(func, cand), target="x86")
    ref_key = f"{func_fingerprint(func)}:{sorted(dims.items())}:{seed}"
    if ref_key not in _REFERENCE:
        ref_kernel = kernel if cand == default else cp.build(schedule_candidate(func, default), target="x86")
        _REFERENCE[ref_key] = _as_list(ref_kernel(*arrays))
    got = _as_list(kernel(*arrays))
    for g, w in zip(got, _REFERENCE[ref_key]):
        if not np.allclose(g, w, rtol=1e-3, atol=1e-3, equal_nan=True):
            raise ArithmeticError(f"wrong result: max abs error {float(np.max(np.abs(g - w)))}")
    calls = _calls_per_sample(kernel, arrays)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(calls):
            kernel(*arrays)
        times.append((time.perf_counter() - t0) / calls)
    return min(times)  # noise on shared cores only ever adds time


def _calls_per_sample(kernel: Any, arrays: list[np.ndarray], min_sample_s: float = 2e-3) -> int:
    """Warm up (caches, thread pool) and pick how many calls make one sample >= `min_sample_s`,
    so that short kernels are not timed at the clock's resolution."""
    calls = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(calls):
            kernel(*arrays)
        elapsed = time.perf_counter() - t0
        if elapsed >= min_sample_s or calls >= 1 << 16:
            return calls
        calls *= 2


def _as_list(out: Any) -> list[np.ndarray]:
    return list(out) if isinstance(out, tuple) else [out]


def _measure_job(func_text: str, cand: Candidate, default: Candidate, dims: dict[str, int], repeat: int,
                 seed: int) -> tuple[float | None, str | None]:
    """`measure` of the function given as IR text (parsed here: a pickled LoweredFunc would carry
    statement uids that collide with the ones this process hands out, and schedule handles are
    uids)."""
    from cinn_py.ir import parse_func

    try:
        return measure(parse_func(func_text), cand, default, dims, repeat, seed), None
    except Exception as err:  # a failed candidate: reported as a failed trial
        return None, f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"


# -- runners -----------------------------------------------------------------------------------------
Job = tuple[str, Candidate, Candidate, dict[str, int], int, int]


class _ProcessRunner:
    """Runs jobs in spawned worker processes; a crash or a hang kills and replaces the pool."""

    def __init__(self, parallel: int, timeout_s: float, fn: Callable[..., Any] | None = None) -> None:
        self.parallel, self.timeout_s = parallel, timeout_s
        self.fn = fn or _measure_job
        self.pool = self._new_pool()

    def _new_pool(self) -> cf.ProcessPoolExecutor:
        return cf.ProcessPoolExecutor(max_workers=self.parallel,
                                      mp_context=multiprocessing.get_context("spawn"))

    def _restart(self) -> None:
        for proc in list(getattr(self.pool, "_processes", {}).values()):
            proc.kill()  # our own workers, by handle
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.pool = self._new_pool()

    def run(self, jobs: Sequence[Job]) -> Iterable[tuple[float | None, str | None]]:
        futures = [self.pool.submit(self.fn, *job) for job in jobs]
        for fut in futures:
            try:
                yield fut.result(timeout=self.timeout_s)
            except cf.TimeoutError:
                self._restart()
                yield None, f"timed out after {self.timeout_s:g} s"
                return
            except cf.process.BrokenProcessPool:
                self._restart()
                yield None, "worker process crashed"
                return

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


class _RayRunner:
    """Runs jobs as Ray tasks (the running cluster, else a local one)."""

    def __init__(self, parallel: int, timeout_s: float, fn: Callable[..., Any] | None = None) -> None:
        try:
            import ray  # pyright: ignore[reportMissingImports] (optional: distributed extra)
        except ImportError:
            raise RuntimeError("tune: workers='ray' needs Ray (pip install 'cinn-py[distributed]')") from None
        self.ray, self.timeout_s = ray, timeout_s
        if not ray.is_initialized():
            ray.init(num_cpus=parallel, include_dashboard=False, log_to_driver=False,
                     ignore_reinit_error=True)
        self.remote = ray.remote(max_retries=0)(fn or _measure_job)

    def run(self, jobs: Sequence[Job]) -> Iterable[tuple[float | None, str | None]]:
        ray = self.ray
        for job in jobs:  # one at a time: concurrent timings on shared cores are not comparable
            ref = self.remote.remote(*job)
            try:
                yield ray.get(ref, timeout=self.timeout_s)
            except ray.exceptions.GetTimeoutError:
                ray.cancel(ref, force=True)
                yield None, f"timed out after {self.timeout_s:g} s"
            except ray.exceptions.RayError as err:
                yield None, f"ray task failed: {type(err).__name__}"

    def close(self) -> None:
        """The cluster stays up for the caller (it may be shared)."""


class _InlineRunner:
    def __init__(self, parallel: int, timeout_s: float, fn: Callable[..., Any] | None = None) -> None:
        self.fn = fn or _measure_job

    def run(self, jobs: Sequence[Job]) -> Iterable[tuple[float | None, str | None]]:
        for job in jobs:
            yield self.fn(*job)

    def close(self) -> None:
        pass


def make_runner(workers: str, parallel: int = 1, timeout_s: float = 120.0,
                fn: Callable[..., Any] | None = None) -> Any:
    """A runner of measurement jobs (`fn`, default the measurement) on `workers`."""
    if workers not in WORKER_KINDS:
        raise ValueError(f"tune: workers must be one of {WORKER_KINDS}, got {workers!r}")
    kinds = {"process": _ProcessRunner, "ray": _RayRunner, "inline": _InlineRunner}
    return kinds[workers](parallel, timeout_s, fn)


# -- progress -------------------------------------------------------------------------------------------
class Progress:
    """A one-line progress bar on stderr: `tune mm [#####.....] 5/10 best 7.1 ms, 1 failed`."""

    def __init__(self, label: str, total: int, enabled: bool, stream: Any = None) -> None:
        self.label, self.total, self.enabled = label, total, enabled
        self.stream = stream or sys.stderr
        self.done, self.failed, self.best = 0, 0, math.inf
        self.start = time.monotonic()

    def update(self, trial: Trial) -> None:
        self.done += 1
        if trial.ok:
            self.best = min(self.best, trial.time_s)  # type: ignore[type-var]
        else:
            self.failed += 1
        if not self.enabled:
            return
        width = 24
        filled = width * self.done // max(self.total, 1)
        best = f"best {self.best * 1e3:.3f} ms" if self.best < math.inf else "no result yet"
        line = (f"\rtune {self.label} [{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} "
                f"{best}, "
                f"{self.failed} failed, {time.monotonic() - self.start:.0f} s")
        self.stream.write(line)
        if self.done == self.total:
            self.stream.write("\n")
        self.stream.flush()


# -- the entry point ---------------------------------------------------------------------------------------
def _groups(func_or_program: Any) -> list[LoweredFunc]:
    from cinn_py.frontend.program import Program

    if isinstance(func_or_program, LoweredFunc):
        return [func_or_program]
    if isinstance(func_or_program, Program):
        from cinn_py.frontend.fusion import plan
        from cinn_py.lowering.group import lower_group

        return [lower_group(g) for g in plan(func_or_program).groups]  # the groups compile_program builds
    func = getattr(func_or_program, "func", None)
    if isinstance(func, LoweredFunc):
        return [func]
    raise TypeError(f"tune: expected a LoweredFunc, an IRSchedule or a NetBuilder Program, "
                    f"got {type(func_or_program).__name__}")


def _symbols(func: LoweredFunc, dims: dict[str, int] | None) -> dict[str, int]:
    names = [v.name for v in func.scalar_args]
    missing = [n for n in names if n not in (dims or {})]
    if missing:
        raise ValueError(f"tune: '{func.name}' has symbolic dims {missing}; pass their values for the "
                         f"measurements, e.g. dims={{{missing[0]!r}: 1024}}")
    return {n: int((dims or {})[n]) for n in names}


def tune(func_or_program: Any, target: TargetLike = "x86", trials: int = 16, *, workers: str = "process",
         parallel: int = 1, dims: dict[str, int] | None = None, repeat: int = 5, timeout_s: float = 120.0,
         db: str | Path | None = None, seed: int = 0, save: bool = True, progress: bool = True,
         log: Callable[[str], None] | None = None) -> list[TuneResult]:
    """Tune every group of `func_or_program` for `target` (see the module docstring).

    Args:
        trials: candidates per group, the defaults included.
        workers: "process", "ray" or "inline"; `parallel`: concurrent measurements.
        dims: values of the symbolic dims for the measurements (their bucket is what is tuned).
        db: the database file (default: `$CINN_PY_TUNING_DB`, else `<cache dir>/tuning_db.json`).
        save: write the best candidates to the database.

    Returns one `TuneResult` per group (`.best`, `.default`, `.trials`, `.summary()`).
    """
    from schedules.tactics.tuning_db import TuningDB, TuningRecord, db_path, host_cpu, now

    tgt = Target.parse(target)
    if tgt.is_gpu:
        raise ValueError(f"tune: only CPU targets are measured on this machine, got {target!r}")
    if trials < 1:
        raise ValueError(f"tune: trials must be >= 1, got {trials}")
    path = Path(db) if db is not None else db_path()
    runner = make_runner(workers, parallel, timeout_s)
    results: list[TuneResult] = []
    try:
        for func in _groups(func_or_program):
            symbols = _symbols(func, dims)
            key, cands = candidates_for(func, trials, seed)
            bar = Progress(func.name, len(cands), progress)
            text = print_ir(func, decls=True)
            jobs: list[Job] = [(text, c, cands[0], symbols, repeat, seed) for c in cands]
            tried: list[Trial] = []
            for cand, (secs, err) in zip(cands, run_all(runner, jobs)):
                tried.append(Trial(cand, secs, err))
                bar.update(tried[-1])
            result = TuneResult(func.name, key, tried, path)
            results.append(result)
            if log is not None:
                log(result.summary())
    finally:
        runner.close()
    if save and path is not None:
        store = TuningDB.load(path)
        for res in results:
            best, default = res.best, res.default
            if best.ok:
                store.put(res.key, TuningRecord(best.candidate.as_dict(), best.time_s,  # type: ignore[arg-type]
                                                default.time_s if default.ok else None, len(res.trials),
                                                {"cpu": host_cpu(), "target": tgt.name, "tuned_at": now(),
                                                 "group": res.group}))
                res.saved = True
        store.save()
    return results


def run_all(runner: Any, jobs: Sequence[Any]) -> Iterable[tuple[float | None, str | None]]:
    """Every job's outcome in order; after a crash or hang the remaining jobs are resubmitted."""
    pending = list(jobs)
    while pending:
        got = 0
        for outcome in runner.run(pending):
            got += 1
            yield outcome
        pending = pending[got:]
