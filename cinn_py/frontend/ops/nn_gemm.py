"""`im2col`: the column matrix of a convolution, the B operand of conv2d as a matmul (an op only
passes build; `cinn_py.frontend.conv_gemm` rewrites conv2d into it, a matmul and a reshape).

For an NCHW input x [N, C, H, W], a filter of KH x KW taps, G groups of Cg = C / G channels and
an output plane of OH x OW pixels:

    col[g, (c, i, j), q] = x[n, g * Cg + c, oh * sh + i * dh - pad_top, ow * sw + j * dw - pad_left]
    with q = (n * OH + oh) * RW + ow,   ow < RW (`row_width`, >= OW),

zero where the tap falls in the padding. Row (c, i, j) is `w[o, c, i, j]`'s column of the filter
reshaped to [O, Cg * KH * KW], so conv2d(x, w)[n, o, oh, ow] = (w @ col)[o, q] for ow < OW. The
columns of a row past OW (ow in [OW, RW)) are the windows further right (the zero padding goes on
past the input): outputs the caller drops. They pad the column count to a whole number of register
tiles without a division per element:

- `row_width` RW > OW: the op's loop nest is [G, Cg, KH, KW, N, OH, RW] (G left out for one
  group): rows of contiguous reads, no index division; a reshape views it as the matrix;
- `columns` > N * OH * OW (with RW = OW): the matrix [G, K, columns] itself, zero past N * OH * OW
  (when no row width pads well: a 7x7 plane);
- neither: the [G, Cg, KH, KW, N, OH, OW] nest.

The op is its own group (kNonFusible), so the reshape after it is a view of its buffer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cinn_py.frontend import compute as cdsl
from cinn_py.frontend.ops.base import (Attrs, FrontendError, OpDef, OpPatternKind, SymbolEnv, TensorType,
                                       register)
from cinn_py.frontend.ops.nn_window import _read_padded, _window_numpy
from cinn_py.frontend.ops.shapes import fmt_shape
from cinn_py.ir import LT, Expr, const

__all__ = ["im2col_matrix", "im2col_shape"]


def _pixels(x_shape: Sequence[Any], attrs: Attrs) -> int:
    """Columns of the matrix before `columns` pads it: N * OH * RW."""
    return int(x_shape[0]) * attrs["out_hw"][0] * attrs["row_width"]


def im2col_matrix(x_shape: Sequence[Any], attrs: Attrs) -> tuple[int, ...]:
    """The matrix `im2col(x)` holds: [G, K, columns] ([K, columns] for one group)."""
    (kh, kw), g = attrs["kernel"], attrs["groups"]
    matrix = ((int(x_shape[1]) // g) * kh * kw, attrs["columns"])
    return matrix if g == 1 else (g, *matrix)


def im2col_shape(x_shape: Sequence[Any], attrs: Attrs) -> tuple[int, ...]:
    """The op's output shape (module docstring): the matrix when `columns` pads it, else the
    [G, Cg, KH, KW, N, OH, RW] nest of the same elements."""
    (kh, kw), g, oh = attrs["kernel"], attrs["groups"], attrs["out_hw"][0]
    if attrs["columns"] != _pixels(x_shape, attrs):
        return im2col_matrix(x_shape, attrs)
    shape = (int(x_shape[1]) // g, kh, kw, int(x_shape[0]), oh, attrs["row_width"])
    return shape if g == 1 else (g, *shape)


def _infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    (x,) = ins
    if attrs["data_format"] != "NCHW" or x.ndim != 4 or not all(isinstance(d, int) for d in x.shape):
        raise FrontendError(f"im2col: x must be a static NCHW tensor, got {fmt_shape(x.shape)} "
                            f"({attrs['data_format']})")
    ow, rw, pixels = attrs["out_hw"][1], attrs["row_width"], _pixels(x.shape, attrs)
    if (x.shape[1] % attrs["groups"] or rw < ow or attrs["columns"] < pixels
        or (rw > ow and attrs["columns"] > pixels)):
        raise FrontendError(f"im2col: {x.shape[1]} channels must divide into {attrs['groups']} groups, "
                            "row_width "
                            f"{rw} must be >= OW {ow} and columns {attrs['columns']} >= the {pixels} pixels "
                            "(padding one or the other)")
    return [TensorType(im2col_shape(x.shape, attrs), x.dtype)]


def _numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    (x,) = arrays
    oh, rw = attrs["out_hw"][0], attrs["row_width"]
    # the row's extra pixels as a wider output plane (past the input: its zero padding goes on)
    win, _ = _window_numpy(x, dict(attrs, out_hw=(oh, rw)), 0.0)     # N, C, OH, RW, KH, KW
    matrix = im2col_matrix(x.shape, attrs)
    rows = win.transpose(1, 4, 5, 0, 2, 3).reshape(*matrix[:-1], -1)    # C, KH, KW, N, OH, RW
    out = np.zeros(matrix, x.dtype)
    out[..., :rows.shape[-1]] = rows
    return [out.reshape(im2col_shape(x.shape, attrs))]


def _compute(ins: Sequence[cdsl.ComputeTensor], attrs: Attrs, out: TensorType,
             out_name: str) -> cdsl.ComputeTensor:
    (x,) = ins
    (kh, kw), (sh, sw), (dh, dw), pads = attrs["kernel"], attrs["strides"], attrs["dilations"], attrs["pads"]
    oh_n, ow_n = attrs["out_hw"]
    x_shape = [int(d.value) for d in x.shape]  # type: ignore[union-attr]  # static (checked by _infer)
    cg, plane, pixels = x_shape[1] // attrs["groups"], oh_n * ow_n, _pixels(x_shape, attrs)
    grouped = attrs["groups"] > 1

    def read(g: Expr, c: Expr, i: Expr, j: Expr, n: Expr, oh: Expr, ow: Expr) -> Expr:
        it = oh.dtype
        ih = oh * const(sh, it) + i * const(dh, it) - const(pads[0], it)
        iw = ow * const(sw, it) + j * const(dw, it) - const(pads[2], it)
        return _read_padded(x, "NCHW", n, g * const(cg, it) + c, ih, iw, const(0, x.dtype))

    def planes(*idx: Expr) -> Expr:  # [G,] Cg, KH, KW, N, OH, RW
        g = idx[0] if grouped else const(0, idx[0].dtype)
        return read(g, *idx[int(grouped):])

    def matrix(*idx: Expr) -> Expr:  # [G,] K, columns (RW = OW)
        g, k, q = idx if grouped else (const(0, idx[0].dtype), *idx)
        it = q.dtype

        def c(v: int) -> Expr:
            return const(v, it)
        n = cdsl.minimum(q // c(plane), c(pixels // plane - 1))  # the padding columns read image N-1
        value = read(g, k // c(kh * kw), (k // c(kw)) % c(kh), k % c(kw), n, (q % c(plane)) // c(ow_n),
                     q % c(ow_n))
        return cdsl.select(LT(q, c(pixels)), value, const(0, x.dtype))

    return cdsl.compute(out.shape, planes if attrs["columns"] == pixels else matrix, out_name)


register(OpDef("im2col", OpPatternKind.kNonFusible, _infer, _numpy, _compute, arity=1))
