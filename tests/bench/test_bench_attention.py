"""The attention rows of `cinn-py bench` (cinn_py/tools/bench_attention.py) at tiny shapes: checked
against torch's SDPA, timed against it, printed after the kernel table and in the JSON."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")

from cinn_py.tools import bench  # noqa: E402
from cinn_py.tools.bench_attention import ATTENTION, format_attention_table, run_attention  # noqa: E402


def test_attention_rows_at_tiny_shapes() -> None:
    rows = run_attention(["attention_causal_2048"], repeat=2, threads=1, tiny=True)
    (row,) = rows
    assert row["kind"] == "attention" and row["causal"] and row["targets"] == {}
    assert row["fwd_ms"] > 0 and row["torch_fwd_bwd_ms"] > 0
    assert row["x_torch"] == pytest.approx(row["torch_fwd_bwd_ms"] / row["fwd_bwd_ms"])
    assert row["max_abs_err"] < 1e-3 and len(row["load_before"]) == 3
    table = format_attention_table(rows)
    assert "attention_causal_2048" in table and "x torch" in table and "load average before" in table


def test_cli_runs_attention_and_kernel_rows_together(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["relu", "attention_128", "--tiny", "--repeat", "2", "--threads", "1", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == ["relu", "attention_128"]
    assert set(ATTENTION) == {"attention_128", "attention_2048", "attention_causal_2048"}
    assert bench.main(["attention_1"]) == 1
    assert "attention_128" in capsys.readouterr().err
