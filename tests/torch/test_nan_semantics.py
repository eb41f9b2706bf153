"""NaN in torch graphs follows torch (issue 23 item 2): relu, clamp (min/max), hardtanh, maximum,
minimum, amax and amin of a NaN are NaN, as in eager; NetBuilder keeps CINN's `a > b ? a : b`
rule (docs/semantics.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import cinn_py.torch as ct  # noqa: E402
from cinn_py.frontend import NetBuilder  # noqa: E402
from cinn_py.pipeline import compile_program  # noqa: E402
from cinn_py.torch.backend import cinn_py_backend  # noqa: E402

NAN = float("nan")
X = torch.tensor([[NAN, 1.0, -2.0, 3.0, float("inf")], [0.5, -1.0, 2.0, NAN, -0.0],
                  [1.0, 2.0, 3.0, 4.0, -5.0]])
Y = torch.tensor([[1.0, NAN, 5.0, 0.0, NAN], [NAN, NAN, 1.0, 1.0, 0.0], [0.0, 9.0, 0.0, 9.0, 1.0]])

CASES: dict[str, Callable[[Any, Any], Any]] = {
    "relu": lambda a, b: torch.relu(a) + b * 0,
    "clamp": lambda a, b: a.clamp(-1, 1),
    "clamp_min": lambda a, b: a.clamp(min=0),
    "clamp_max": lambda a, b: a.clamp(max=0.5),
    "hardtanh": lambda a, b: torch.nn.functional.hardtanh(a),
    "maximum": torch.maximum,
    "minimum": torch.minimum,
    "amax": lambda a, b: a.amax(1),
    "amin": lambda a, b: a.amin(0, keepdim=True),
    "amax_all": lambda a, b: (a + b).amax(),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_nan_propagates_as_in_eager(case: str) -> None:
    fn = CASES[case]
    torch._dynamo.reset()
    ct.reset_reports()
    got = torch.compile(fn, backend=cinn_py_backend, dynamic=False, options={"strict": True})(X, Y)
    expected = fn(X, Y)
    torch.testing.assert_close(got, expected, equal_nan=True)
    report = ct.last_report()
    assert report is not None and not report.fallback, str(report)


def test_net_builder_keeps_cinn_rule() -> None:
    nb = NetBuilder("relu_rule")
    x = nb.create_input("float32", [3], "v")
    program = nb.build([nb.relu(x)])
    out = compile_program(program, "x86")(np.array([NAN, -1.0, 2.0], np.float32))
    np.testing.assert_array_equal(out, [0.0, 0.0, 2.0])  # cinn_max(NaN, 0) = 0
