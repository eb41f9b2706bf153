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


def _special(x: Any) -> Any:
    y = torch.tanh(x) * 0.999
    mantissa, exponent = torch.frexp(x * 100.0)
    edges = torch.tensor([1.0, -1.0, 1.5, 0.0]) + x[0, :4].detach() * 0
    return (torch.erfinv(y), torch.erfinv(edges), mantissa, exponent.float(), torch.angle(x),
            torch.floor_divide(x.detach() * 7.0, 2.0),
            torch.polygamma(1, torch.sigmoid(x) * 0.8 - 1.9),  # reflected (gradient: order 2)
            torch.polygamma(1, x.abs() * 3.0 + 0.6), torch.digamma(x.abs() + 0.5),
            torch.polygamma(3, torch.sigmoid(x) * 0.8 - 5.9), torch.polygamma(4, x.abs() * 3.0 + 0.6))


def _assembly(a: Any, b: Any) -> Any:
    flat = a.reshape(-1)
    return (torch.block_diag(a, b, flat[:3]), torch.ops.aten._chunk_cat([a.detach(), b.t().detach()], 1, 3),
            torch.as_strided(a, (3, 2), (1, 3), 2), torch.as_strided_scatter(a, b[:2, :2], (2, 2), (4, 1), 1))


def _cdist(x1: Any, x2: Any) -> Any:
    return tuple(torch.cdist(x1, x2, p=p) for p in (0.0, 0.5, 1.0, 1.5, 2.0, float("inf")))


def _masked_index(x: Any) -> Any:
    index = torch.tensor([[-1, 0, 2, 5], [1, 1, 3, 9]])  # out-of-range lanes are masked off
    mask = (index >= 0) & (index < 4)
    return torch.ops.aten._unsafe_masked_index(x, mask, [None, index], -2.0)


CASES: dict[str, tuple[Callable[..., Any], tuple[Any, ...], str | tuple[str, ...]]] = {
    "special": (_special, (_gen(3, 5),), ("aten.erfinv.default", "aten.frexp.Tensor", "aten.angle.default",
                                         "aten.floor_divide.default", "aten.polygamma.default")),
    "assembly": (_assembly, (_gen(3, 4), _gen(2, 3, seed=1)),
                 ("aten.block_diag.default", "aten._chunk_cat.default", "aten.as_strided.default",
                  "aten.as_strided_scatter.default")),
    "cdist": (_cdist, (_gen(2, 3, 4), _gen(2, 5, 4, seed=1)),
              ("aten._cdist_forward.default", "aten._cdist_backward.default")),
    "masked_index": (_masked_index, (_gen(3, 4),),
                     ("aten._unsafe_masked_index.default",
                      "aten._unsafe_masked_index_put_accumulate.default")),
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


def _shaping(x: Any, w: Any) -> Any:
    start, end = x[0, 0].detach(), x[1, 1].detach() + 3.0
    target, weight = torch.sigmoid(w), w.detach().abs()
    return (torch.linspace(start, end, 7), torch.logspace(start, end, 5, base=2.0),
            torch.narrow_copy(x, 1, -3, 2), torch.renorm(x, 2.0, 0, 1.5),
            torch.renorm(x, float("inf"), 1, 0.5),
            torch.sgn(x), F.binary_cross_entropy_with_logits(x, target, pos_weight=weight[0]),
            F.binary_cross_entropy_with_logits(x, target, weight=weight, reduction="sum"))


def _pooling(x: Any, w: Any) -> Any:
    return (F.conv1d(x, w, stride=2, padding=1, dilation=2), F.conv1d(x, w[:2, :2], groups=2),
            F.avg_pool2d(x.unsqueeze(0), 2, stride=1, padding=1, divisor_override=3))


OTHER_CASES: dict[str, tuple[Callable[..., Any], tuple[Any, ...], tuple[str, ...]]] = {
    "shaping": (_shaping, (_gen(3, 5), _gen(3, 5, seed=1)),
                ("aten.linspace.Tensor_Tensor", "aten.logspace.Tensor_Tensor", "aten.narrow_copy.default",
                 "aten.renorm.default", "aten.binary_cross_entropy_with_logits.default")),
    "conv1d_and_pool_divisor": (_pooling, (_gen(2, 4, 9), _gen(3, 4, 3, seed=1)),
                                ("aten.convolution.default", "aten.convolution_backward.default",
                                 "aten.avg_pool2d.default", "aten.avg_pool2d_backward.default")),
}
CASES.update(OTHER_CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_converter_matches_eager(name: str) -> None:
    fn, inputs, aten_ops = CASES[name]
    check_converts(fn, *inputs)
    compiled = sum((r.compiled for r in ct.reports()), Counter())
    missing = {aten_ops} if isinstance(aten_ops, str) else set(aten_ops)
    assert not missing - set(compiled), compiled


def test_nanmedian_skips_nans_and_keeps_torch_indices() -> None:
    """The lower median of the non-NaN values, its index the first among ties; an all-NaN row
    gives NaN (its index is any NaN's: torch's is an artifact of its selection algorithm)."""
    nan = float("nan")
    x = torch.tensor([[nan, nan, nan, nan], [1.0, nan, 0.0, 3.0], [2.0, 2.0, 1.0, 5.0]])

    def fn(v: Any) -> Any:
        values, indices = torch.nanmedian(v * 1.0, dim=1)
        return values, indices[1:], torch.nanmedian(v[1:] * 2.0)

    check_converts(fn, x, grad=False)
    compiled = sum((r.compiled for r in ct.reports()), Counter())
    assert {"aten.nanmedian.dim", "aten.nanmedian.default"} <= set(compiled), compiled
