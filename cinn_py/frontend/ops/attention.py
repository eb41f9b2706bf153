"""Fused scaled dot-product attention: `flash_attention` and its backward `flash_attention_grad`.

    out = softmax(q k^T * scale + mask) v        q [B, Hq, L, E], k [B, Hk, S, E], v [B, Hk, S, Ev]

`mask` (optional) broadcasts to [B, Hq, L, S] (rank 2 to 4, trailing dims aligned): a bool mask
keeps a key where it is True, a float mask is added to the scores. `causal` keeps key j for query
i when j <= i (torch's `is_causal`: top-left aligned). Hq may be a multiple of Hk
(grouped-query attention: query head h reads key/value head h // (Hq / Hk)). A row whose keys
are all masked gives out 0 and lse 0 (torch's CPU kernel).

Both ops are compute-intensive kernels of their own (kNonFusible), lowered by the tiled
templates of `cinn_py.lowering.attention` (online softmax, no L x S matrix in memory), not by
the compute DSL. An op has one output here, so each op's results are packed into one flat
float32 buffer, in order (`attention_outputs` / `attention_grads` slice them back):

    flash_attention:       [out (B*Hq*L*Ev) | lse (B*Hq*L)]
    flash_attention_grad:  [dq (B*Hq*L*E) | dk (B*Hk*S*E) | dv (B*Hk*S*Ev)]

`flash_attention_grad(q, k, v, packed, dpacked, mask)` takes the forward's packed output and its
cotangent (d_out and d_lse), so the gradient of the log-sum-exp flows too. The mask gets no
gradient. float32 or float64 (callers compute bf16/fp16 attention in float32, as torch's CPU kernel).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from cinn_py.frontend.ops.base import (Attrs, FrontendError, OpDef, OpPatternKind, SymbolEnv, TensorType,
                                       register)
from cinn_py.frontend.ops.shapes import fmt_shape
from cinn_py.frontend.ops.signature import Signature, attr, boolean, floating, optional, tensor
from cinn_py.frontend.ops.testing import Case, Input, OpTest
from cinn_py.ir import DType, float32, float64

__all__ = ["attention_grads", "attention_outputs", "packed_sizes", "reference_attention",
           "reference_attention_grad"]


def _dims(q: TensorType, k: TensorType, v: TensorType, op: str) -> tuple[int, ...]:
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.ndim != 4 or not all(isinstance(d, int) for d in t.shape):
            raise FrontendError(f"{op}: {name} must be a static 4-d [B, H, seq, E] tensor, got "
                                f"{fmt_shape(t.shape)}")
        if t.dtype != q.dtype or t.dtype not in (float32, float64):
            raise FrontendError(f"{op}: q, k, v must all be float32 or all float64 (compute bf16/fp16 "
                                "attention in "
                                f"float32), got {q.dtype}, {k.dtype}, {v.dtype}")
    b, hq, l, e = _ints(q.shape)
    bk, hk, s, ek = _ints(k.shape)
    bv, hv, sv, ev = _ints(v.shape)
    if (bk, bv) != (b, b) or hv != hk or sv != s or ek != e or hq % hk:
        raise FrontendError(f"{op}: q {fmt_shape(q.shape)}, k {fmt_shape(k.shape)} and v "
                            f"{fmt_shape(v.shape)} must "
                            "share B, k and v their heads and length, q and k their head dim, and q's heads "
                            "must be "
                            "a multiple of k's")
    if min(l, s, e, ev) < 1:
        raise FrontendError(f"{op}: empty attention (L={l}, S={s}, E={e}, Ev={ev})")
    # a bound on every buffer the kernels index: the packed outputs, the padded copies of K and V
    largest = b * hq * l * (e + ev + 1) + b * hk * (s + MAX_KEY_PADDING) * (e + ev)
    if largest >= INDEX_LIMIT:
        raise FrontendError(f"{op}: {largest} elements in one buffer exceed the kernels' 32-bit indexing "
                            f"(limit {INDEX_LIMIT}); split the batch")
    return b, hq, hk, l, s, e, ev


INDEX_LIMIT = 2**31
MAX_KEY_PADDING = 128
"""Keys the templates may add to S (a partial last key block, `lowering.attention.tiles`)."""


def _ints(shape: Sequence[Any]) -> list[int]:
    return [int(d) for d in shape]  # static (checked first)


def _check_mask(mask: TensorType, dims: tuple[int, ...], dtype: DType, op: str) -> None:
    b, hq, _, l, s, _, _ = dims
    full = (b, hq, l, s)
    ok = 2 <= mask.ndim <= 4 and all(isinstance(d, int) for d in mask.shape)
    if ok:
        dims_m = _ints(mask.shape)
        ok = all(d in (1, f) for d, f in zip(dims_m, full[4 - mask.ndim:])) and dims_m[-1] == s
    if not ok:
        raise FrontendError(f"{op}: mask {fmt_shape(mask.shape)} must broadcast to [B, Hq, L, S] = "
                            f"{list(full)} "
                            "(rank 2 to 4, its last dim S)")
    if not (mask.dtype.is_bool or mask.dtype == dtype):
        raise FrontendError(f"{op}: mask must be bool (True keeps a key) or of q's dtype {dtype} (added), "
                            "got "
                            f"{mask.dtype}")


def packed_sizes(q_shape: Sequence[int], k_shape: Sequence[int], v_shape: Sequence[int]) -> dict[str, int]:
    """Element counts of the packed parts: out, lse, dq, dk, dv."""
    b, hq, l, e = (int(d) for d in q_shape)
    _, hk, s, ev = (int(d) for d in v_shape)
    return {"out": b * hq * l * ev, "lse": b * hq * l, "dq": b * hq * l * e, "dk": b * hk * s * e,
            "dv": b * hk * s * ev}


def _infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    if len(ins) not in (3, 4):
        raise FrontendError(f"flash_attention: expects q, k, v and an optional mask, got {len(ins)} operands")
    dims = _dims(ins[0], ins[1], ins[2], "flash_attention")
    if len(ins) == 4:
        _check_mask(ins[3], dims, ins[0].dtype, "flash_attention")
    sizes = packed_sizes(*(t.shape for t in ins[:3]))  # type: ignore[arg-type]
    return [TensorType((sizes["out"] + sizes["lse"],), ins[0].dtype)]


def _infer_grad(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    if len(ins) not in (5, 6):
        raise FrontendError("flash_attention_grad: expects q, k, v, the forward's packed output, its "
                            "cotangent and "
                            f"an optional mask, got {len(ins)} operands")
    dims = _dims(ins[0], ins[1], ins[2], "flash_attention_grad")
    sizes = packed_sizes(*(t.shape for t in ins[:3]))  # type: ignore[arg-type]
    for name, t in (("packed", ins[3]), ("dpacked", ins[4])):
        if tuple(t.shape) != (sizes["out"] + sizes["lse"],) or t.dtype != ins[0].dtype:
            raise FrontendError(f"flash_attention_grad: {name} must be the forward's packed {ins[0].dtype} "
                                f"[{sizes['out'] + sizes['lse']}], got {t.dtype}{fmt_shape(t.shape)}")
    if len(ins) == 6:
        _check_mask(ins[5], dims, ins[0].dtype, "flash_attention_grad")
    return [TensorType((sizes["dq"] + sizes["dk"] + sizes["dv"],), ins[0].dtype)]


def _attrs(ins: Sequence[Any], attrs: dict[str, Any]) -> dict[str, Any]:
    """`scale` None -> 1 / sqrt(E) (torch's default); `param_names` (which optional inputs are
    present) dropped: the operand count says whether there is a mask."""
    out = {k: v for k, v in attrs.items() if k != "param_names"}
    if out.get("scale") is None:
        out["scale"] = 1.0 / math.sqrt(int(ins[0].shape[-1]))
    return out


# -- numpy references ----------------------------------------------------------------------------------------
def _scores(q: np.ndarray, k: np.ndarray, mask: np.ndarray | None, scale: float, causal: bool) -> np.ndarray:
    group = q.shape[1] // k.shape[1]
    kk = np.repeat(k.astype(np.float64), group, axis=1)
    s = np.einsum("bhle,bhse->bhls", q.astype(np.float64), kk) * scale
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == np.bool_ else s + mask.astype(np.float64)
    if causal:
        l, n = s.shape[-2:]
        s = np.where(np.tril(np.ones((l, n), dtype=bool)), s, -np.inf)
    return s


def _probabilities(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(p, lse): softmax over the last axis and its log-sum-exp, 0 and 0 for a fully masked row."""
    m = s.max(axis=-1, keepdims=True)
    m = np.where(np.isneginf(m), 0.0, m)
    e = np.exp(s - m)
    total = e.sum(axis=-1, keepdims=True)
    empty = total == 0
    p = e / np.where(empty, 1.0, total)
    lse = np.where(empty, 0.0, m + np.log(np.where(empty, 1.0, total)))[..., 0]
    return p, lse


