"""Smoke test of `cinn_py.tools.bench`: every workload builds with its x86 schedule at a tiny shape and
matches numpy; the suite, table and CLI entry work. No timing assertions."""

from __future__ import annotations

import numpy as np
import pytest

from cinn_py.tools import bench
from cinn_py.tools.bench_workloads import WORKLOADS


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_workload_matches_numpy_at_tiny_shape(name: str) -> None:
    w = WORKLOADS[name]
    kernel = bench.build_workload(w, w.tiny)
    arrays = w.inputs(w.tiny, np.random.default_rng(3))
    want = w.numpy(*arrays)
    got = kernel(*arrays)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=w.rtol, atol=w.atol)


def test_schedules_are_actually_parallel_and_vectorised() -> None:
    from schedules import IRSchedule

    for w in WORKLOADS.values():
        sch = IRSchedule(w.lower(w.tiny))
        w.schedule(sch, w.tiny)
        text = str(sch)
        assert "parallel for" in text, w.name
        assert "vectorize[" in text, w.name


def test_check_result_fails_loudly() -> None:
    good = np.ones((2, 3), np.float32)
    bad = good.copy()
    bad[1, 2] = 5.0
    with pytest.raises(bench.BenchmarkError, match=r"max abs error 4 at \(1, 2\)"):
        bench.check_result("w", bad, good, 1e-5, 1e-5)
    with pytest.raises(bench.BenchmarkError, match="shape"):
        bench.check_result("w", good[0], good, 1e-5, 1e-5)


def test_suite_table_and_cli_on_tiny_shapes(capsys: pytest.CaptureFixture[str]) -> None:
    results = bench.run_benchmarks(["relu", "rmsnorm"], repeat=2, threads=1, tiny=True)
    assert [r["name"] for r in results] == ["relu", "rmsnorm"]
    for r in results:
        assert r["ms"] > 0 and r["gbs"] > 0 and r["numpy_ms"] > 0 and r["bandwidth_gbs"] > 0
        assert r["local_bandwidth_gbs"] > 0
        assert r["pct_bw"] == pytest.approx(100 * r["gbs"] / r["local_bandwidth_gbs"])
        assert r["bytes"] > 0 and r["threads"] == 1
    assert set(results[1]["targets"]) == {">=80% BW", ">=5x numpy"}
    table = bench.format_table(results)
    assert "relu" in table and "rmsnorm" in table and "BW@run" in table
    assert bench.main(["relu", "--tiny", "--repeat", "2", "--threads", "1"]) == 0
    assert "relu" in capsys.readouterr().out


def test_unknown_names_and_bad_arguments() -> None:
    with pytest.raises(bench.BenchmarkError, match="unknown workload"):
        bench.run_benchmarks(["nope"], tiny=True)
    with pytest.raises(ValueError, match="repeat"):
        bench.run_benchmarks(["relu"], repeat=0, tiny=True)
    assert bench.main(["nope", "--tiny"]) == 1
