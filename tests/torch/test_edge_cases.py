"""Converters on the edges issue 28 found through OpInfo: 0-d tensors, reductions over every dim,
zero-size tensors, bool arithmetic, full-rank layer-norm gradients, expand_copy. Each compiled
in strict mode with nothing left to eager, values and gradients vs eager."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import cinn_py.torch as ct  # noqa: E402
from cinn_py.torch.backend import cinn_py_backend  # noqa: E402


def check_converts(fn: Callable[..., Any], *inputs: Any, grad: bool = True,
                   eager_ops: frozenset[str] = frozenset()
                   ) -> None:
    """`fn` compiled (strict) vs eager: outputs, and the gradients of its float inputs through a
    seeded random cotangent; every compute op ran in cinn-py kernels (but `eager_ops`)."""
    torch._dynamo.reset()
    ct.reset_reports()

    def leaves() -> list[Any]:
        return [t.detach().clone().requires_grad_(grad and t.is_floating_point())
                if isinstance(t, torch.Tensor)
                else t for t in inputs]

    mine, ref = leaves(), leaves()
    out = torch.compile(fn, backend=cinn_py_backend, dynamic=False)(*mine)
    expected = fn(*ref)
    torch.testing.assert_close(out, expected, equal_nan=True)
    outs = [o for o in (expected if isinstance(expected, tuple) else (expected,)) if o.requires_grad]
    if outs:
        mine_outs = [o for o in (out if isinstance(out, tuple) else (out,)) if o.requires_grad]
        gen = torch.Generator().manual_seed(3)
        cots = [torch.randn(o.shape, generator=gen) for o in outs]
        sum((o * c).sum() for o, c in zip(mine_outs, cots)).backward()
        sum((o * c).sum() for o, c in zip(outs, cots)).backward()
        exact: list[Any] | None = None
        for k, (a, b) in enumerate(zip(mine, ref)):
            if not isinstance(b, torch.Tensor) or b.grad is None:
                continue
            try:
                torch.testing.assert_close(a.grad, b.grad, msg=lambda m, k=k: f"input {k}: {m}")
            except AssertionError:
                # eager's own fp32 gradient may be the inaccurate one (trigamma near a pole: 7e-6 off
                # float64): then ours must be at most twice as far from float64 as eager's, at every element
                exact = exact if exact is not None else _float64_grads(fn, inputs, cots)
                ours, eagers = (a.grad.double() - exact[k]).abs(), (b.grad.double() - exact[k]).abs()
                assert bool((ours <= 2 * eagers + 1e-5).all()), (
                    f"input {k}: gradient off float64 by {ours.max().item():.3g}, "
                    f"eager's by {eagers.max().item():.3g}")
    for report in ct.reports():
        assert not report.errors and set(report.fallback) <= eager_ops, str(report)
    assert any(report.compiled for report in ct.reports()), "\n".join(map(str, ct.reports()))


def _float64_grads(fn: Callable[..., Any], inputs: tuple[Any, ...], cots: list[Any]) -> list[Any]:
    """The gradients of `fn` at `inputs` in float64, eagerly (None for inputs without one)."""
    leaves = [t.detach().double().requires_grad_(True)
              if isinstance(t, torch.Tensor) and t.is_floating_point() else t for t in inputs]
    result = fn(*leaves)
    result_outs = [o for o in (result if isinstance(result, tuple) else (result,)) if o.requires_grad]
    sum((o * c.double()).sum() for o, c in zip(result_outs, cots)).backward()
    return [t.grad if isinstance(t, torch.Tensor) else None for t in leaves]


SCALAR = torch.tensor(1.25)
CASES: dict[str, tuple[Callable[..., Any], tuple[Any, ...]]] = {
    "sum_0d": (lambda x: x.sum(), (SCALAR,)),
    "mean_0d_dim": (lambda x: x.mean(dim=0, keepdim=True), (SCALAR,)),
    "amax_0d": (lambda x: torch.amax(x * 2.0), (SCALAR,)),
    "sum_all_dims": (lambda x: x.sum(dim=(0, 1, 2)), (torch.randn(2, 3, 4),)),
    "nanmean_all": (lambda x: torch.nanmean(x), (torch.tensor([1.0, float("nan"), 3.0]),)),
    "l1_loss_0d": (lambda x, y: torch.nn.functional.l1_loss(x, y), (SCALAR, torch.tensor(-0.5))),
    "max_no_dim": (lambda x: x.max() + x.min(), (torch.randn(3, 4),)),
    "max_dim": (lambda x: torch.max(x, dim=1)[0] * 2 + torch.min(x, 0, keepdim=True)[1].sum(),
                (torch.randn(3, 4),)),
    "cumsum_0d": (lambda x: torch.cumsum(x, 0) * 2.0, (SCALAR,)),
    "softmax_0d": (lambda x: torch.softmax(x * 3.0, dim=0), (SCALAR,)),
    "index_select_0d": (lambda x, i: torch.index_select(x * 2.0, 0, i), (SCALAR, torch.tensor([0]))),
    "index_add_0d": (lambda x, i, s: torch.index_add(x * 1.0, 0, i, s),
                     (SCALAR, torch.tensor(0), torch.tensor(2.0))),
    "cumsum_zero_size": (lambda x: torch.cumsum(x * 2.0, 1), (torch.randn(3, 0),)),
    "isclose_bools": (lambda x, y: torch.isclose(x, y), (torch.tensor([1.0, 2.0, float("nan")]),
                                                          torch.tensor([1.0, 2.5, float("nan")]))),
    "isfinite": (lambda x: torch.isfinite(x * 2.0), (torch.tensor([1.0, float("inf"), float("nan")]),)),
    "nan_to_num": (lambda x: torch.nan_to_num(x * 2.0), (torch.tensor([1.0, float("inf"), -float("inf"),
                                                                       float("nan")]),)),
    "bool_mul_add": (lambda a, b: (a * b) + (a & b) * (a | b), (torch.tensor([True, False, True]),
                                                               torch.tensor([True, True, False]))),
    "layer_norm_all_dims": (lambda x, w, b: torch.nn.functional.layer_norm(x, [2, 3], w, b),
                            (torch.randn(2, 3), torch.randn(2, 3), torch.randn(2, 3))),
    "reshape_zero_size": (lambda x: x.reshape(3, 0) + 1.0, (torch.randn(0, 3),)),
    "unsqueeze_zero_size": (lambda x: x.unsqueeze(0) * 2.0, (torch.randn(0),)),
    "expand_copy": (lambda x: torch.expand_copy(x * 1.0, [5, 5, 5]), (torch.randn(5, 1, 1),)),
    "transpose_0d": (lambda x: x.t() * 2.0 + x.permute(()), (SCALAR,)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_edge_case_converts_and_matches_eager(name: str) -> None:
    fn, inputs = CASES[name]
    check_converts(fn, *inputs)
