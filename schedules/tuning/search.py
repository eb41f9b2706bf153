"""Evolutionary search over a group's `SearchSpace`, guided by the learned cost model.

    batch 0:  the default (what schedule="auto" does untuned) + random candidates
    batch k:  a pool of `pool_factor * batch_size` new schedules: mutations (1-2 knobs) of the
              fastest measured candidates (the elites), crossovers of two elites and random
              samples; each is scheduled (a refused candidate is dropped: never measured) and
              deduplicated by its scheduled IR; the cost model ranks the pool by its loop-nest
              features and the best `batch_size * (1 - explore)` are measured with
              `explore` of the batch drawn at random from the rest (the model is refitted after
              every batch, on this group's measurements plus `history`: the database's
              measurements of other groups and shapes on this CPU)

until `trials` candidates were measured, the time budget is spent, or the space has no
unmeasured schedule left. Measuring is the caller's (`measure` gets one batch of scheduled
candidates and returns (seconds or None, error or None) for each), so this module needs no
compiler: `cinn_py.tools.tune` compiles and times in worker processes or Ray tasks.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from schedules.tuning.cost_model import CostModel, relative_cost
from schedules.tuning.features import loop_features
from schedules.tuning.space import Candidate, CandidateRefused, ScheduledCandidate, SearchSpace

__all__ = ["Measured", "SearchOptions", "SearchOutcome", "evolutionary_search"]


@dataclass(frozen=True)
class Measured:
    """One measured candidate (`time_s` None: it failed, `error` says why)."""

    candidate: Candidate
    fingerprint: str
    features: tuple[float, ...]
    time_s: float | None
    error: str | None
    batch: int
    predicted: float | None = None
    """The model's predicted cost when it chose this candidate (None: random or untrained)."""

    @property
    def ok(self) -> bool:
        return self.time_s is not None


@dataclass(frozen=True)
class SearchOptions:
    trials: int = 32
    batch_size: int = 8
    pool_factor: int = 3
    elites: int = 4
    explore: float = 0.25
    seed: int = 0
    budget_s: float | None = None
    """Wall seconds for the whole search: a batch is cut to what the time per trial so far says
    still fits."""

    def __post_init__(self) -> None:
        if self.trials < 1 or self.batch_size < 1 or self.pool_factor < 1 or self.elites < 1:
            raise ValueError(f"tune: trials, batch_size, pool_factor and elites must be >= 1, got {self}")
        if not 0.0 <= self.explore <= 1.0:
            raise ValueError(f"tune: explore must be in [0, 1], got {self.explore}")


@dataclass
class SearchOutcome:
    measured: list[Measured] = field(default_factory=list)
    refused: int = 0
    duplicates: int = 0
    batches: int = 0
    model: str = "random"
    """"lightgbm" / "sklearn" once the model ranked a batch, else "random"."""
    stopped: str = ""
    """Why the search ended: "trials", "budget" or "space exhausted"."""

    @property
    def default(self) -> Measured:
        return self.measured[0]

    def best(self) -> Measured:
        good = [m for m in self.measured if m.ok]
        return min(good, key=lambda m: m.time_s or 0.0) if good else self.measured[0]


ScheduleFn = Callable[[Candidate], ScheduledCandidate]
MeasureFn = Callable[[Sequence[ScheduledCandidate]], Sequence[tuple[float | None, str | None]]]
TrialFn = Callable[[Measured], None]


def evolutionary_search(space: SearchSpace, schedule: ScheduleFn, measure: MeasureFn, model: CostModel,
                        options: SearchOptions, history: Sequence[tuple[Sequence[float], float]] = (),
                        on_trial: TrialFn | None = None) -> SearchOutcome:
    """Search `space` (see the module docstring); the first measured candidate is the default."""
    rng = random.Random(options.seed)
    out = SearchOutcome()
    start = time.monotonic()
    seen: set[str] = set()
    tried: set[Candidate] = set()
    default = schedule(space.default)  # the default always schedules: it is what auto does
    seen.add(default.fingerprint)
    tried.add(space.default)
    first_size = min(options.batch_size, options.trials)
    first = [default] + _fresh(space, schedule, rng, seen, tried, out, first_size - 1, lambda: None)
    _measure_batch(first, [None] * len(first), measure, out, on_trial)
    while True:
        left = options.trials - len(out.measured)
        if left <= 0:
            out.stopped = "trials"
            break
        size = min(left, options.batch_size)
        if options.budget_s is not None:
            spent = time.monotonic() - start
            per_trial = spent / max(1, len(out.measured))  # scheduling + measuring one candidate
            size = min(size, int((options.budget_s - spent) / per_trial))  # the batch must fit the budget
            if size < 1:
                out.stopped = "budget"
                break
        pool = _fresh(space, schedule, rng, seen, tried, out, options.pool_factor * options.batch_size,
                      lambda: _offspring(space, out, rng, options))
        if not pool:
            out.stopped = "space exhausted"
            break
        batch, predicted = _choose(pool, model, out, history, rng, size, options)
        _measure_batch(batch, predicted, measure, out, on_trial)
    return out


