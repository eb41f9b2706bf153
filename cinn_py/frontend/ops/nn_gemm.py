"""`im2col`: the column matrix of a convolution, the B operand of conv2d as a matmul (an op only
passes build; `cinn_py.frontend.conv_gemm` rewrites conv2d into it, a matmul and a reshape).

For an NCHW input x [N, C, H, W], a filter of KH x KW taps, G groups of Cg = C / G channels and
an output plane of P = OH * OW pixels:

    col[g, (c, i, j), q] = x[n, g * Cg + c, oh * sh + i * dh - pad_top, ow * sw + j * dw - pad_left]
    with q = n * P + oh * OW + ow,

zero where the tap falls in the padding and for the columns past N * P (`columns` rounds the
column count up to a whole number of vectors, so the matmul's register tile has no tail guard).
Row (c, i, j) is `w[o, c, i, j]`'s column of the filter reshaped to [O, Cg * KH * KW], so

    conv2d(x, w)[n, o, oh, ow] = (reshape(w, [G, O / G, K]) @ col)[g, o % (O / G), q].

The op is injective (one clamped, padded read per element), so it fuses with the elementwise
ops that produce x (the previous layer's activation).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cinn_py.frontend import compute as cdsl
from cinn_py.frontend.ops.base import Attrs, FrontendError, OpDef, OpPatternKind, SymbolEnv, TensorType, register
from cinn_py.frontend.ops.nn import _read_padded, _spatial, _window_numpy
from cinn_py.frontend.ops.shapes import fmt_shape
from cinn_py.ir import LT, Expr, const

__all__ = ["im2col_shape"]


def im2col_shape(x_shape: Sequence[Any], attrs: Attrs) -> tuple[int, ...]:
    """[G, Cg * KH * KW, columns] of `im2col(x)` for the NCHW shape `x_shape` ([K, columns] for one
    group: the operand of a plain matmul)."""
    (kh, kw), g = attrs["kernel"], attrs["groups"]
    k = (int(x_shape[1]) // g) * kh * kw
    return (k, attrs["columns"]) if g == 1 else (g, k, attrs["columns"])


def _pixels(x_shape: Sequence[Any], attrs: Attrs) -> int:
    oh, ow = attrs["out_hw"]
    return int(x_shape[0]) * oh * ow


def _infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    (x,) = ins
    if attrs["data_format"] != "NCHW" or x.ndim != 4 or not all(isinstance(d, int) for d in x.shape):
        raise FrontendError(f"im2col: x must be a static NCHW tensor, got {fmt_shape(x.shape)} "
                            f"({attrs['data_format']})")
    if x.shape[1] % attrs["groups"] or attrs["columns"] < _pixels(x.shape, attrs):
        raise FrontendError(f"im2col: {x.shape[1]} channels must divide into {attrs['groups']} groups and "
                            f"columns {attrs['columns']} must cover the {_pixels(x.shape, attrs)} output pixels")
    return [TensorType(im2col_shape(x.shape, attrs), x.dtype)]


def _numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    (x,) = arrays
    win, _ = _window_numpy(x, attrs, 0.0)                        # N, C, OH, OW, KH, KW
    shape = im2col_shape(x.shape, attrs)
    rows = win.transpose(1, 4, 5, 0, 2, 3).reshape(*shape[:-1], -1)    # C, KH, KW, N, OH, OW
    out = np.zeros(shape, x.dtype)
    out[..., :rows.shape[-1]] = rows
    return [out]


def _compute(ins: Sequence[cdsl.ComputeTensor], attrs: Attrs, out: TensorType, out_name: str) -> cdsl.ComputeTensor:
    (x,) = ins
    (kh, kw), (sh, sw), (dh, dw), pads = attrs["kernel"], attrs["strides"], attrs["dilations"], attrs["pads"]
    oh_n, ow_n = attrs["out_hw"]
    cg = int(_spatial("NCHW", x.shape)[0].value) // attrs["groups"]  # type: ignore[union-attr]
    plane, pixels = oh_n * ow_n, _pixels([d.value for d in x.shape], attrs)  # type: ignore[union-attr]

    def body(*idx: Expr) -> Expr:
        g, k, q = idx if len(idx) == 3 else (const(0, idx[0].dtype), *idx)
        it = q.dtype

        def c(v: int) -> Expr:
            return const(v, it)
        n = cdsl.minimum(q // c(plane), c(pixels // plane - 1))  # the padding columns read image N-1
        oh, ow = (q % c(plane)) // c(ow_n), q % c(ow_n)
        chan, i, j = g * c(cg) + k // c(kh * kw), (k // c(kw)) % c(kh), k % c(kw)
        ih = oh * c(sh) + i * c(dh) - c(pads[0])
        iw = ow * c(sw) + j * c(dw) - c(pads[2])
        value = _read_padded(x, "NCHW", n, chan, ih, iw, const(0, x.dtype))
        if attrs["columns"] == pixels:
            return value
        return cdsl.select(LT(q, c(pixels)), value, const(0, x.dtype))

    return cdsl.compute(out.shape, body, out_name)


register(OpDef("im2col", OpPatternKind.kInjective, _infer, _numpy, _compute, arity=1))
