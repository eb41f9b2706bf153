"""Scaled dot-product attention, forward and backward, as composite NetBuilder ops: matmul, scale,
mask, softmax, matmul.

`_scaled_dot_product_flash_attention_for_cpu` is what `F.scaled_dot_product_attention` leaves in
AOT graphs on the CPU (float masks: a bool mask arrives converted by a `where` before it); its
backward recomputes the probabilities from the saved logsumexp (`p = exp(s - lse)`), as flash
attention does, so the forward saves [B, H, L] instead of [B, H, L, S]. The math path of SDPA
(a mask and no fused kernel) decomposes into matmuls and `_safe_softmax`: softmax whose fully
masked rows are zeros instead of NaN.

Grouped-query attention (fewer key/value heads than query heads, `enable_gqa`) repeats each
key/value head over its group of query heads; the backward sums the group's gradients. bf16/fp16
inputs are computed in float32 (torch's CPU kernel accumulates in float32; logsumexp is float32).
"""

from __future__ import annotations

import math
from typing import Any

from cinn_py.frontend.program import Variable
from cinn_py.torch.converters.base import Emitter, Value, as_dtype, compute_dtype, converts


def _fake(node: Any) -> Any:
    return getattr(node, "meta", {}).get("val")


def _attention_reason(q: Any, k: Any, v: Any, dropout_p: float = 0.0, is_causal: bool = False,
                      **kwargs: Any) -> str | None:
    if dropout_p:
        return f"attention with dropout_p={dropout_p}"
    shapes = [_fake(t) for t in (q, k, v)]
    if any(s is None for s in shapes):
        return None
    if any(s.dim() != 4 for s in shapes):
        return "attention of other than 4-d [B, H, L, E] tensors"
    sizes = [d for s in shapes for d in s.shape]
    bad = [d for d in sizes if not isinstance(d, int)]
    if bad:
        return f"attention with the symbolic extent {bad[0]}"
    hq, hk = shapes[0].shape[1], shapes[1].shape[1]
    return None if hq % hk == 0 else f"attention with {hq} query heads and {hk} key heads"


def _backward_reason(g: Any, q: Any, k: Any, v: Any, out: Any, lse: Any, dropout_p: float, is_causal: bool,
                     **kwargs: Any) -> str | None:
    return _attention_reason(q, k, v, dropout_p, is_causal)


