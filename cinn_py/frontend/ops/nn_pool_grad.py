"""The backward op of pool2d, `pool2d_grad` (CINN's `pool2d_grad`), and `pool2d_argmax` (the
window maxima's positions, as PyTorch's `max_pool2d` indices). Direct computations like pool2d
(window geometry from `nn_window`): kNonFusible, accumulating 16-bit floats in float32.

- `pool2d_grad(x, dy)`: each window spreads its cotangent over the input elements it covers:
  avg divides it by the forward's divisor (exclusive: the window's input elements; inclusive:
  KH * KW, as pool2d computes, ceil_mode windows included); max routes all of it to the window's
  first maximum in row-major window order (PyTorch's rule for ties; padding is never a maximum).
  The max's position is recomputed from x (a `__max` and an `__argmax` stage), so the op reads x
  and dy only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from cinn_py.frontend import compute as cdsl
from cinn_py.frontend.ops.base import (
    Attrs, FrontendError, OpDef, OpPatternKind, SymbolEnv, TensorType, check_operand_dtype, register,
)
from cinn_py.frontend.ops.nn import _pool_attrs, accumulator_np
from cinn_py.frontend.ops.nn_grad import _ALGORITHMS, _nchw, _tap, _with_accumulator
from cinn_py.frontend.ops.nn_window import (
    _LAYOUTS, _layout_shape, _like, _read_padded, _spatial, _split, _to_layout, _window_numpy,
)
from cinn_py.frontend.ops.reduce import accumulator
from cinn_py.frontend.ops.shapes import dims_equal, fmt_shape
from cinn_py.frontend.ops.signature import Signature, attr, boolean, int_list, one_of, tensor
from cinn_py.frontend.ops.testing import FLOATS, Case, Input, OpTest
from cinn_py.ir import EQ, GE, LT, And, Expr, const, int64


# ---------------------------------------------------------------------------------------------------------
# pool2d_grad / pool2d_argmax
# ---------------------------------------------------------------------------------------------------------
def _pool_grad_attrs(ins: Sequence[TensorType], at: dict[str, Any]) -> dict[str, Any]:
    return _pool_attrs(ins[:1], at)


def _argmax_attrs(ins: Sequence[TensorType], at: dict[str, Any]) -> dict[str, Any]:
    return _pool_attrs(ins, {**at, "pooling_type": "max", "exclusive": True, "adaptive": False})


def _pool_grad_infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    x, dy = ins
    check_operand_dtype("pool2d_grad", "x", x.dtype, "floating-point")
    layout = attrs["data_format"]
    c, _, _ = _spatial(layout, x.shape)
    want = _layout_shape(layout, x.shape[0], c, *attrs["out_hw"])
    if dy.dtype != x.dtype or dy.ndim != 4 or not all(map(dims_equal, dy.shape, want)):
        raise FrontendError(f"pool2d_grad: dy must be the forward output's type {x.dtype}{fmt_shape(want)} "
                            f"({layout}), got {dy.dtype}{fmt_shape(dy.shape)}")
    return [x]


def _argmax_infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    x = ins[0]
    check_operand_dtype("pool2d_argmax", "x", x.dtype, "floating-point")
    c, _, _ = _spatial(attrs["data_format"], x.shape)
    return [TensorType(_layout_shape(attrs["data_format"], x.shape[0], c, *attrs["out_hw"]), int64)]


def _first_max_numpy(x: np.ndarray, attrs: Attrs) -> tuple[np.ndarray, np.ndarray]:
    """Per window (N, C, OH, OW): the row-major position i * KW + j of its first maximum among
    the input elements it covers, and whether it covers any."""
    win, inside = _window_numpy(x, attrs, -np.inf)
    masked = np.where(inside, win, -np.inf)
    top = masked.max(axis=(4, 5), keepdims=True)
    hit = (inside & (win == top)).reshape(win.shape[:4] + (-1,))
    return hit.argmax(axis=-1), hit.any(axis=-1)


def _window_weights(x: np.ndarray, attrs: Attrs, acc: Any) -> np.ndarray:
    """(N, C, OH, OW, KH, KW): the share of a window's cotangent each of its positions receives."""
    kh, kw = attrs["kernel"]
    if attrs["pooling_type"] == "max":
        first, covered = _first_max_numpy(x, attrs)
        onehot = (first[..., None] == np.arange(kh * kw)) & covered[..., None]
        return onehot.reshape(first.shape + (kh, kw)).astype(acc)
    _, inside = _window_numpy(x, attrs, 0.0)
    count = inside.sum(axis=(2, 3)) if attrs["exclusive"] else np.full(inside.shape[:2], kh * kw)
    share = 1.0 / np.maximum(count, 1).astype(acc)
    return np.broadcast_to(share[:, :, None, None], inside.shape)[None, None].astype(acc)