def reference_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray | None = None,
                        scale: float | None = None, causal: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(out, lse) in float64 (module docstring)."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    p, lse = _probabilities(_scores(q, k, mask, scale, causal))
    group = q.shape[1] // k.shape[1]
    return np.einsum("bhls,bhsd->bhld", p, np.repeat(v.astype(np.float64), group, axis=1)), lse


def reference_attention_grad(q: np.ndarray, k: np.ndarray, v: np.ndarray, dout: np.ndarray, dlse: np.ndarray,
                             mask: np.ndarray | None = None, scale: float | None = None, causal: bool = False,
                             saved: tuple[np.ndarray, np.ndarray] | None = None
                             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dq, dk, dv) in float64 of the loss <dout, out> + <dlse, lse>. `saved`: the forward's
    (out, lse) as the kernel reads them (p = exp(score - lse), D = rowsum(dout * out) - dlse);
    default: computed here."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    b, hk = k.shape[:2]
    group = q.shape[1] // hk
    out, lse = saved if saved is not None else reference_attention(q, k, v, mask, scale, causal)
    s = _scores(q, k, mask, scale, causal)
    p = np.exp(s - lse.astype(np.float64)[..., None])
    kk, vv = (np.repeat(t.astype(np.float64), group, axis=1) for t in (k, v))
    do = dout.astype(np.float64)
    dv = np.einsum("bhls,bhld->bhsd", p, do)
    dp = np.einsum("bhld,bhsd->bhls", do, vv)
    delta = (do * out.astype(np.float64)).sum(-1, keepdims=True) - dlse.astype(np.float64)[..., None]
    ds = p * (dp - delta) * scale
    dq = np.einsum("bhls,bhse->bhle", ds, kk)
    dk = np.einsum("bhls,bhle->bhse", ds, q.astype(np.float64))

    def heads(x: np.ndarray) -> np.ndarray:
        return x.reshape(b, hk, group, *x.shape[2:]).sum(axis=2)
    return dq, heads(dk), heads(dv)


