"""The backward ops of conv2d (CINN's conv2d conv_type "backward_data" / "backward_filter"):
`conv2d_grad_data`, `conv2d_grad_filter`, and the helpers they share with pool2d's backward
(`nn_pool_grad`: `pool2d_grad`, `pool2d_argmax`).

Each is a direct computation like its forward op (nn.py, whose window geometry it shares): one
reduction nest per output element, kNonFusible, accumulating 16-bit floats in float32.

- `conv2d_grad_data(dy, w)`: dx[n, c, h, w] sums dy * w over the output channels of c's group
  and the filter taps (i, j) whose window reaches (h, w): h + pad_top - i * dilation must be a
  non-negative multiple of the stride below OH * stride. Rows and columns that no window reaches
  (the input's tail when (H + pads - span) is not divisible by the stride) get zero.
- `conv2d_grad_filter(x, dy)`: dw[o, c, i, j] sums dy[n, o, p, q] * x at the tap's padded position
  over the batch and the output plane (the padding contributes zero).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cinn_py.frontend import compute as cdsl
from cinn_py.frontend.ops.base import (
    Attrs, FrontendError, OpDef, OpPatternKind, SymbolEnv, TensorType, register,
)
from cinn_py.frontend.ops.nn import accumulator_np
from cinn_py.frontend.ops.nn_window import (
    _LAYOUTS, _layout_shape, _read_padded, _spatial, _split, _to_layout, _window_attrs, _window_numpy,
)
from cinn_py.frontend.ops.reduce import accumulator
from cinn_py.frontend.ops.shapes import dims_equal, fmt_shape
from cinn_py.frontend.ops.signature import Signature, attr, int_list, integer, one_of, tensor
from cinn_py.frontend.ops.testing import FLOATS, Case, Input, OpTest
from cinn_py.ir import EQ, GE, LE, And, DType, Expr, IntImm, const

_ALGORITHMS = ("EXPLICIT", "SAME", "VALID")


# ---------------------------------------------------------------------------------------------------------
# shared helpers
# ---------------------------------------------------------------------------------------------------------
def _check_out_hw(method: str, dy: TensorType, attrs: Attrs) -> None:
    """dy's spatial dims must be the forward output's, which the window geometry determines."""
    _, oh, ow = _spatial(attrs["data_format"], dy.shape)
    if (oh, ow) != tuple(attrs["out_hw"]):
        raise FrontendError(f"{method}: dy {fmt_shape(dy.shape)} ({attrs['data_format']}) must have the "
                            "forward "
                            f"output's spatial dims {list(attrs['out_hw'])} (from the input size, window, "
                            "strides "
                            f"and paddings), got {[oh, ow]}")


def _tap(t: Expr, stride: int, extent: int) -> tuple[Expr, Expr]:
    """The output row reached from the input row offset `t` (= h + pad - i * dilation) and whether
    one is: t >= 0, t % stride == 0, t / stride < extent. The row is clamped into [0, extent)."""
    it = t.dtype
    zero = const(0, it)
    valid = And(GE(t, zero), LE(t, const((extent - 1) * stride, it)))
    if stride > 1:
        valid = And(valid, EQ(t % const(stride, it), zero))
    row = cdsl.maximum(t, zero) if stride == 1 else cdsl.maximum(t, zero) // const(stride, it)
    return cdsl.minimum(row, const(extent - 1, it)), valid


def _with_accumulator(shape: Sequence[Any], body: Any, dtype: DType, out_name: str) -> cdsl.ComputeTensor:
    """`body` (a sum in the accumulator dtype) as the output, cast to `dtype` when they differ."""
    if accumulator(dtype) == dtype:
        return cdsl.compute(shape, body, out_name)
    total = cdsl.compute(shape, body, out_name + "__acc")
    return cdsl.compute(shape, lambda *i: cdsl.cast(total[i], dtype), out_name)


def _nchw(a: np.ndarray, layout: str) -> np.ndarray:
    return a.transpose(0, 3, 1, 2) if layout == "NHWC" else a


def _static_dim(dim: Any) -> int:
    assert isinstance(dim, (int, IntImm)), dim  # channel and filter dims are static (checked by infer)
    return dim if isinstance(dim, int) else dim.value


# ---------------------------------------------------------------------------------------------------------
# conv2d_grad_data
# ---------------------------------------------------------------------------------------------------------
def _conv_geometry(method: str, x: TensorType, kernel: tuple[int, int], at: dict[str, Any]) -> dict[str, Any]:
    attrs = _window_attrs(method, x, kernel, at["strides"], at["paddings"], at["dilations"],
                          at["padding_algorithm"], at["data_format"])
    if at["groups"] < 1:
        raise FrontendError(f"{method}: argument 'groups' must be >= 1, got {at['groups']}")
    attrs["groups"] = at["groups"]
    return attrs


def _data_attrs(ins: Sequence[TensorType], at: dict[str, Any]) -> dict[str, Any]:
    dy, w = ins
    layout = at["data_format"]
    if w.ndim != 4 or not all(isinstance(d, int) for d in w.shape) or dy.ndim != 4:
        raise FrontendError("conv2d_grad_data: dy must be 4-d and w a static 4-d [C_out, C_in / groups, KH, "
                            "KW] "
                            f"filter, got {fmt_shape(dy.shape)} and {fmt_shape(w.shape)}")
    if len(at["input_size"]) != 2 or min(at["input_size"]) < 1:
        raise FrontendError(f"conv2d_grad_data: argument 'input_size' must be [H, W] (>= 1), got "
                            f"{list(at['input_size'])}")
    h, wd = at["input_size"]
    x = TensorType(_layout_shape(layout, dy.shape[0], _static_dim(w.shape[1]) * at["groups"], h, wd),
                   dy.dtype)
    attrs = _conv_geometry("conv2d_grad_data", x, (_static_dim(w.shape[2]), _static_dim(w.shape[3])), at)
    attrs["input_hw"] = (h, wd)
    return attrs


def _data_infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    dy, w = ins
    layout, groups = attrs["data_format"], attrs["groups"]
    if dy.dtype != w.dtype or not dy.dtype.is_float:
        raise FrontendError(f"conv2d_grad_data: dy and w must have one floating-point dtype, got {dy.dtype} "
                            "and "
                            f"{w.dtype}")
    c_out, _, _ = _spatial(layout, dy.shape)
    if not dims_equal(c_out, w.shape[0]) or _static_dim(w.shape[0]) % groups:
        raise FrontendError(f"conv2d_grad_data: dy {fmt_shape(dy.shape)} ({layout}) must have the filter's "
                            f"{w.shape[0]} output channels, divisible by groups={groups}")
    _check_out_hw("conv2d_grad_data", dy, attrs)
    h, wd = attrs["input_hw"]
    return [TensorType(_layout_shape(layout, dy.shape[0], _static_dim(w.shape[1]) * groups, h, wd), dy.dtype)]


def _data_numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    dy, w = arrays
    acc = accumulator_np(dy.dtype)
    g, (h, wd), (t, b, left, right) = attrs["groups"], attrs["input_hw"], attrs["pads"]
    (kh, kw), (sh, sw) = attrs["kernel"], attrs["strides"]
    (dh, dw), (oh, ow) = attrs["dilations"], attrs["out_hw"]
    d = _nchw(dy, attrs["data_format"]).astype(acc)
    cg, og = w.shape[1], w.shape[0] // g
    dxp = np.zeros((d.shape[0], cg * g, h + t + b, wd + left + right), acc)
    for k in range(g):
        for i in range(kh):
            for j in range(kw):
                rows = slice(i * dh, i * dh + (oh - 1) * sh + 1, sh)
                cols = slice(j * dw, j * dw + (ow - 1) * sw + 1, sw)
                dxp[:, k * cg:(k + 1) * cg, rows, cols] += np.einsum(
                    "nohw,oc->nchw", d[:, k * og:(k + 1) * og], w[k * og:(k + 1) * og, :, i, j].astype(acc))
    return [_to_layout(dxp[:, :, t:t + h, left:left + wd], attrs["data_format"]).astype(dy.dtype)]


def _data_compute(ins: Sequence[cdsl.ComputeTensor], attrs: Attrs, out: TensorType,
                  out_name: str) -> cdsl.ComputeTensor:
    dy, w = ins
    layout, (kh, kw), groups = attrs["data_format"], attrs["kernel"], attrs["groups"]
    (sh, sw), (dh, dw), pads, (oh_n,
                               ow_n) = attrs["strides"], attrs["dilations"], attrs["pads"], attrs["out_hw"]
    cg, og = _static_dim(w.shape[1]), _static_dim(w.shape[0]) // groups
    ro, rh, rw = cdsl.reduce_axis(og), cdsl.reduce_axis(kh), cdsl.reduce_axis(kw)
    acc = accumulator(dy.dtype)

    def body(*idx: Expr) -> Expr:
        n, c, h, x_w = _split(layout, idx)
        it = h.dtype
        o = ro if groups == 1 else (c // const(cg, it)) * const(og, it) + ro
        local = c if groups == 1 else (const(0, it) if cg == 1 else c % const(cg, it))
        p, p_ok = _tap(h + const(pads[0], it) - rh * const(dh, it), sh, oh_n)
        q, q_ok = _tap(x_w + const(pads[2], it) - rw * const(dw, it), sw, ow_n)
        value = cdsl.select(And(p_ok, q_ok), dy[_layout_shape(layout, n, o, p, q)], const(0, dy.dtype))
        return cdsl.reduce_sum(cdsl.cast(value, acc) * cdsl.cast(w[o, local, rh, rw], acc), [ro, rh, rw])

    return _with_accumulator(out.shape, body, dy.dtype, out_name)


def _data_cases(dtype: str) -> list[Case]:
    def grad(dys: tuple[Any, ...], ws: tuple[int, ...], size: list[int], **kw: Any) -> Case:
        return Case((Input(dys, low=-1.0, high=1.0), Input(ws, low=-1.0, high=1.0), size), kw)
    return [grad((1, 4, 5, 5), (4, 3, 3, 3), [7, 7]),
            grad((2, 3, 2, 7), (3, 2, 3, 2), [6, 6], strides=[2, 1], paddings=[0, 1]),   # row 5: no window
            grad((1, 4, 4, 6), (4, 2, 3, 3), [6, 6], groups=2, dilations=[2, 1], paddings=[1, 1, 2, 0]),
            grad(("S0", 2, 5, 5), (2, 3, 1, 1), [5, 5]),
            grad((1, 3, 3, 12), (12, 1, 3, 3), [5, 5], groups=6, strides=[2, 2], padding_algorithm="SAME",
                 data_format="NHWC"),                                                       # depthwise x2
            grad((1, 2, 2, 4), (4, 3, 2, 2), [8, 7], strides=[3, 3], dilations=[2, 2], data_format="NHWC")]


# conv2d's window attributes, as both backward ops take them (the forward's, resolved by the rule)
_CONV_WINDOW_ATTRS = (attr("strides", int_list, (1, 1)), attr("paddings", int_list, (0, 0)),
                      attr("dilations", int_list, (1, 1)), attr("groups", integer, 1),
                      attr("data_format", one_of(*_LAYOUTS), "NCHW"),
                      attr("padding_algorithm", one_of(*_ALGORITHMS), "EXPLICIT"))


register(OpDef("conv2d_grad_data", OpPatternKind.kNonFusible, _data_infer, _data_numpy,
               _data_compute, arity=2,
               signature=Signature(
                   (tensor("dy"), tensor("w"), attr("input_size", int_list), *_CONV_WINDOW_ATTRS),
                   attrs=_data_attrs, doc="The gradient of conv2d with respect to x (CINN's conv_type "
                   "'backward_data'): the transposed convolution of dy by w onto the input size [H, W]."),
               test=OpTest(FLOATS, _data_cases, rtol=1e-4, atol=1e-5)))


# ---------------------------------------------------------------------------------------------------------
# conv2d_grad_filter
# ---------------------------------------------------------------------------------------------------------
def _filter_attrs(ins: Sequence[TensorType], at: dict[str, Any]) -> dict[str, Any]:
    x, _ = ins
    if len(at["filter_size"]) != 2 or min(at["filter_size"]) < 1:
        raise FrontendError(f"conv2d_grad_filter: argument 'filter_size' must be [KH, KW] (>= 1), got "
                            f"{list(at['filter_size'])}")
    kh, kw = at["filter_size"]
    return _conv_geometry("conv2d_grad_filter", x, (kh, kw), at)


def _filter_infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    x, dy = ins
    layout, groups = attrs["data_format"], attrs["groups"]
    if x.dtype != dy.dtype or not x.dtype.is_float or dy.ndim != 4:
        raise FrontendError(f"conv2d_grad_filter: x and dy must be 4-d with one floating-point dtype, got "
                            f"{x.dtype}{fmt_shape(x.shape)} and {dy.dtype}{fmt_shape(dy.shape)}")
    c, _, _ = _spatial(layout, x.shape)
    c_out, _, _ = _spatial(layout, dy.shape)
    if not isinstance(c, int) or not isinstance(c_out, int) or c % groups or c_out % groups \
            or not dims_equal(x.shape[0], dy.shape[0]):
        raise FrontendError(f"conv2d_grad_filter: x {fmt_shape(x.shape)} and dy {fmt_shape(dy.shape)} "
                            f"({layout}) "
                            f"must have one batch and static channel counts divisible by groups={groups}")
    _check_out_hw("conv2d_grad_filter", dy, attrs)
    return [TensorType((c_out, c // groups, *attrs["kernel"]), x.dtype)]


def _filter_numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    x, dy = arrays
    acc = accumulator_np(x.dtype)
    win, _ = _window_numpy(x.astype(acc), attrs, 0.0)           # N, C, OH, OW, KH, KW
    d = _nchw(dy, attrs["data_format"]).astype(acc)
    g = attrs["groups"]
    cg, og = win.shape[1] // g, d.shape[1] // g
    parts = [np.einsum("nchwij,nohw->ocij", win[:, k * cg:(k + 1) * cg], d[:, k * og:(k + 1) * og])
             for k in range(g)]
    return [np.concatenate(parts, axis=0).astype(x.dtype)]


def _filter_compute(ins: Sequence[cdsl.ComputeTensor], attrs: Attrs, out: TensorType,
                    out_name: str) -> cdsl.ComputeTensor:
    x, dy = ins
    layout, groups = attrs["data_format"], attrs["groups"]
    (sh, sw), (dh, dw), pads, (oh_n,
                               ow_n) = attrs["strides"], attrs["dilations"], attrs["pads"], attrs["out_hw"]
    cg, og = _static_dim(out.shape[1]), _static_dim(out.shape[0]) // groups
    rn, rp, rq = cdsl.reduce_axis(dy.shape[0]), cdsl.reduce_axis(oh_n), cdsl.reduce_axis(ow_n)
    acc = accumulator(x.dtype)

    def body(o: Expr, local: Expr, i: Expr, j: Expr) -> Expr:
        it = o.dtype
        cin = local if groups == 1 else (o // const(og, it)) * const(cg, it) + local
        ih = rp * const(sh, it) + i * const(dh, it) - const(pads[0], it)
        iw = rq * const(sw, it) + j * const(dw, it) - const(pads[2], it)
        value = _read_padded(x, layout, rn, cin, ih, iw, const(0, x.dtype))
        grad = dy[_layout_shape(layout, rn, o, rp, rq)]
        return cdsl.reduce_sum(cdsl.cast(grad, acc) * cdsl.cast(value, acc), [rn, rp, rq])

    return _with_accumulator(out.shape, body, x.dtype, out_name)


def _filter_cases(dtype: str) -> list[Case]:
    def grad(xs: tuple[Any, ...], dys: tuple[Any, ...], size: list[int], **kw: Any) -> Case:
        return Case((Input(xs, low=-1.0, high=1.0), Input(dys, low=-1.0, high=1.0), size), kw)
    return [grad((1, 3, 7, 7), (1, 4, 5, 5), [3, 3]),
            grad((2, 2, 6, 6), (2, 3, 2, 7), [3, 2], strides=[2, 1], paddings=[0, 1]),
            grad((1, 4, 6, 6), (1, 4, 4, 6), [3, 3], groups=2, dilations=[2, 1], paddings=[1, 1, 2, 0]),
            grad(("S0", 3, 5, 5), ("S0", 2, 5, 5), [1, 1]),
            grad((1, 5, 5, 6), (1, 3, 3, 12), [3, 3], groups=6, strides=[2, 2], padding_algorithm="SAME",
                 data_format="NHWC"),
            grad((2, 8, 7, 3), (2, 2, 2, 4), [2, 2], strides=[3, 3], dilations=[2, 2], data_format="NHWC")]


register(OpDef("conv2d_grad_filter", OpPatternKind.kNonFusible, _filter_infer, _filter_numpy, _filter_compute,
               arity=2,
               signature=Signature(
                   (tensor("x"), tensor("dy"), attr("filter_size", int_list), *_CONV_WINDOW_ATTRS),
                   attrs=_filter_attrs,
                   doc="The gradient of conv2d with respect to its filter (CINN's conv_type "
                   "'backward_filter'): [C_out, C_in / groups, KH, KW] correlations of x with dy."),
               test=OpTest(FLOATS, _filter_cases, rtol=1e-4, atol=1e-5)))
