"""`_transformer_encoder_layer_fwd`: the fused inference fast path of `nn.TransformerEncoderLayer`
(eval mode under no_grad), composed from NetBuilder ops: the qkv projection, per-head scaled
dot-product attention, the output projection, the two layer norms (before or after each block,
`norm_first`) and the relu/gelu feed-forward."""

from __future__ import annotations

import math
from typing import Any

from cinn_py.frontend.program import Variable
from cinn_py.torch.converters.base import Emitter, Value, as_dtype, compute_dtype, converts


def _fake(node: Any) -> Any:
    return getattr(node, "meta", {}).get("val")


def _plain_layer(src: Any, embed_dim: int, num_heads: int, *rest: Any, mask: Any = None,
                 mask_type: Any = None) -> str | None:
    if len(rest) > 15 and rest[15] is not None or mask is not None:
        return "_transformer_encoder_layer_fwd with a mask"
    fake = _fake(src)
    if fake is None:
        return None
    if fake.dim() != 3:
        return f"_transformer_encoder_layer_fwd of a {fake.dim()}-d input (nested or unbatched)"
    bad = [d for d in fake.shape if not isinstance(d, int)]
    return f"_transformer_encoder_layer_fwd with the symbolic extent {bad[0]}" if bad else None


def _linear(e: Emitter, x: Variable, w: Variable, b: Variable) -> Variable:
    """x [B, L, in] @ w^T + b."""
    y = e.nb.matmul(x, w, transpose_y=True)
    return e.nb.add(y, e.nb.broadcast_to(b, list(y.shape), [y.ndim - 1]))


def _layer_norm(e: Emitter, x: Variable, w: Variable, b: Variable, eps: float) -> Variable:
    nb = e.nb
    last = [x.ndim - 1]
    shape, axes = list(x.shape), list(range(x.ndim))
    centred = nb.subtract(x, nb.broadcast_to(nb.reduce_mean(x, last, keep_dim=True), shape, axes))
    var = nb.reduce_mean(nb.multiply(centred, centred), last, keep_dim=True)
    y = nb.multiply(centred, nb.broadcast_to(nb.rsqrt(nb.scale(var, 1.0, float(eps))), shape, axes))
    return nb.add(nb.multiply(y, nb.broadcast_to(w, shape, last)), nb.broadcast_to(b, shape, last))


def _self_attention(e: Emitter, x: Variable, heads: int, qkv_w: Variable, qkv_b: Variable, proj_w: Variable,
                    proj_b: Variable) -> Variable:
    nb = e.nb
    batch, length, width = (int(d) for d in x.shape)
    depth = width // heads
    qkv = _linear(e, x, qkv_w, qkv_b)  # [B, L, 3E]

    def head(k: int) -> Variable:
        part = nb.slice(qkv, [2], [k * width], [(k + 1) * width])
        return nb.transpose(nb.reshape(part, [batch, length, heads, depth]), [0, 2, 1, 3])

    q, key, v = head(0), head(1), head(2)
    p = nb.softmax(nb.matmul(q, key, transpose_y=True, alpha=1.0 / math.sqrt(depth)), [3])
    out = nb.reshape(nb.transpose(nb.matmul(p, v), [0, 2, 1, 3]), [batch, length, width])
    return _linear(e, out, proj_w, proj_b)


@converts("aten._transformer_encoder_layer_fwd.default", check=_plain_layer)
def _encoder_layer(e: Emitter, src: Variable, embed_dim: int, num_heads: int, qkv_w: Variable,
                   qkv_b: Variable,
                   proj_w: Variable, proj_b: Variable, use_gelu: bool, norm_first: bool, eps: float,
                   ln1_w: Variable, ln1_b: Variable, ln2_w: Variable, ln2_b: Variable, ff1_w: Variable,
                   ff1_b: Variable, ff2_w: Variable, ff2_b: Variable, mask: Any = None,
                   mask_type: Any = None) -> Value:
    nb = e.nb
    dtype = compute_dtype(src, qkv_w)
    x, qkv_w, qkv_b, proj_w, proj_b, ln1_w, ln1_b, ln2_w, ln2_b, ff1_w, ff1_b, ff2_w, ff2_b = (
        as_dtype(e, v, dtype) for v in (src, qkv_w, qkv_b, proj_w, proj_b, ln1_w, ln1_b, ln2_w, ln2_b, ff1_w,
                                        ff1_b, ff2_w, ff2_b))

    def attention(h: Variable) -> Variable:
        return _self_attention(e, h, num_heads, qkv_w, qkv_b, proj_w, proj_b)

    def feed_forward(h: Variable) -> Variable:
        hidden = _linear(e, h, ff1_w, ff1_b)
        return _linear(e, nb.gelu(hidden) if use_gelu else nb.relu(hidden), ff2_w, ff2_b)

    if norm_first:
        x = nb.add(x, attention(_layer_norm(e, x, ln1_w, ln1_b, eps)))
        return nb.add(x, feed_forward(_layer_norm(e, x, ln2_w, ln2_b, eps)))
    x = _layer_norm(e, nb.add(x, attention(x)), ln1_w, ln1_b, eps)
    return _layer_norm(e, nb.add(x, feed_forward(x)), ln2_w, ln2_b, eps)
