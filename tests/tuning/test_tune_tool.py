"""The tuner as a tool: every group of a torch model, the progress plot, the budget, argument
errors."""

from __future__ import annotations

from pathlib import Path

import pytest

import cinn_py as cp
from cinn_py.tools.tune import Trial, TuneResult, groups_of, tune
from cinn_py.tools.tune_plot import plot_progress, progress_series
from schedules.tuning.space import Candidate


@pytest.mark.slow
def test_a_torch_model_is_tuned_group_by_group(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.LayerNorm(64))
    x = torch.randn(16, 32)
    groups = groups_of(model, [x])
    assert len(groups) >= 2  # the matmul and the layernorm at least
    results = tune(model, example_inputs=[x], trials=2, batch_size=2, workers="inline", repeat=1,
                   db=tmp_path / "db.sqlite", progress=False, confirm=0)
    assert len(results) == len(groups)  # (graph names count up between captures)
    assert all(r.best.ok and r.saved for r in results)
    with pytest.raises(TypeError, match="torch model with example_inputs"):
        groups_of(model)


def test_the_progress_plot_draws_best_time_against_trials(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    cand = Candidate("group", ())
    trials = [Trial(cand, 4.0), Trial(cand, None, "boom"), Trial(cand, 2.0), Trial(cand, 3.0)]
    result = TuneResult("g", "k", trials, None)
    assert result.best_so_far() == [4.0, 4.0, 2.0, 2.0]
    assert progress_series(result) == [1.0, 1.0, 0.5, 0.5]
    out = plot_progress([("g", result)], tmp_path / "p.png")
    assert out.read_bytes().startswith(b"\x89PNG")


def test_a_budget_stops_the_search(tmp_path: Path) -> None:
    nb = cp.NetBuilder("ew")
    nb.relu(nb.scale(nb.create_input("float32", [64, 256], "X"), 2.0, 1.0))
    (res,) = tune(nb.build(), trials=64, batch_size=2, budget_s=0.01, workers="inline", repeat=1,
                  db=tmp_path / "db.sqlite", progress=False, model="none")
    assert res.stopped == "budget" and len(res.trials) == 2  # the first batch always runs


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"trials": 0}, "trials must be >= 1"), ({"budget_s": 0}, "budget_s must be > 0"),
    ({"workers": "threads"}, "workers must be one of"), ({"model": "xgboost"}, "backend must be"),
    ({"target": "cuda"}, "only CPU targets"),
])
def test_bad_arguments_are_named(tmp_path: Path, kwargs: dict[str, object], match: str) -> None:
    nb = cp.NetBuilder("ew")
    nb.relu(nb.create_input("float32", [8, 16], "X"))
    with pytest.raises(ValueError, match=match):
        tune(nb.build(), workers=kwargs.pop("workers", "inline"), db=tmp_path / "db.sqlite",  # type: ignore[arg-type]
             progress=False, **kwargs)  # type: ignore[arg-type]