def _pool_grad_numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    x, dy = arrays
    acc = accumulator_np(x.dtype)
    layout, (t, _, left, _) = attrs["data_format"], attrs["pads"]
    (kh, kw), (sh, sw), (oh, ow) = attrs["kernel"], attrs["strides"], attrs["out_hw"]
    contrib = _window_weights(x, attrs, acc) * _nchw(dy, layout).astype(acc)[..., None, None]
    n, c, h, w = _nchw(x, layout).shape
    dxp = np.zeros((n, c, max(h + t, (oh - 1) * sh + kh), max(w + left, (ow - 1) * sw + kw)), acc)
    for i in range(kh):
        for j in range(kw):
            dxp[:, :, i:i + (oh - 1) * sh + 1:sh, j:j + (ow - 1) * sw + 1:sw] += contrib[..., i, j]
    return [_to_layout(dxp[:, :, t:t + h, left:left + w], layout).astype(x.dtype)]


def _argmax_numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    x = arrays[0]
    first, covered = _first_max_numpy(x, attrs)
    (t, _, left, _), (_, kw), (sh, sw) = attrs["pads"], attrs["kernel"], attrs["strides"]
    oh, ow = np.indices(first.shape[2:])
    rows, cols = oh * sh - t + first // kw, ow * sw - left + first % kw
    width = _nchw(x, attrs["data_format"]).shape[3]
    index = np.where(covered, rows * width + cols, -1).astype(np.int64)
    return [_to_layout(index, attrs["data_format"])]


def _first_max(x: cdsl.ComputeTensor, attrs: Attrs, shape: Sequence[Any], name: str) -> cdsl.ComputeTensor:
    """Per window: i * KW + j of its first maximum over the input elements it covers, in row-major
    window order (KH * KW where it covers none). Two stages: the window max, then the least
    position holding it (a `min` reduction, so ties resolve to the first)."""
    layout, (kh, kw), (sh, sw), pads = attrs["data_format"], attrs["kernel"], attrs["strides"], attrs["pads"]
    _, h, w = _spatial(layout, x.shape)

    def window(idx: Sequence[Expr], ri: Expr, rj: Expr) -> tuple[Expr, Expr, Expr]:
        n, c, oh, ow = _split(layout, idx)
        it = oh.dtype
        ih, iw = oh * const(sh, it) - const(pads[0], it) + ri, ow * const(sw, it) - const(pads[2], it) + rj
        zero = const(0, it)
        inside = And(And(GE(ih, zero), LT(ih, _like(h, it))), And(GE(iw, zero), LT(iw, _like(w, it))))
        return _read_padded(x, layout, n, c, ih, iw,
                            const(-math.inf, x.dtype)), inside, ri * const(kw, it) + rj

    mh, mw = cdsl.reduce_axis(kh), cdsl.reduce_axis(kw)
    top = cdsl.compute(shape, lambda *idx: cdsl.reduce_max(window(idx, mh, mw)[0], [mh, mw]), name + "__max")
    ah, aw = cdsl.reduce_axis(kh), cdsl.reduce_axis(kw)

    def first(*idx: Expr) -> Expr:
        value, inside, pos = window(idx, ah, aw)
        hit = And(inside, EQ(value, top[idx]))
        return cdsl.reduce_min(cdsl.select(hit, pos, const(kh * kw, pos.dtype)), [ah, aw])

    return cdsl.compute(shape, first, name + "__argmax")


