"""The backend's reports: an internal error of a partition is never silent (recorded with its
traceback apart from the ops without a converter, logged at WARNING, raised in strict mode) and
the report store is bounded."""

from __future__ import annotations

import logging
from collections import deque
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import cinn_py.torch as ct  # noqa: E402
from cinn_py.torch import backend  # noqa: E402
from cinn_py.torch.backend import cinn_py_backend  # noqa: E402
from cinn_py.torch.converters import CONVERTERS, Rule  # noqa: E402


def _broken_sin(e: Any, x: Any) -> Any:
    raise RuntimeError("converter bug under test")


def _block(x: Any) -> Any:
    return torch.erfinv(torch.sin(x) * 0.5) + 1.0  # sin: the broken converter; erfinv: no converter


@pytest.fixture()
def broken_sin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(CONVERTERS, "aten.sin.default", Rule(_broken_sin))
    monkeypatch.delitem(CONVERTERS, "aten.erfinv.default")  # an op without a converter
    torch._dynamo.reset()


def test_internal_error_is_recorded_with_traceback_apart_from_fallback(
        broken_sin: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.delenv("CINN_PY_TORCH_STRICT")  # the fallback itself is under test
    x = torch.randn(4, 5)
    ct.reset_reports()
    with caplog.at_level(logging.WARNING, logger="cinn_py.torch"):
        out = torch.compile(_block, backend=cinn_py_backend, dynamic=False)(x)
    torch.testing.assert_close(out, _block(x))  # the failed partition ran eagerly
    report = ct.last_report()
    assert report is not None
    assert (report.fallback == {"aten.erfinv.default": 1} and report.reasons["aten.erfinv.default"]
            == "no converter")
    (error,) = report.errors
    assert error.error == "RuntimeError: converter bug under test"
    assert "_broken_sin" in error.traceback and error.traceback.rstrip().endswith("converter bug under test")
    assert report.failed["aten.sin.default"] == 1 and "aten.sin.default" not in report.fallback
    assert "error: " in str(report) and "converter bug under test" in str(report)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings and "converter bug under test" in warnings[0].getMessage()


@pytest.mark.parametrize("how", ["env", "option"])
def test_strict_mode_raises_the_internal_error(broken_sin: None, monkeypatch: pytest.MonkeyPatch,
                                               how: str) -> None:
    if how == "option":
        monkeypatch.delenv("CINN_PY_TORCH_STRICT")
    options = {"strict": True} if how == "option" else None
    ct.reset_reports()
    with pytest.raises(Exception, match="converter bug under test"):
        torch.compile(_block, backend=cinn_py_backend, dynamic=False, options=options)(torch.randn(3))
    report = ct.last_report()
    assert report is not None and len(report.errors) == 1, "the raised error is in the report too"


def test_strict_option_false_overrides_the_environment(broken_sin: None) -> None:
    out = torch.compile(_block, backend=cinn_py_backend, dynamic=False,
                        options={"strict": False})(torch.ones(2))
    torch.testing.assert_close(out, _block(torch.ones(2)))


def test_report_store_keeps_the_last_graphs(monkeypatch: pytest.MonkeyPatch) -> None:
    assert backend.REPORTS_KEPT == 256 and backend._REPORTS.maxlen == backend.REPORTS_KEPT
    monkeypatch.setattr(backend, "_REPORTS", deque(maxlen=2))
    for n in (2, 3, 4):
        torch._dynamo.reset()
        torch.compile(lambda x: x * 2.0, backend=cinn_py_backend, dynamic=False)(torch.ones(n))
    kept = ct.reports()
    assert len(kept) == 2 and ct.last_report() is kept[-1]
    ct.reset_reports()
    assert ct.reports() == [] and ct.last_report() is None
