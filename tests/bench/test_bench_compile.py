"""`cinn-py bench --compile` (cinn_py/tools/bench_compile.py): its figures, table and options; the
measured processes themselves run in the slow tier (a cold compile of even a tiny BERT training step
takes tens of seconds)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cinn_py.tools import bench, bench_compile
from cinn_py.tools.bench_compile import CaseTimes, Measurement


def _m(kind: str, cpu: float, backend: float | None = None, step: float = 1.0) -> Measurement:
    return Measurement(kind, step, step / 2, backend, None if backend is None else backend / 2, step + 3, cpu)


def test_compile_cpu_is_the_cpu_beyond_the_eager_process_median() -> None:
    case = CaseTimes("bert", "train", "fp32", "tiny")
    case.runs["eager"] = [_m("eager", 10.0), _m("eager", 12.0), _m("eager", 30.0)]
    case.runs["cinn_py"] = [_m("cinn_py", 40.0, 5.0), _m("cinn_py", 44.0, 7.0)]
    assert case.compile_cpu("cinn_py") == pytest.approx(42.0 - 12.0)
    assert case.median("cinn_py", "backend_s") == pytest.approx(6.0)
    assert case.median("eager", "backend_s") is None
    assert case.compile_cpu("inductor") is None
    medians = case.as_dict()["medians"]
    assert medians["cinn_py"]["compile_cpu_s"] == pytest.approx(30.0)
    assert medians["eager"]["backend_cpu_s"] is None


def test_table_has_a_row_per_kind_and_the_load() -> None:
    case = CaseTimes("bert", "train", "fp32", "base")
    case.runs["eager"] = [_m("eager", 10.0)]
    case.runs["cinn_py warm"] = [_m("cinn_py warm", 11.5, 0.25)]
    text = bench_compile.format_table([case], (1.0, 2.0, 3.0), (4.0, 5.0, 6.0))
    rows = text.splitlines()
    assert rows[0].split()[:3] == ["case", "kind", "step"]
    warm = next(r for r in rows if "cinn_py warm" in r)
    assert warm.split()[-1] == "1.5" and "0.25" in warm
    assert rows[-1] == "load average before 1.00 2.00 3.00, after 4.00 5.00 6.00"


@pytest.mark.parametrize("argv, message", [
    (["bert", "--modes", "trian"], "unknown or missing mode(s) ['trian']"),
    (["bort"], "unknown or missing model(s) ['bort']"),
    (["bert", "--variants", "eager"], "unknown or missing variant(s) ['eager']"),
    (["bert", "--rounds", "0"], "--rounds and --threads must be positive, got 0 and 2"),
])
def test_bad_options_are_one_line_errors(argv: list[str], message: str,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_compile.main(argv) == 1
    assert message in capsys.readouterr().err


def test_cli_rejects_kernel_benchmark_options(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--compile", "--peers", "numba"]) == 1
    assert "bench --compile times model zoo compiles" in capsys.readouterr().err


def test_a_failing_process_names_its_kind_and_shows_its_stderr(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match=r"the cinn_py process for nonexistent train fp32 exited with"):
        bench_compile.measure("cinn_py", "nonexistent", "train", "fp32", "tiny", 1, tmp_path / "c",
                              tmp_path / "i")


@pytest.mark.slow
def test_tiny_bert_cold_and_warm_compile(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("transformers")
    out = tmp_path / "times.json"
    assert bench_compile.main(["bert", "--size", "tiny", "--variants", "cinn_py", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    medians = data["cases"][0]["medians"]
    assert set(medians) == {"eager", "cinn_py", "cinn_py warm"}
    cold, warm = medians["cinn_py"], medians["cinn_py warm"]
    assert cold["backend_s"] > 0 and cold["compile_cpu_s"] is not None
    assert warm["backend_cpu_s"] < cold["backend_cpu_s"]  # the warm start compiles nothing
    run = data["cases"][0]["runs"]["cinn_py warm"][0]
    assert run["graphs"] >= 2 and run["kernels"] > 0 and run["errors"] == 0
    assert "cinn_py warm" in capsys.readouterr().out
