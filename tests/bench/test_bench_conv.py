"""The conv rows of `cinn-py bench` (cinn_py/tools/bench_conv.py) at tiny shapes: checked against
torch (forward, dx, dw), timed against it in interleaved rounds, printed after the kernel table
with the resnet rows' geomeans, and in the JSON."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")

from cinn_py.tools import bench  # noqa: E402
from cinn_py.tools.bench_conv import CONV, conv_summary, format_conv_table, run_conv  # noqa: E402


def test_conv_rows_at_tiny_shapes() -> None:
    rows = run_conv(["conv_128x28", "conv_dw128x28"], repeat=2, threads=1, tiny=True)
    resnet, depthwise = rows
    assert resnet["kind"] == "conv" and resnet["resnet"] and not depthwise["resnet"]
    assert resnet["kernels"][0] == "conv2d_tiled" and depthwise["kernels"][0] == "conv2d"
    for row in rows:
        assert row["fwd_ms"] > 0 and row["torch_bwd_ms"] > 0 and row["max_abs_err"] < 1e-3
        assert row["x_torch_bwd"] == pytest.approx(row["torch_bwd_ms"] / row["bwd_ms"])
    summary = conv_summary(rows, tiny=True)
    assert summary["rows"] == 1 and summary["targets"] == {}
    assert summary["geomean_fwd"] == pytest.approx(resnet["x_torch_fwd"])
    table = format_conv_table(rows, tiny=True)
    assert "conv_dw128x28" in table and "x torch bwd" in table and "resnet rows (1)" in table


def test_targets_need_every_resnet_row() -> None:
    rows = [{"resnet": True, "x_torch_fwd": 1.2, "x_torch_bwd": 0.7}] * 5
    assert conv_summary(rows)["targets"] == {">=1x torch fwd": True, ">=0.8x torch bwd": False}
    assert conv_summary(rows[:4])["targets"] == {}
    assert sum(c.resnet for c in CONV.values()) == 5


def test_cli_runs_conv_rows(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["conv_1x1s2", "--tiny", "--repeat", "2", "--threads", "1", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["kind"] for r in rows] == ["conv", "conv_summary"] and rows[0]["name"] == "conv_1x1s2"
    assert bench.main(["conv_1"]) == 1
    assert "conv_64x56" in capsys.readouterr().err