def _offspring(space: SearchSpace, out: SearchOutcome, rng: random.Random,
               options: SearchOptions) -> Candidate:
    """A new candidate: a mutation of an elite (half the time), a crossover of two elites, or a
    random sample."""
    elites = sorted((m for m in out.measured if m.ok), key=lambda m: m.time_s or 0.0)[:options.elites]
    roll = rng.random()
    if elites and roll < 0.5:
        return space.mutate(rng.choice(elites).candidate, rng, rng.choice((1, 1, 2)))
    if len(elites) >= 2 and roll < 0.7:
        a, b = rng.sample(elites, 2)
        return space.mutate(space.crossover(a.candidate, b.candidate, rng), rng, 1) if rng.random() < 0.3 \
            else space.crossover(a.candidate, b.candidate, rng)
    return space.sample(rng)


def _fresh(space: SearchSpace, schedule: ScheduleFn, rng: random.Random, seen: set[str],
           tried: set[Candidate], out: SearchOutcome, count: int,
           propose: Callable[[], Candidate | None]) -> list[ScheduledCandidate]:
    """Up to `count` scheduled candidates whose IR is new (`propose`, else random samples)."""
    found: list[ScheduledCandidate] = []
    attempts = 0
    while len(found) < count and attempts < 3 * count + 10:  # a small space: few new schedules
        attempts += 1
        cand = propose() or space.sample(rng)
        if cand in tried:
            continue
        tried.add(cand)
        try:
            scheduled = schedule(cand)
        except CandidateRefused:
            out.refused += 1
            continue
        if scheduled.fingerprint in seen:
            out.duplicates += 1
            continue
        seen.add(scheduled.fingerprint)
        found.append(scheduled)
    return found


def _choose(pool: list[ScheduledCandidate], model: CostModel, out: SearchOutcome,
            history: Sequence[tuple[Sequence[float], float]], rng: random.Random, size: int,
            options: SearchOptions) -> tuple[list[ScheduledCandidate], list[float | None]]:
    """The batch to measure: the model's best-ranked pool members plus random exploration."""
    default_s = out.default.time_s
    data = [(list(f), c) for f, c in history]
    data += [(list(m.features), relative_cost(m.time_s, default_s)) for m in out.measured
             if m.time_s is not None]
    model.fit([f for f, _ in data], [c for _, c in data])
    scores = model.predict([loop_features(s.schedule.func) for s in pool])
    if scores is None:
        picked = rng.sample(range(len(pool)), min(size, len(pool)))
        return [pool[i] for i in picked], [None] * len(picked)
    out.model = model.backend or "random"
    ranked = sorted(range(len(pool)), key=lambda i: scores[i])
    greedy = ranked[:max(1, round(size * (1 - options.explore)))]
    rest = [i for i in ranked if i not in greedy]
    picked = greedy + rng.sample(rest, min(size - len(greedy), len(rest)))
    return [pool[i] for i in picked], [scores[i] if i in greedy else None for i in picked]


def _measure_batch(batch: Sequence[ScheduledCandidate], predicted: Sequence[float | None], measure: MeasureFn,
                   out: SearchOutcome, on_trial: TrialFn | None) -> None:
    results = measure(batch)
    out.batches += 1
    for sched, pred, (secs, err) in zip(batch, predicted, results):
        feats = tuple(loop_features(sched.schedule.func))
        record = Measured(sched.candidate, sched.fingerprint, feats, secs, err, out.batches - 1, pred)
        out.measured.append(record)
        if on_trial is not None:
            on_trial(record)
