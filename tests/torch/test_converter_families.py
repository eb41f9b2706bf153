"""The converters of issue 28's families (math, logical, stats, shaping, linalg, losses, padding),
one compiled graph per family: every output and every input gradient vs eager, nothing eager,
and the ATen ops each family is about among the compiled ones."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import cinn_py.torch as ct  # noqa: E402
from tests.torch.test_edge_cases import check_converts  # noqa: E402

F = torch.nn.functional


def _compiled_ops() -> Counter[str]:
    return sum((r.compiled for r in ct.reports()), Counter())


def _gen(*shape: int, seed: int = 0, low: float = -2.0, high: float = 2.0) -> Any:
    g = torch.Generator().manual_seed(seed)
    return torch.rand(*shape, generator=g) * (high - low) + low


def _unary(x: Any) -> tuple[Any, ...]:
    half, pos = x * 0.45, x.abs() + 0.2
    return (torch.acos(half), torch.asin(half), torch.atan(x), torch.atanh(half), torch.acosh(pos + 1.0),
            torch.asinh(x), torch.cosh(x), torch.sinh(x), torch.tan(half), torch.log2(pos), torch.log10(pos),
            torch.trunc(x * 3), torch.fix(x * 3), torch.sign(x), torch.round(x * 3),
            torch.round(x * 3, decimals=1),
            torch.frac(x * 3), torch.exp2(x), torch.expm1(x), torch.expm1(x * 1e-6), torch.erfc(x),
            torch.square(x),
            torch.deg2rad(x), torch.rad2deg(x), torch.logit(torch.sigmoid(x)),
            torch.logit(torch.sigmoid(x), 0.2),
            F.softplus(x, beta=2.0, threshold=1.0), F.elu(x), F.celu(x, 0.5), F.selu(x), F.leaky_relu(x, 0.1),
            F.glu(x, dim=1), F.logsigmoid(x), torch.isposinf(x / (x - x[0, 0])), torch.isneginf(x / 0.0),
            torch.nan_to_num(torch.log(x)),
            torch.round(torch.tensor([0.5, 1.5, 2.5, -0.5, -2.5]) + x[0, 0] * 0))


def _binary(a: Any, b: Any) -> tuple[Any, ...]:
    return (torch.atan2(a, b), torch.hypot(a, b), torch.fmod(a, b), torch.remainder(a, b),
            torch.copysign(a, b),
            torch.logaddexp(a, b), torch.logaddexp2(a, b), torch.xlogy(a, b.abs()), torch.lerp(a, b, 0.3),
            torch.lerp(a, b, torch.sigmoid(b)), torch.addcmul(a, a, b, value=0.5),
            torch.addcdiv(a, a, b, value=2),
            torch.div(a, b, rounding_mode="floor"), torch.div(a, b, rounding_mode="trunc"), torch.pow(2.0, b),
            F.mse_loss(a, b), F.huber_loss(a, b, delta=0.5), F.smooth_l1_loss(a, b, beta=0.7),
            F.soft_margin_loss(a, b.sign().detach()), F.mse_loss(a, b, reduction="sum"),
            F.smooth_l1_loss(a, b, reduction="none"))


def _logical(x: Any, ints: Any, mask: Any) -> tuple[Any, ...]:
    return (ints & 6, ints | (ints >> 1), ints ^ 5, ~ints, ints << 2, torch.logical_and(x, ints),
            torch.logical_or(x > 0, mask), torch.logical_xor(x, mask), torch.logical_not(x),
            x.masked_fill(mask, -1.5), x.masked_fill(mask, torch.tensor(3.0)), torch.where(mask, x, 0.5),
            torch.where(mask, 2.0, x), x.index_fill(1, torch.tensor([0, 2]), 7.0), mask & (x > 0), ~mask)


def _stats(x: Any) -> tuple[Any, ...]:
    return (torch.var(x, 1), torch.std(x, 0, correction=0, keepdim=True), *torch.var_mean(x, 1),
            *torch.std_mean(x), torch.logsumexp(x, 1), torch.prod(x, 1), torch.prod(x), torch.any(x > 1, 1),
            torch.all(x > -1), torch.argmax(x), torch.argmin(x, 1, keepdim=True), *torch.max(x, 1),
            *torch.min(x, 0, keepdim=True), x.max(), x.min(), torch.linalg.vector_norm(x),
            torch.linalg.vector_norm(x, 1, 1), torch.linalg.vector_norm(x, float("inf"), 0),
            torch.linalg.vector_norm(x, 3.0, 1), torch.linalg.vector_norm(x, 0), *torch.sort(x, 1),
            *torch.sort(x, 0, descending=True), *torch.topk(x, 2, 1), *torch.topk(x, 2, 0, largest=False),
            torch.nansum(x))


def _shaping(x: Any, v: Any) -> tuple[Any, ...]:
    rows = torch.tensor([[0, 2], [1, 1]])
    cols = torch.tensor([3, 0])
    cube = x.reshape(3, 2, 2)
    return (torch.stack([x, x * 2], 1), *torch.unbind(x, 1), torch.roll(x, 1, 0),
            torch.roll(x, (2, -1), (1, 0)),
            torch.roll(x, 3), x.repeat(2, 1, 2), torch.tril(x), torch.triu(x, 1), torch.arange(5) * 1.5,
            torch.arange(1.0, 2.0, 0.25) + x[0, 0], F.pad(x, (1, 2, 0, 1), value=0.5), F.pad(x, (-1, 1)),
            torch.diagonal(x), torch.diagonal(x, 1), torch.diag_embed(v), torch.trace(x), torch.dot(v, v),
            torch.mv(x, x[0]), torch.addmv(v[:3], x, x[0], beta=0.5), torch.addr(x, v[:3], v, alpha=2.0),
            torch.baddbmm(x[None], x[None, :, :3], x[None], beta=0.3), x[rows, cols], x[:, cols],
            cube[:, torch.tensor([0, 1, 1]), torch.tensor([1, 0, 1])],
            cube[torch.tensor([0, 2]), :, torch.tensor([1, 0])],
            x.scatter(1, torch.tensor([[1, 0], [3, 3], [2, 1]]), x[:, :2] * 10),
            x.scatter(0, torch.tensor([[2, 1, 0, 0]]), -4.0))


FAMILIES: dict[str, tuple[Any, tuple[Any, ...], set[str]]] = {
    "math_unary": (_unary, (_gen(3, 4),), {"aten.acos.default", "aten.expm1.default", "aten.round.decimals",
                                           "aten.glu.default", "aten.log_sigmoid_forward.default",
                                           "aten.elu.default", "aten.softplus.default",
                                           "aten.nan_to_num.default"}),
    "math_binary": (_binary, (_gen(3, 4), _gen(3, 4, seed=1) + 2.5), {
        "aten.atan2.default", "aten.fmod.Tensor", "aten.remainder.Tensor", "aten.lerp.Tensor",
        "aten.div.Tensor_mode", "aten.mse_loss.default", "aten.huber_loss.default",
        "aten.smooth_l1_loss.default", "aten.soft_margin_loss.default", "aten.pow.Scalar"}),
    "logical": (_logical, (_gen(3, 4), torch.arange(12).reshape(3, 4) - 5, _gen(3, 4, seed=2) > 0), {
        "aten.bitwise_and.Scalar", "aten.bitwise_not.default", "aten.logical_xor.default",
        "aten.masked_fill.Scalar", "aten.masked_fill.Tensor", "aten.index_fill.int_Scalar"}),
    "stats": (_stats, (_gen(3, 4),),
              {"aten.var_mean.correction", "aten.logsumexp.default", "aten.prod.dim_int",
                                      "aten.argmax.default", "aten.max.dim", "aten.sort.default",
                                      "aten.topk.default", "aten.linalg_vector_norm.default"}),
    "shaping": (_shaping, (_gen(3, 4), _gen(4, seed=3)), {
        "aten.roll.default", "aten.tril.default", "aten.arange.start_step", "aten.constant_pad_nd.default",
        "aten.diagonal.default", "aten.diag_embed.default", "aten.dot.default", "aten.addr.default",
        "aten.index.Tensor", "aten.scatter.src", "aten.scatter.value"}),
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_family_converts_values_and_gradients(family: str) -> None:
    fn, inputs, expected_ops = FAMILIES[family]
    check_converts(fn, *inputs)
    compiled = _compiled_ops()
    assert expected_ops <= set(compiled), sorted(expected_ops - set(compiled))


def _special(x: Any) -> tuple[Any, ...]:
    return (torch.lgamma(x), torch.lgamma(-x.abs() - 0.5), torch.digamma(x), torch.digamma(-x.abs() - 0.25),
            torch.mvlgamma(x.abs() + 2.0, 3), torch.polygamma(0, x.abs() + 0.1),
            torch.lgamma(torch.tensor([-2.0, 0.0])))


def test_special_functions() -> None:
    check_converts(_special, _gen(3, 4, low=0.1, high=6.0), eager_ops=frozenset({"aten.polygamma.default"}))
    assert {"aten.lgamma.default", "aten.digamma.default", "aten.mvlgamma.default"} <= set(_compiled_ops())