def _window_count(attrs: Attrs, oh: Expr, ow: Expr, h: Expr, w: Expr) -> Expr:
    """The forward's divisor of window (oh, ow): its input elements (exclusive) or KH * KW."""
    (kh, kw), (sh, sw), pads = attrs["kernel"], attrs["strides"], attrs["pads"]
    it = oh.dtype
    if not attrs["exclusive"]:
        return const(kh * kw, it)
    h0, w0 = oh * const(sh, it) - const(pads[0], it), ow * const(sw, it) - const(pads[2], it)
    zero = const(0, it)
    rows = cdsl.minimum(h0 + const(kh, it), _like(h, it)) - cdsl.maximum(h0, zero)
    cols = cdsl.minimum(w0 + const(kw, it), _like(w, it)) - cdsl.maximum(w0, zero)
    return cdsl.maximum(rows * cols, const(1, it))


def _pool_grad_compute(ins: Sequence[cdsl.ComputeTensor], attrs: Attrs, out: TensorType,
                       out_name: str) -> cdsl.ComputeTensor:
    x, dy = ins
    layout, (kh, kw), (sh, sw), pads = attrs["data_format"], attrs["kernel"], attrs["strides"], attrs["pads"]
    oh_n, ow_n = attrs["out_hw"]
    _, h, w = _spatial(layout, x.shape)
    is_max = attrs["pooling_type"] == "max"
    first = _first_max(x, attrs, dy.shape, out_name) if is_max else None
    ri, rj = cdsl.reduce_axis(kh), cdsl.reduce_axis(kw)
    acc = accumulator(x.dtype)

    def body(*idx: Expr) -> Expr:
        n, c, ih, iw = _split(layout, idx)
        it = ih.dtype
        p, p_ok = _tap(ih + const(pads[0], it) - ri, sh, oh_n)
        q, q_ok = _tap(iw + const(pads[2], it) - rj, sw, ow_n)
        at = _layout_shape(layout, n, c, p, q)
        grad = cdsl.cast(dy[at], acc)
        if first is None:
            share = grad / cdsl.cast(_window_count(attrs, p, q, h, w), acc)
            return cdsl.reduce_sum(cdsl.select(And(p_ok, q_ok), share, const(0, acc)), [ri, rj])
        routed = And(And(p_ok, q_ok), EQ(first[at], ri * const(kw, it) + rj))
        return cdsl.reduce_sum(cdsl.select(routed, grad, const(0, acc)), [ri, rj])

    return _with_accumulator(out.shape, body, x.dtype, out_name)


def _argmax_compute(ins: Sequence[cdsl.ComputeTensor], attrs: Attrs, out: TensorType,
                    out_name: str) -> cdsl.ComputeTensor:
    x = ins[0]
    layout, (kh, kw), (sh, sw), pads = attrs["data_format"], attrs["kernel"], attrs["strides"], attrs["pads"]
    _, _, w = _spatial(layout, x.shape)
    first = _first_max(x, attrs, out.shape, out_name)

    def flat(*idx: Expr) -> Expr:
        _, _, oh, ow = _split(layout, idx)
        k = cdsl.cast(first[idx], int64)
        row = cdsl.cast(oh, int64) * const(sh, int64) - const(pads[0], int64) + k // const(kw, int64)
        col = cdsl.cast(ow, int64) * const(sw, int64) - const(pads[2], int64) + k % const(kw, int64)
        return cdsl.select(LT(k, const(kh * kw, int64)), row * cdsl.cast(w, int64) + col, const(-1, int64))

    return cdsl.compute(out.shape, flat, out_name)


