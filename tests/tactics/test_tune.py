"""The tuner and its database: candidates, worker isolation (a crash or hang is a failed trial),
the database file (versioned, atomic, merged), and `schedule="auto"` reading it."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

import cinn_py as cp
from cinn_py.tools.tune import Progress, Trial, make_runner, run_all, tune
from schedules.tuning.space import Candidate
from schedules.tactics import auto_schedule
from schedules.tactics.tuning_db import TuningDB, TuningRecord, matmul_key
from tests.tactics.test_matmul import matmul_func


@pytest.fixture()
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "tuning.sqlite"
    monkeypatch.setenv("CINN_PY_TUNING_DB", str(path))
    return path


def test_tune_finds_a_schedule_at_least_as_fast_as_the_default_and_auto_uses_it(db: Path) -> None:
    fn = matmul_func(48, 64, 40, epilogue="relu")
    (res,) = tune(fn, trials=4, batch_size=2, workers="inline", repeat=3, progress=False)
    assert res.default.ok and res.best.ok and not res.failed and len(res.trials) == 4
    assert res.confirmed["best"] <= res.confirmed["default"]  # the default is in the confirmation
    record = TuningDB.load(db).get(res.key)
    assert record is not None and record.params == res.best.candidate.as_dict() and record.trials == 4
    sch = auto_schedule(fn, "x86")
    assert sch.auto_report.notes[0] == "matmul parameters: tuning database"
    best = res.best.candidate.as_dict()
    assert f"tile {best['mr']}x{best['nv'] * best['lanes']}" in sch.auto_report.notes[1]
    rng = np.random.default_rng(0)
    a, b, bias = (rng.standard_normal(s, dtype=np.float32) for s in ((48, 40), (40, 64), (64,)))
    got = cp.build(fn, target="x86", schedule="auto")(a, b, bias)
    np.testing.assert_allclose(got, np.maximum(a @ b + bias, 0), rtol=1e-4, atol=1e-4)


def test_tune_a_generic_group_and_a_program(db: Path) -> None:
    nb = cp.NetBuilder("ew")
    x = nb.create_input("float32", [64, 256], "X")
    nb.relu(nb.scale(x, 2.0, 1.0))
    results = tune(nb.build(), trials=2, workers="inline", repeat=2, progress=False)
    assert len(results) == 1 and "group_n2_r0_c|s16384_r1" in results[0].key and results[0].saved
    with pytest.raises(ValueError, match="symbolic dims"):
        tune(matmul_func(cp.sym("M"), 16, 16), trials=1, workers="inline", progress=False)


def test_auto_reads_a_hand_written_record(db: Path) -> None:
    fn = matmul_func(40, 40, 40)
    info_key = None
    from schedules.tactics.matmul import match_matmul

    info = match_matmul(fn)
    assert info is not None
    info_key = matmul_key(info)
    store = TuningDB.load(db)
    store.put(info_key, TuningRecord({"mr": 5, "nv": 1, "lanes": 8, "kc": 16, "pack_b": False,
                                      "parallel": "outer"}, 1e-5, 2e-5, 3))
    store.save()
    notes = auto_schedule(fn, "x86").auto_report.notes
    assert (notes[:2] == ["matmul parameters: tuning database",
                          "matmul matmul_NN_epi0: tile 5x8, kc 10, pack_b False"])  # kc fitted to divide K


def test_a_crashing_or_hanging_worker_is_a_failed_trial() -> None:
    runner = make_runner("process", 1, timeout_s=25, fn=_job)  # a respawn under load takes seconds
    try:
        out = list(run_all(runner, [("ok",), ("crash",), ("ok",), ("hang",), ("ok",)]))
    finally:
        runner.close()
    assert [o[0] for o in out] == [1.0, None, 1.0, None, 1.0]
    assert out[1][1] == "worker process crashed" and out[3][1].startswith("timed out")


def _job(kind: str) -> tuple[float | None, str | None]:
    from tests.tactics.tune_jobs import job

    return job(kind)


def test_progress_bar() -> None:
    out = io.StringIO()
    bar = Progress("mm", 2, True, out, budget_s=60)
    bar.update(Trial(Candidate("matmul", ()), 2e-3))
    bar.update(Trial(Candidate("matmul", ()), 1e-3), "lightgbm")
    bar.update(Trial(Candidate("matmul", ()), None, "boom"))
    bar.finish()
    assert out.getvalue().endswith("3/2 best 1.000 ms (2.00x), 1 failed, model lightgbm, 0/60 s\n")


def test_ray_workers(db: Path) -> None:
    ray = pytest.importorskip("ray")
    try:
        (res,) = tune(matmul_func(32, 32, 32), trials=2, workers="ray", repeat=2, progress=False,
                      timeout_s=120)
    finally:
        ray.shutdown()
    assert res.best.ok and not res.failed, [t.error for t in res.trials]