def _repeat_heads(e: Emitter, x: Variable, heads: int) -> Variable:
    """[B, Hk, S, E] -> [B, heads, S, E], each key/value head repeated over its query-head group."""
    b, hk, s, d = (int(n) for n in x.shape)
    if hk == heads:
        return x
    spread = e.nb.broadcast_to(x, [b, hk, heads // hk, s, d], [0, 1, 3, 4])
    return e.nb.reshape(spread, [b, heads, s, d])


def _sum_heads(e: Emitter, x: Variable, heads: int) -> Variable:
    """The transpose of `_repeat_heads`: [B, H, S, E] summed over each group to [B, heads, S, E]."""
    b, h, s, d = (int(n) for n in x.shape)
    if h == heads:
        return x
    return e.nb.reduce_sum(e.nb.reshape(x, [b, heads, h // heads, s, d]), [2])


def _causal_keep(e: Emitter, like: Variable) -> Variable:
    """True where key j <= query i (torch's top-left aligned `is_causal`), broadcast to `like`."""
    nb = e.nb
    rows, cols = int(like.shape[-2]), int(like.shape[-1])
    i = nb.broadcast_to(nb.arange(0, rows, 1, dtype="int64"), [rows, cols], [0])
    j = nb.broadcast_to(nb.arange(0, cols, 1, dtype="int64"), [rows, cols], [1])
    return nb.broadcast_to(nb.less_equal(j, i), list(like.shape), [like.ndim - 2, like.ndim - 1])


def _masked_scores(e: Emitter, q: Variable, k: Variable, is_causal: bool, mask: Variable | None,
                   scale: float) -> Variable:
    """scale q k^T, plus a float mask, -inf where a bool mask or causality excludes a key."""
    nb = e.nb
    s = nb.matmul(q, k, transpose_y=True, alpha=scale)
    if mask is not None:
        shape = list(s.shape)
        if str(mask.dtype) == "bool":
            s = nb.select(e.broadcast(mask, shape), s, nb.fill_constant(shape, float("-inf"), dtype=str(s.dtype)))
        else:
            s = nb.add(s, e.broadcast(as_dtype(e, mask, str(s.dtype)), shape))
    if is_causal:
        s = nb.select(_causal_keep(e, s), s, nb.fill_constant(list(s.shape), float("-inf"), dtype=str(s.dtype)))
    return s


def _scale_of(q: Variable, scale: Any) -> float:
    return float(scale) if scale is not None else 1.0 / math.sqrt(int(q.shape[-1]))


def _inputs(e: Emitter, q: Variable, k: Variable, v: Variable) -> tuple[str, Variable, Variable, Variable]:
    dtype = compute_dtype(q, k, v)
    heads = int(q.shape[1])
    q32, k32, v32 = as_dtype(e, q, dtype), as_dtype(e, k, dtype), as_dtype(e, v, dtype)
    return dtype, q32, _repeat_heads(e, k32, heads), _repeat_heads(e, v32, heads)


def _safe_max(e: Emitter, s: Variable) -> Variable:
    """The row max, 0 for a fully masked row (its max is -inf: s - max would be NaN)."""
    nb = e.nb
    return _no_minus_inf(e, nb.reduce_max(s, [s.ndim - 1], keep_dim=True))


def _no_minus_inf(e: Emitter, m: Variable) -> Variable:
    zeros = e.nb.fill_constant(list(m.shape), 0.0, dtype=str(m.dtype))
    return e.nb.select(e.nb.equal(m, float("-inf")), zeros, m)


@converts("aten._scaled_dot_product_flash_attention_for_cpu.default", check=_attention_reason)
def _flash_attention(e: Emitter, q: Variable, k: Variable, v: Variable, dropout_p: float = 0.0,
                     is_causal: bool = False, *, attn_mask: Variable | None = None, scale: Any = None) -> Value:
    """(out [B, H, L, Ev], logsumexp [B, H, L] float32); a fully masked row gives out 0, lse 0 (torch's)."""
    nb = e.nb
    _, q, k, v = _inputs(e, q, k, v)
    s = _masked_scores(e, q, k, is_causal, attn_mask, _scale_of(q, scale))
    m = _safe_max(e, s)
    p = nb.exp(nb.subtract(s, nb.broadcast_to(m, list(s.shape), list(range(s.ndim)))))
    total = nb.reduce_sum(p, [s.ndim - 1], keep_dim=True)
    empty = nb.equal(total, 0.0)
    total = nb.select(empty, nb.fill_constant(list(total.shape), 1.0, dtype=str(total.dtype)), total)
    out = nb.divide(nb.matmul(p, v), nb.broadcast_to(total, [*total.shape[:-1], int(v.shape[-1])],
                                                       list(range(total.ndim))))
    lse = nb.reshape(nb.add(m, nb.log(total)), list(total.shape[:-1]))
    return out, as_dtype(e, lse, "float32")


@converts("aten._scaled_dot_product_flash_attention_for_cpu_backward.default", check=_backward_reason)
def _flash_attention_backward(e: Emitter, g: Variable, q: Variable, k: Variable, v: Variable, out: Variable,
                              lse: Variable, dropout_p: float, is_causal: bool, *,
                              attn_mask: Variable | None = None, scale: Any = None) -> Value:
    """(dq, dk, dv) with p = exp(s - lse): dv = p^T g, ds = p (g v^T - rowsum(g out)),
    dq = scale ds k, dk = scale ds^T q."""
    nb = e.nb
    key_heads = int(k.shape[1])
    dtype, q, k, v = _inputs(e, q, k, v)
    g, out, lse = as_dtype(e, g, dtype), as_dtype(e, out, dtype), as_dtype(e, lse, dtype)
    factor = _scale_of(q, scale)
    s = _masked_scores(e, q, k, is_causal, attn_mask, factor)
    p = nb.exp(nb.subtract(s, nb.broadcast_to(lse, list(s.shape), list(range(s.ndim - 1)))))
    dv = nb.matmul(p, g, transpose_x=True)
    dp = nb.matmul(g, v, transpose_y=True)
    rowdot = nb.reduce_sum(nb.multiply(g, out), [g.ndim - 1], keep_dim=True)
    ds = nb.multiply(p, nb.subtract(dp, nb.broadcast_to(rowdot, list(dp.shape), list(range(dp.ndim)))))
    dq = nb.matmul(ds, k, alpha=factor)
    dk = nb.matmul(ds, q, transpose_x=True, alpha=factor)
    return dq, _sum_heads(e, dk, key_heads), _sum_heads(e, dv, key_heads)


@converts("aten._safe_softmax.default")
def _safe_softmax(e: Emitter, x: Variable, dim: int, dtype: Any = None) -> Value:
    """softmax along `dim`; a row that is -inf everywhere (fully masked) gives zeros, not NaN."""
    nb = e.nb
    x = as_dtype(e, x, e.dtype) or x
    axis = dim % x.ndim
    m = _no_minus_inf(e, nb.reduce_max(x, [axis], keep_dim=True))
    p = nb.exp(nb.subtract(x, nb.broadcast_to(m, list(x.shape), list(range(x.ndim)))))
    total = nb.reduce_sum(p, [axis], keep_dim=True)
    empty = nb.equal(total, 0.0)
    total = nb.select(empty, nb.fill_constant(list(total.shape), 1.0, dtype=str(total.dtype)), total)
    return nb.divide(p, nb.broadcast_to(total, list(x.shape), list(range(x.ndim))))