def _pool_grad_cases(dtype: str) -> list[Case]:
    def pool(xs: tuple[Any, ...], dys: tuple[Any, ...], kind: str, kernel: list[int], **kw: Any) -> Case:
        return Case((Input(xs), Input(dys)), {"pooling_type": kind, "kernel_size": kernel, **kw})
    return [pool((1, 2, 7, 7), (1, 2, 5, 5), "max", [3, 3]),
            pool((1, 2, 7, 7), (1, 2, 4, 4), "avg", [3, 3], stride=[2, 2], padding=[1, 1]),
            pool((2, 3, 6, 5), (2, 3, 4, 5), "avg", [2, 3], stride=[2, 1], padding=[1, 1], exclusive=False),
            pool((1, 2, 8, 7), (1, 2, 3, 3), "max", [3, 3], stride=[2, 2],
                 padding=[0, 0, 0, 1]),  # row 7: no window
            pool((1, 1, 5, 5), (1, 1, 3, 3), "max", [2, 2], stride=[2, 2], ceil_mode=True),
            pool((1, 1, 5, 5), (1, 1, 3, 3), "avg", [2, 2], stride=[2, 2], ceil_mode=True, exclusive=False),
            pool(("S0", 3, 4, 4), ("S0", 3, 1, 1), "avg", [2, 2], global_pooling=True),
            pool((1, 5, 5, 2), (1, 3, 3, 2), "max", [3, 3], stride=[2, 2], padding_algorithm="SAME",
                 data_format="NHWC"),
            pool((2, 6, 5, 3), (2, 3, 3, 3), "avg", [3, 2], stride=[2, 2], padding=[1, 1],
                 data_format="NHWC")]


def _argmax_cases(dtype: str) -> list[Case]:
    def pool(xs: tuple[Any, ...], kernel: list[int], **kw: Any) -> Case:
        return Case((Input(xs),), {"kernel_size": kernel, **kw})
    return [pool((1, 2, 7, 7), [3, 3]),
            pool((1, 2, 8, 7), [3, 3], stride=[2, 2], padding=[0, 0, 0, 1]),
            pool((1, 1, 5, 5), [2, 2], stride=[2, 2], ceil_mode=True),
            pool(("S0", 5, 5, 2), [3, 3], stride=[2, 2], padding_algorithm="SAME", data_format="NHWC")]


_POOL_ATTRS = (attr("kernel_size", int_list), attr("stride", int_list, (1, 1)),
               attr("padding", int_list, (0, 0)),
               attr("ceil_mode", boolean, False))
_POOL_LAYOUT = (attr("global_pooling", boolean, False), attr("data_format", one_of(*_LAYOUTS), "NCHW"))

register(OpDef("pool2d_grad", OpPatternKind.kNonFusible, _pool_grad_infer, _pool_grad_numpy,
               _pool_grad_compute,
               arity=2,
               signature=Signature(
                   (tensor("x"), tensor("dy"), attr("pooling_type", one_of("max", "avg")), *_POOL_ATTRS,
                    attr("exclusive", boolean, True), *_POOL_LAYOUT, attr("adaptive", boolean, False),
                    attr("padding_algorithm", one_of(*_ALGORITHMS), "EXPLICIT")),
                   attrs=_pool_grad_attrs,
                   doc="The gradient of pool2d with respect to x (CINN's pool2d_grad): avg "
                   "spreads each window's dy divided by its divisor, max routes it to the window's first "
                   "maximum."),
               test=OpTest(FLOATS, _pool_grad_cases, rtol=1e-5, atol=1e-6)))
register(OpDef("pool2d_argmax", OpPatternKind.kNonFusible, _argmax_infer, _argmax_numpy,
               _argmax_compute, arity=1,
               signature=Signature(
                   (tensor("x"), *_POOL_ATTRS, *_POOL_LAYOUT,
                    attr("padding_algorithm", one_of(*_ALGORITHMS), "EXPLICIT")),
                   attrs=_argmax_attrs,
                   doc="Where max pool2d finds each window's maximum (the first, in row-major "
                   "window order): int64 h * W + w in x's plane, as PyTorch's max_pool2d indices (-1: no "
                   "element)."),
               test=OpTest(FLOATS, _argmax_cases)))
