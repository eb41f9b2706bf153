"""SDPA through torch.compile(backend="cinn_py") runs the fused attention kernels
(`flash_attention` / `flash_attention_grad`): forward and gradients against eager for causal,
bool-mask, float-mask and grouped-query attention, with lengths that are not multiples of the
kernels' tiles (64 query rows, 128 keys)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import cinn_py.torch as ct  # noqa: E402
from cinn_py.torch.backend import cinn_py_backend  # noqa: E402

F = torch.nn.functional
FLASH = "_scaled_dot_product_flash_attention_for_cpu"


def _check(fn: Callable[..., Any], q_shape: tuple[int, ...], kv_shape: tuple[int, ...]) -> None:
    torch._dynamo.reset()
    ct.reset_reports()
    g = torch.Generator().manual_seed(5)
    ins = [torch.randn(s, generator=g) for s in (q_shape, kv_shape, kv_shape)]
    mine = [t.clone().requires_grad_() for t in ins]
    ref = [t.clone().requires_grad_() for t in ins]
    out = torch.compile(fn, backend=cinn_py_backend, dynamic=False, options={"strict": True})(*mine)
    expected = fn(*ref)
    torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-5)
    cot = torch.randn(out.shape, generator=g)
    out.backward(cot)
    expected.backward(cot)
    for name, a, b in zip("qkv", mine, ref):
        torch.testing.assert_close(a.grad, b.grad, rtol=1e-3, atol=1e-4, msg=lambda m, n=name: f"d{n}: {m}")
    compiled = [op for r in ct.reports() for op in r.compiled]
    assert any(FLASH in op and "backward" not in op for op in compiled), compiled
    assert any(FLASH in op and "backward" in op for op in compiled), compiled
    assert not [r for r in ct.reports() if r.fallback or r.errors]


@pytest.mark.parametrize("kind", ["causal", "gqa_causal"]
                         + [pytest.param(k, marks=pytest.mark.slow) for k in ("float_mask", "plain")])
def test_fused_sdpa_matches_eager(kind: str) -> None:
    g = torch.Generator().manual_seed(7)
    float_mask = torch.randn(1, 1, 70, 150, generator=g)
    fns = {"causal": lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
           "float_mask": lambda q, k, v: F.scaled_dot_product_attention(q, k, v,
                                                                        attn_mask=float_mask, scale=0.2),
           "gqa_causal": lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                                        enable_gqa=True),
           "plain": lambda q, k, v: F.scaled_dot_product_attention(q, k, v)}
    kv_heads = 1 if kind.startswith("gqa") else 2
    keys = 70 if "causal" in kind else 150
    _check(fns[kind], (2, 2, 70, 16), (2, kv_heads, keys, 16))


def test_bool_padding_mask_matches_eager() -> None:
    """A BERT-style padding mask ([B, 1, 1, S] bool; no fully masked row)."""
    keep = torch.ones(2, 1, 1, 40, dtype=torch.bool)
    keep[0, ..., 30:] = False
    _check(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=keep), (2, 3, 40, 8),
           (2, 3, 40, 8))
