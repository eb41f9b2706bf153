"""Scaled dot-product attention, forward and backward, through the fused attention ops
(`flash_attention`, `flash_attention_grad`: one tiled kernel each, online softmax, no L x S
matrix in memory; `cinn_py.frontend.ops.attention`).

`_scaled_dot_product_flash_attention_for_cpu` is what `F.scaled_dot_product_attention` leaves in
AOT graphs on the CPU (float masks: a bool mask arrives converted by a `where` before it); its
backward recomputes the probabilities from the saved logsumexp (`p = exp(s - lse)`), as the
fused backward kernel does. The math path of SDPA (a mask and no fused kernel) decomposes into
matmuls and `_safe_softmax`: softmax whose fully masked rows are zeros instead of NaN.

Grouped-query attention (fewer key/value heads than query heads, `enable_gqa`) is native to the
kernels (query head h reads key/value head h // group; the backward sums the group's gradients
in the kernel). bf16/fp16 inputs are computed in float32 (torch's CPU kernel accumulates in
float32; logsumexp is float32).
"""

from __future__ import annotations

from typing import Any

from cinn_py.frontend.ops.attention import attention_grads, attention_outputs
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
    if 0 in sizes:
        return "attention of an empty tensor"
    hq, hk = shapes[0].shape[1], shapes[1].shape[1]
    return None if hq % hk == 0 else f"attention with {hq} query heads and {hk} key heads"


def _backward_reason(g: Any, q: Any, k: Any, v: Any, out: Any, lse: Any, dropout_p: float, is_causal: bool,
                     **kwargs: Any) -> str | None:
    return _attention_reason(q, k, v, dropout_p, is_causal)


def _mask(e: Emitter, mask: Variable | None, q: Variable, k: Variable, dtype: str) -> Variable | None:
    """The mask as the ops take it: bool, or float in the compute dtype, of rank 2 to 4 with
    its last dim the keys' (else broadcast to [B, Hq, L, S])."""
    if mask is None:
        return None
    if str(mask.dtype) != "bool":
        mask = as_dtype(e, mask, dtype)
    full = [int(q.shape[0]), int(q.shape[1]), int(q.shape[2]), int(k.shape[2])]
    dims = [int(d) for d in mask.shape]
    fits = (2 <= len(dims) <= 4 and dims[-1] == full[-1]
            and all(d in (1, f) for d, f in zip(dims, full[4 - len(dims):])))
    return mask if fits else e.broadcast(mask, full)


def _scale_attr(scale: Any) -> float | None:
    return float(scale) if scale is not None else None


@converts("aten._scaled_dot_product_flash_attention_for_cpu.default", check=_attention_reason)
def _flash_attention(e: Emitter, q: Variable, k: Variable, v: Variable, dropout_p: float = 0.0,
                     is_causal: bool = False, *, attn_mask: Variable | None = None,
                     scale: Any = None) -> Value:
    """(out [B, H, L, Ev], logsumexp [B, H, L] float32); a fully masked row gives out 0, lse 0 (torch's)."""
    dtype = compute_dtype(q, k, v)
    q, k, v = (as_dtype(e, t, dtype) for t in (q, k, v))
    packed = e.nb.flash_attention(q, k, v, _mask(e, attn_mask, q, k, dtype), scale=_scale_attr(scale),
                                  causal=bool(is_causal))
    out, lse = attention_outputs(e.nb, packed, q, v)
    return out, as_dtype(e, lse, "float32")


@converts("aten._scaled_dot_product_flash_attention_for_cpu_backward.default", check=_backward_reason)
def _flash_attention_backward(e: Emitter, g: Variable, q: Variable, k: Variable, v: Variable, out: Variable,
                              lse: Variable, dropout_p: float, is_causal: bool, *,
                              attn_mask: Variable | None = None, scale: Any = None) -> Value:
    """(dq, dk, dv): the fused backward kernel, fed (out, lse) and (g, 0) packed as the forward's
    output and its cotangent."""
    nb = e.nb
    dtype = compute_dtype(q, k, v)
    q, k, v, g, out, lse = (as_dtype(e, t, dtype) for t in (q, k, v, g, out, lse))
    packed = nb.concat([nb.reshape(out, [-1]), nb.reshape(lse, [-1])], axis=0)
    zeros = nb.fill_constant([_numel(lse)], 0.0, dtype=dtype)
    dpacked = nb.concat([nb.reshape(g, [-1]), zeros], axis=0)
    grads = nb.flash_attention_grad(q, k, v, packed, dpacked, _mask(e, attn_mask, q, k, dtype),
                                    scale=_scale_attr(scale), causal=bool(is_causal))
    return attention_grads(nb, grads, q, k, v)


def _numel(x: Variable) -> int:
    n = 1
    for d in x.shape:
        n *= int(d)
    return n


def _no_minus_inf(e: Emitter, m: Variable) -> Variable:
    zeros = e.nb.fill_constant(list(m.shape), 0.0, dtype=str(m.dtype))
    return e.nb.select(e.nb.equal(m, float("-inf")), zeros, m)


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
