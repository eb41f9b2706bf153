"""Sliding-window neural-network ops: `conv2d` and `pool2d` (NCHW/NHWC, direct computes: one loop
nest per output element, no im2col or Winograd). Their window geometry is `nn_window`; `batchnorm`
is `nn_norm`; `arange` and the random generators are `generators`.

conv2d and pool2d are kNonFusible: each is its own group, lowered as one reduction over the
window (and the input channels). Padding never reads outside the input: every window element
reads a clamped index and `select`s the padding value where the unclamped index is out of
bounds (a backend may evaluate both `select` arms).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from cinn_py.frontend import compute as cdsl
from cinn_py.frontend.ops import testing
from cinn_py.frontend.ops.base import (
    Attrs, FrontendError, OpDef, OpPatternKind, SymbolEnv, TensorType, check_operand_dtype,
    register,
)
from cinn_py.frontend.ops.nn_window import (
    _LAYOUTS, _layout_shape, _like, _pair, _read_padded, _spatial, _split, _static_hw, _to_layout,
    _window_attrs, _window_numpy,
)
from cinn_py.frontend.ops.reduce import accumulator
from cinn_py.frontend.ops.reference import fold_extreme
from cinn_py.frontend.ops.shapes import fmt_shape
from cinn_py.frontend.ops.signature import Signature, attr, boolean, int_list, integer, one_of, tensor
from cinn_py.frontend.ops.testing import Case, Input, OpTest
from cinn_py.ir import Expr, IntImm, const


# ---------------------------------------------------------------------------------------------------------
# conv2d
# ---------------------------------------------------------------------------------------------------------
def _conv_attrs(ins: Sequence[TensorType], at: dict[str, Any]) -> dict[str, Any]:
    x, w = ins
    layout = at["data_format"]
    if w.ndim != 4 or not all(isinstance(d, int) for d in w.shape):
        raise FrontendError(f"conv2d: w must be a static 4-d [C_out, C_in / groups, KH, KW] filter, got "
                            f"{fmt_shape(w.shape)}")
    kh, kw = w.shape[2], w.shape[3]
    assert isinstance(kh, int) and isinstance(kw, int)  # checked static above
    attrs = _window_attrs("conv2d", x, (kh, kw), at["strides"], at["paddings"], at["dilations"],
                          at["padding_algorithm"], layout)
    attrs["groups"] = at["groups"]
    return attrs


def _conv_infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    x, w = ins
    if x.dtype != w.dtype or not x.dtype.is_float:
        raise FrontendError(f"conv2d: x and w must have one floating-point dtype, got {x.dtype} and "
                            f"{w.dtype}")
    c, _, _ = _spatial(attrs["data_format"], x.shape)
    groups = attrs["groups"]
    if not isinstance(c, int) or groups < 1 or c % groups or w.shape[0] % groups or w.shape[1] * groups != c:
        raise FrontendError(f"conv2d: x {fmt_shape(x.shape)} ({attrs['data_format']}) has {c} channels; with "
                            f"groups={groups} the filter {fmt_shape(w.shape)} must be [C_out, {c}/groups, "
                            "KH, KW] "
                            "with C_out divisible by groups")
    oh, ow = attrs["out_hw"]
    return [TensorType(_layout_shape(attrs["data_format"], x.shape[0], w.shape[0], oh, ow), x.dtype)]


def _conv_numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    x, w = arrays
    acc = accumulator_np(x.dtype)
    win, _ = _window_numpy(x.astype(acc), attrs, 0.0)           # N, C, OH, OW, KH, KW
    g, cout = attrs["groups"], w.shape[0]
    cg, og = w.shape[1], cout // g
    parts = [np.einsum("nchwij,ocij->nohw", win[:, k * cg:(k + 1) * cg], w[k * og:(k + 1) * og].astype(acc))
             for k in range(g)]
    return [_to_layout(np.concatenate(parts, axis=1), attrs["data_format"]).astype(x.dtype)]


def accumulator_np(d: np.dtype[Any]) -> Any:
    from cinn_py.ir import dtype_of  # noqa: PLC0415

    return accumulator(dtype_of(d)).to_numpy()


def _conv_compute(ins: Sequence[cdsl.ComputeTensor], attrs: Attrs, out: TensorType,
                  out_name: str) -> cdsl.ComputeTensor:
    x, w = ins
    layout, (kh, kw) = attrs["data_format"], attrs["kernel"]
    (sh, sw), (dh, dw), pads = attrs["strides"], attrs["dilations"], attrs["pads"]
    cg, og = w.shape[1], _static(w.shape[0]) // attrs["groups"]
    rc, rh, rw = cdsl.reduce_axis(cg), cdsl.reduce_axis(kh), cdsl.reduce_axis(kw)
    acc = accumulator(x.dtype)

    def body(*idx: Expr) -> Expr:
        n, o, oh, ow = _split(layout, idx)
        it = oh.dtype
        cin = rc if attrs["groups"] == 1 else (o // const(og, it)) * _like(cg, it) + rc
        ih = oh * const(sh, it) + rh * const(dh, it) - const(pads[0], it)
        iw = ow * const(sw, it) + rw * const(dw, it) - const(pads[2], it)
        value = _read_padded(x, layout, n, cin, ih, iw, const(0, x.dtype))
        return cdsl.reduce_sum(cdsl.cast(value, acc) * cdsl.cast(w[o, rc, rh, rw], acc), [rc, rh, rw])

    if acc == x.dtype:
        return cdsl.compute(out.shape, body, out_name)
    total = cdsl.compute(out.shape, body, out_name + "__acc")
    return cdsl.compute(out.shape, lambda *i: cdsl.cast(total[i], x.dtype), out_name)


def _static(dim: Expr) -> int:
    assert isinstance(dim, IntImm), dim  # conv2d's filter is static (checked by _conv_attrs)
    return dim.value


def _conv_cases(dtype: str) -> list[Case]:
    def conv(xs: tuple[Any, ...], ws: tuple[int, ...], **kw: Any) -> Case:
        return Case((Input(xs, low=-1.0, high=1.0), Input(ws, low=-1.0, high=1.0)), kw)
    return [conv((1, 3, 7, 7), (4, 3, 3, 3)),
            conv((2, 2, 5, 6), (3, 2, 3, 2), strides=[2, 1], paddings=[1, 0]),
            conv((1, 4, 6, 6), (4, 2, 3, 3), groups=2, dilations=[2, 1], paddings=[1, 1, 2, 0]),
            conv(("S0", 3, 5, 5), (2, 3, 1, 1)),
            conv((1, 5, 5, 3), (2, 3, 3, 3), data_format="NHWC", padding_algorithm="SAME", strides=[2, 2]),
            conv((1, 1, 4, 4), (1, 1, 3, 3), padding_algorithm="VALID"),
            conv((2, 6, 8, 7), (12, 1, 3, 3), groups=6,
                 strides=[2, 2]),  # depthwise x2; no window reaches row 7
            conv((1, 6, 5, 4), (4, 2, 2, 3), groups=2, dilations=[1, 2], strides=[1, 2],
                 paddings=[0, 1, 1, 0],
                 data_format="NHWC")]


register(OpDef("conv2d", OpPatternKind.kNonFusible, _conv_infer, _conv_numpy, _conv_compute, arity=2,
               signature=Signature(
                   (tensor("x"), tensor("w"), attr("strides", int_list, (1, 1)),
                    attr("paddings", int_list, (0, 0)),
                    attr("dilations", int_list, (1, 1)), attr("groups", integer, 1),
                    attr("data_format", one_of(*_LAYOUTS), "NCHW"),
                    attr("padding_algorithm", one_of("EXPLICIT", "SAME", "VALID"), "EXPLICIT")),
                   attrs=_conv_attrs, doc="2-d convolution (cross-correlation) of x by the filter w "
                   "[C_out, C_in / groups, KH, KW]; a direct loop nest."),
               test=OpTest(("float32", "float16", "bfloat16", "float64"), _conv_cases, rtol=1e-4, atol=1e-5)))


# ---------------------------------------------------------------------------------------------------------
# pool2d
# ---------------------------------------------------------------------------------------------------------
def _pool_attrs(ins: Sequence[TensorType], at: dict[str, Any]) -> dict[str, Any]:
    x = ins[0]
    layout = at["data_format"]
    if at["adaptive"]:
        raise FrontendError("pool2d: argument 'adaptive' = True is not supported (expected False)")
    if at["global_pooling"]:
        if x.ndim != 4:
            raise FrontendError(f"pool2d: x must have rank 4 ({layout}), got {fmt_shape(x.shape)}")
        kernel = _static_hw("pool2d", x, layout)
        strides, paddings, algorithm = (1, 1), (0, 0), "EXPLICIT"
    else:
        kh, kw = _pair("pool2d", "kernel_size", at["kernel_size"])
        kernel = (kh, kw)
        strides, paddings, algorithm = at["stride"], at["padding"], at["padding_algorithm"]
    if min(kernel) < 1:
        raise FrontendError(f"pool2d: argument 'kernel_size' entries must be >= 1, got {list(kernel)}")
    attrs = _window_attrs("pool2d", x, kernel, strides, paddings, (1, 1), algorithm, layout, at["ceil_mode"])
    attrs.update(pooling_type=at["pooling_type"], exclusive=at["exclusive"])
    return attrs


def _pool_infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    x = ins[0]
    check_operand_dtype("pool2d", "x", x.dtype, "floating-point")
    c, _, _ = _spatial(attrs["data_format"], x.shape)
    oh, ow = attrs["out_hw"]
    return [TensorType(_layout_shape(attrs["data_format"], x.shape[0], c, oh, ow), x.dtype)]


def _pool_numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    x = arrays[0]
    if attrs["pooling_type"] == "max":
        win, _ = _window_numpy(x, attrs, -np.inf)
        # CINN's NaN rule in the kernel's window order (kh, kw), from -inf (the padding value)
        return [_to_layout(fold_extreme(win, (4, 5), False, True), attrs["data_format"]).astype(x.dtype)]
    acc = accumulator_np(x.dtype)
    win, inside = _window_numpy(x.astype(acc), attrs, 0.0)
    count = inside.sum(axis=(2, 3)) if attrs["exclusive"] else np.full(inside.shape[:2], inside[0, 0].size)
    y = win.sum(axis=(4, 5)) / np.maximum(count, 1).astype(acc)
    return [_to_layout(y, attrs["data_format"]).astype(x.dtype)]


def _pool_compute(ins: Sequence[cdsl.ComputeTensor], attrs: Attrs, out: TensorType,
                  out_name: str) -> cdsl.ComputeTensor:
    x = ins[0]
    layout, (kh, kw), (sh, sw), pads = attrs["data_format"], attrs["kernel"], attrs["strides"], attrs["pads"]
    rh, rw = cdsl.reduce_axis(kh), cdsl.reduce_axis(kw)
    is_max = attrs["pooling_type"] == "max"
    acc = x.dtype if is_max else accumulator(x.dtype)

    def corner(oh: Expr, ow: Expr) -> tuple[Expr, Expr]:
        it = oh.dtype
        return oh * const(sh, it) - const(pads[0], it), ow * const(sw, it) - const(pads[2], it)

    def body(*idx: Expr) -> Expr:
        n, c, oh, ow = _split(layout, idx)
        h0, w0 = corner(oh, ow)
        pad = const(-math.inf if is_max else 0, x.dtype)
        value = cdsl.cast(_read_padded(x, layout, n, c, h0 + rh, w0 + rw, pad), acc)
        return cdsl.reduce_max(value, [rh, rw]) if is_max else cdsl.reduce_sum(value, [rh, rw])

    if is_max:
        return cdsl.compute(out.shape, body, out_name)
    total = cdsl.compute(out.shape, body, out_name + "__sum")
    _, h, w = _spatial(layout, x.shape)

    def average(*idx: Expr) -> Expr:
        _, _, oh, ow = _split(layout, idx)
        if not attrs["exclusive"]:
            return cdsl.cast(total[idx] / const(float(kh * kw), acc), x.dtype)
        h0, w0 = corner(oh, ow)
        it = oh.dtype
        zero = const(0, it)
        rows = cdsl.minimum(h0 + const(kh, it), _like(h, it)) - cdsl.maximum(h0, zero)
        cols = cdsl.minimum(w0 + const(kw, it), _like(w, it)) - cdsl.maximum(w0, zero)
        count = cdsl.maximum(rows * cols, const(1, it))
        return cdsl.cast(total[idx] / cdsl.cast(count, acc), x.dtype)

    return cdsl.compute(out.shape, average, out_name)


def _pool_cases(dtype: str) -> list[Case]:
    def pool(xs: tuple[Any, ...], kind: str, kernel: list[int], **kw: Any) -> Case:
        return Case((Input(xs),), {"pooling_type": kind, "kernel_size": kernel, **kw})
    return [pool((1, 2, 7, 7), "max", [3, 3]),
            pool((1, 2, 7, 7), "avg", [3, 3], stride=[2, 2], padding=[1, 1]),
            pool((2, 3, 6, 5), "avg", [2, 3], stride=[2, 1], padding=[1, 1], exclusive=False),
            pool((1, 1, 5, 5), "max", [2, 2], stride=[2, 2], ceil_mode=True),
            pool((1, 1, 5, 5), "avg", [2, 2], stride=[2, 2], ceil_mode=True),
            pool(("S0", 3, 4, 4), "avg", [2, 2], global_pooling=True),
            pool((1, 5, 5, 2), "max", [3, 3], stride=[2, 2], padding_algorithm="SAME", data_format="NHWC"),
            pool((2, 6, 5, 3), "avg", [3, 2], stride=[2, 2], padding=[1, 0, 1, 1], ceil_mode=True,
                 exclusive=False,
                 data_format="NHWC")]


register(OpDef("pool2d", OpPatternKind.kNonFusible, _pool_infer, _pool_numpy, _pool_compute, arity=1,
               signature=Signature(
                   (tensor("x"), attr("pooling_type", one_of("max", "avg")), attr("kernel_size", int_list),
                    attr("stride", int_list, (1, 1)), attr("padding", int_list, (0, 0)),
                    attr("ceil_mode", boolean, False), attr("exclusive", boolean, True),
                    attr("global_pooling", boolean, False), attr("data_format", one_of(*_LAYOUTS), "NCHW"),
                    attr("adaptive", boolean, False),
                    attr("padding_algorithm", one_of("EXPLICIT", "SAME", "VALID"), "EXPLICIT")),
                   attrs=_pool_attrs, doc="2-d max / average pooling (exclusive: padding is not counted)."),
               test=OpTest(testing.FLOATS, _pool_cases, rtol=1e-5, atol=1e-6)))
