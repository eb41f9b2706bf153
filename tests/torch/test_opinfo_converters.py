"""Converters added for the fallbacks of the full OpInfo run (cinn_py/torch/conformance.py):
each op compiled (strict) vs eager, values and input gradients, nothing left to eager, and the
ATen op the case is about among the compiled ones."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import cinn_py.torch as ct  # noqa: E402
from tests.torch.test_edge_cases import check_converts  # noqa: E402

F = torch.nn.functional


def _gen(*shape: int, seed: int = 0) -> Any:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _bn_train(x: Any, w: Any, b: Any) -> Any:
    """The op OpInfo's `_batch_norm_with_update` calls (its gradient: `batch_norm_backward`)."""
    mean, var = torch.zeros(3), torch.ones(3)
    out, save_mean, save_invstd, _ = torch.ops.aten._batch_norm_with_update(x, w, b, mean, var, 0.3, 1e-5)
    return out, save_mean, save_invstd, mean * 1.0, var * 1.0  # with the updated running statistics


CASES: dict[str, tuple[Callable[..., Any], tuple[Any, ...], str]] = {
    "batch_norm_with_update": (_bn_train, (_gen(4, 3, 5), _gen(3, seed=1), _gen(3, seed=2)),
                               "aten._batch_norm_with_update_functional.default"),
    # a None bias would fail: torch's fake impl of _batch_norm_no_update raises on it
    "batch_norm_no_update": (lambda x, w, b: torch.ops.aten._batch_norm_no_update(
                                 x, w, b, torch.zeros(3) + 0.5, torch.ones(3) * 2.0, 0.1, 1e-5)[0],
                             (_gen(4, 3, 5), _gen(3, seed=1), _gen(3, seed=2)),
                             "aten._batch_norm_no_update.default"),
    "batch_norm_backward": (_bn_train, (_gen(2, 3, 2, 2), _gen(3, seed=1), _gen(3, seed=2)),
                            "aten.batch_norm_backward.default"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_converter_matches_eager(name: str) -> None:
    fn, inputs, aten_op = CASES[name]
    check_converts(fn, *inputs)
    compiled = sum((r.compiled for r in ct.reports()), Counter())
    assert aten_op in compiled, compiled
