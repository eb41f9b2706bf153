"""The evolutionary search and the cost model, on synthetic timings (no compiler): the default is
measured first, nothing is measured twice or refused-and-measured, the model ranks by features,
and a model-guided search finds the optimum of a space faster than it would be enumerated."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pytest

from cinn_py.target import Target
from schedules.tuning.cost_model import MIN_SAMPLES, CostModel, available_backend, relative_cost
from schedules.tuning.search import SearchOptions, evolutionary_search
from schedules.tuning.space import (
    CandidateRefused, ScheduledCandidate, apply_candidate, prune_space, space_for,
)

X86 = Target.parse("x86")


def _matmul() -> Any:
    from cinn_py.tools.bench_workloads import WORKLOADS

    return WORKLOADS["matmul"].lower({"m": 64, "n": 64, "k": 128})


def _synthetic_time(params: dict[str, Any]) -> float:
    """A made-up cost surface with one optimum: mr=4, nv=3, kc=128, packed, parallel."""
    return (1.0 + abs(params["mr"] - 4) * 0.3 + abs(params["nv"] - 3) * 0.5 + abs(params["kc"] - 128) / 256
            + (0 if params["pack_b"] else 0.4) + (0 if params["parallel"] == "outer" else 0.7)) * 1e-3


def _run(model: CostModel, trials: int, seed: int = 0) -> tuple[Any, list[Any]]:
    func = _matmul()
    space = space_for(func, X86)
    measured: list[Any] = []

    def schedule(cand: Any) -> ScheduledCandidate:
        if cand.as_dict()["mr"] == 14:  # a refusal the search must absorb
            raise CandidateRefused(f"tuning candidate {cand}: refused: test")
        return apply_candidate(func, X86, cand, space=space)

    def measure(batch: Sequence[ScheduledCandidate]) -> list[tuple[float | None, str | None]]:
        measured.extend(batch)
        return [(_synthetic_time(s.candidate.as_dict()), None) for s in batch]

    outcome = evolutionary_search(space, schedule, measure, model,
                                  SearchOptions(trials=trials, batch_size=6, seed=seed))
    return outcome, measured


def test_the_search_measures_the_default_first_and_nothing_twice() -> None:
    outcome, measured = _run(CostModel("none"), trials=20)
    assert outcome.default.candidate == space_for(_matmul(), X86).default
    assert len(outcome.measured) == 20 and outcome.stopped == "trials" and outcome.model == "random"
    assert len({s.fingerprint for s in measured}) == len(measured)  # one measurement per schedule
    assert all(m.candidate.as_dict()["mr"] != 14 for m in outcome.measured)  # refused: never measured
    assert outcome.best().time_s == min(m.time_s for m in outcome.measured)
    assert all(len(m.features) == len(outcome.default.features) for m in outcome.measured)


@pytest.mark.slow
@pytest.mark.skipif(available_backend() is None, reason="no model library (pip install 'cinn-py[tune]')")
def test_the_model_guided_search_beats_random_sampling() -> None:
    guided = [_run(CostModel("auto", seed), trials=30, seed=seed)[0] for seed in range(3)]
    unguided = [_run(CostModel("none"), trials=30, seed=seed)[0] for seed in range(3)]
    assert all(o.model == available_backend() for o in guided)
    assert any(m.predicted is not None for o in guided for m in o.measured)
    best_guided = sorted(o.best().time_s for o in guided)[1]
    best_random = sorted(o.best().time_s for o in unguided)[1]
    assert best_guided <= best_random


def test_the_cost_model_learns_a_ranking() -> None:
    model = CostModel("auto")
    if model.backend is None:
        pytest.skip("no model library")
    rng = random.Random(0)
    xs = [[rng.random() * 10, rng.random()] for _ in range(60)]
    ys = [x[0] * 0.5 + x[1] * 0.1 for x in xs]
    assert not CostModel("auto").fit(xs[:MIN_SAMPLES - 1], ys[:MIN_SAMPLES - 1])  # too few samples
    assert model.fit(xs, ys) and model.trained
    pred = model.predict([[1.0, 0.5], [9.0, 0.5]])
    assert pred is not None and pred[0] < pred[1]
    assert CostModel("none").predict(xs) is None
    assert relative_cost(1.0, 2.0) == -1.0 and relative_cost(1.0, None) == 0.0
    with pytest.raises(ValueError, match="backend must be"):
        CostModel("xgboost")


def test_pruning_fixes_the_knobs_that_change_nothing() -> None:
    from cinn_py.tools.bench_workloads import WORKLOADS

    func = WORKLOADS["rowsum"].lower({"rows": 64, "cols": 256})
    space = space_for(func, X86)
    pruned, dropped = prune_space(space, lambda c: apply_candidate(func, X86, c, space=space))
    assert "streaming_store_bytes" in dropped  # a 64-float output never reaches the streaming threshold
    assert "reduce_vectors" in {k.name for k in pruned.knobs} and pruned.size < space.size
    assert pruned.default == space.default
