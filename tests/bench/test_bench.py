"""Smoke test of `cinn_py.tools.bench`: every workload builds with its hand and its automatic x86
schedule at a tiny shape and matches numpy; the suite, table, JSON, plot and CLI entry work. No
timing assertions."""

from __future__ import annotations

import json
import sys
from pathlib import Path

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


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_auto_schedule_matches_numpy_at_tiny_shape(name: str) -> None:
    w = WORKLOADS[name]
    kernel, report = bench.build_auto(w, w.tiny)
    arrays = w.inputs(w.tiny, np.random.default_rng(4))
    np.testing.assert_allclose(kernel(*arrays), w.numpy(*arrays), rtol=w.rtol, atol=w.atol)
    want = "x86-matmul" if w.extra.get("blas") else "x86-tuned"  # compute-bound workloads are matmuls
    assert report.strategy == want and not report.fallbacks, report


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
        assert r["auto_ms"] > 0 and r["auto_x_hand"] == pytest.approx(r["ms"] / r["auto_ms"])
        assert (r["auto_x_numpy"] == pytest.approx(r["numpy_ms"] / r["auto_ms"]) and r["auto_plan"]
                == "x86-tuned")
    assert results[1]["targets"] == {}  # targets are about full-size workloads, not tiny ones
    assert set(bench._targets(bench.WORKLOADS["rmsnorm"], results[1])) == {">=80% BW", ">=5x numpy"}
    table = bench.format_table(results)
    assert "relu" in table and "rmsnorm" in table and "BW@run" in table
    assert "auto ms" in table.splitlines()[1] and "auto x hand" in table.splitlines()[1]
    assert (len(results[0]["load_before"]) == 3 and "load average (1/5/15 min) before "
            in table.splitlines()[0])
    assert bench.main(["relu", "--tiny", "--repeat", "2", "--threads", "1"]) == 0
    assert "relu" in capsys.readouterr().out


def test_json_and_no_auto(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["rowsum", "--tiny", "--repeat", "2", "--threads", "1", "--json", "--no-auto"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert row["name"] == "rowsum" and row["ms"] > 0 and row["auto_ms"] is None and row["auto_x_hand"] is None


def test_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "bench.png"
    assert (bench.main(["relu", "transpose", "--tiny", "--repeat", "2", "--threads", "1", "--plot", str(out)])
            == 0)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 5000
    assert "transpose" in capsys.readouterr().out


def test_plot_without_matplotlib_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    from cinn_py.tools import bench_plot

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    with pytest.raises(bench_plot.PlotError, match=r"pip install 'cinn-py\[plot\]'"):
        bench_plot.require_matplotlib()


def test_unknown_names_and_bad_arguments() -> None:
    with pytest.raises(bench.BenchmarkError, match="unknown workload"):
        bench.run_benchmarks(["nope"], tiny=True)
    with pytest.raises(ValueError, match="repeat"):
        bench.run_benchmarks(["relu"], repeat=0, tiny=True)
    assert bench.main(["nope", "--tiny"]) == 1


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_numba_peer_matches_numpy_at_tiny_shape(name: str) -> None:
    numba = pytest.importorskip("numba")
    from cinn_py.tools.bench_peers import numba_kernel

    w = WORKLOADS[name]
    kernel = numba_kernel(numba, name)
    assert kernel is not None
    arrays = w.inputs(w.tiny, np.random.default_rng(5))
    want = w.numpy(*arrays)
    out = np.empty_like(want)
    kernel(*arrays, out)
    np.testing.assert_allclose(out, want, rtol=max(w.rtol, 1e-4), atol=max(w.atol, 1e-4))


def test_peers_columns_and_a_failing_peer_is_a_note(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    from cinn_py.tools import bench_peers

    pytest.importorskip("numba")
    rows = bench.run_benchmarks(["softmax"], repeat=2, tiny=True, auto=False, peers=["numba"])
    assert rows[0]["numba_ms"] > 0 and "numba ms" in bench.format_table(rows)

    def broken(numba: object, name: str) -> object:
        return lambda *args: args[-1].fill(7.0)       # a wrong result
    monkeypatch.setattr(bench_peers, "numba_kernel", broken)
    rows = bench.run_benchmarks(["relu"], repeat=2, tiny=True, auto=False, peers=["numba"])
    assert rows[0]["numba_ms"] is None and "differs from numpy" in rows[0]["peer_notes"]["numba"]
    with pytest.raises(bench.BenchmarkError, match="unknown peer"):
        bench.run_benchmarks(["relu"], tiny=True, peers=["halide"])