def _numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    q, k, v = arrays[:3]
    mask = arrays[3] if len(arrays) == 4 else None
    out, lse = reference_attention(q, k, v, mask, attrs["scale"], attrs["causal"])
    return [np.concatenate([out.ravel(), lse.ravel()]).astype(q.dtype)]


def _numpy_grad(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    q, k, v, packed, dpacked = arrays[:5]
    mask = arrays[5] if len(arrays) == 6 else None
    sizes = packed_sizes(q.shape, k.shape, v.shape)

    def unpack(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return x[:sizes["out"]].reshape(*q.shape[:3], v.shape[-1]), x[sizes["out"]:].reshape(q.shape[:3])
    grads = reference_attention_grad(q, k, v, *unpack(dpacked), mask, attrs["scale"], attrs["causal"],
                                     saved=unpack(packed))
    return [np.concatenate([g.ravel() for g in grads]).astype(q.dtype)]


# -- unpacking (NetBuilder helpers) --------------------------------------------------------------------------
def _part(nb: Any, packed: Any, start: int, shape: Sequence[int]) -> Any:
    size = int(np.prod(shape))
    return nb.reshape(nb.slice(packed, axes=[0], starts=[start], ends=[start + size]), list(shape))


def attention_outputs(nb: Any, packed: Any, q: Any, v: Any) -> tuple[Any, Any]:
    """(out [B, Hq, L, Ev], lse [B, Hq, L]) of a `flash_attention` result."""
    b, hq, l, _ = (int(d) for d in q.shape)
    ev = int(v.shape[-1])
    return _part(nb, packed, 0, (b, hq, l, ev)), _part(nb, packed, b * hq * l * ev, (b, hq, l))


def attention_grads(nb: Any, packed: Any, q: Any, k: Any, v: Any) -> tuple[Any, Any, Any]:
    """(dq, dk, dv) of a `flash_attention_grad` result, shaped as q, k, v."""
    sizes = packed_sizes(q.shape, k.shape, v.shape)
    dq = _part(nb, packed, 0, [int(d) for d in q.shape])
    dk = _part(nb, packed, sizes["dq"], [int(d) for d in k.shape])
    return dq, dk, _part(nb, packed, sizes["dq"] + sizes["dk"], [int(d) for d in v.shape])


# -- cases --------------------------------------------------------------------------------------------------
_SHAPES = (  # (q, k, v, mask shape or None, mask dtype, causal)
    ((1, 2, 5, 8), (1, 2, 7, 8), (1, 2, 7, 8), None, None, False),
    ((2, 2, 9, 4), (2, 2, 9, 4), (2, 2, 9, 6), None, None, True),
    ((1, 4, 6, 8), (1, 2, 6, 8), (1, 2, 6, 8), (6, 6), "bool", False),
    ((1, 2, 3, 8), (1, 2, 33, 8), (1, 2, 33, 8), (1, 1, 3, 33), "bool", True),
)
"""Float masks get no gradient (tests/frontend/test_attention.py checks them): the harness's
finite differences would differentiate one."""


def _cases(grad: bool) -> Any:
    def cases(dtype: str) -> list[Case]:
        out = []
        for qs, ks, vs, ms, mdt, causal in _SHAPES:
            args: list[Any] = [Input(qs), Input(ks), Input(vs)]
            if grad:
                n = packed_sizes(qs, ks, vs)
                args += [Input((n["out"] + n["lse"],)), Input((n["out"] + n["lse"],))]
            if ms is not None:
                args.append(Input(ms, "bool" if mdt == "bool" else None, low=-1.0, high=1.0))
            out.append(Case(tuple(args), {"causal": causal}))
        return out
    return cases


_DOC = " (cinn_py.frontend.ops.attention; packed outputs: `attention_outputs` / `attention_grads`)."
register(OpDef("flash_attention", OpPatternKind.kNonFusible, _infer, _numpy, None, arity=None,
               signature=Signature((tensor("q"), tensor("k"), tensor("v"), tensor("mask", optional=True),
                                    attr("scale", optional(floating), None), attr("causal", boolean, False)),
                                   attrs=_attrs, doc="softmax(q k^T * scale + mask) v, fused" + _DOC),
               test=OpTest(("float32", "float64"), _cases(False), rtol=2e-4, atol=2e-5)))
register(OpDef("flash_attention_grad", OpPatternKind.kNonFusible, _infer_grad, _numpy_grad, None, arity=None,
               signature=Signature((tensor("q"), tensor("k"), tensor("v"), tensor("packed"),
                                    tensor("dpacked"),
                                    tensor("mask", optional=True), attr("scale", optional(floating), None),
                                    attr("causal", boolean, False)),
                                   attrs=_attrs, doc="gradients of flash_attention" + _DOC),
               test=OpTest(("float32", "float64"), _cases(True), rtol=2e-4, atol=2e-5)))
