"""Neural-network ops: `conv2d`, `pool2d` (NCHW/NHWC, direct computes: one loop nest per output
element, no im2col or Winograd), `batchnorm` (inference; composite, decomposed into primitive
ops), `arange`, and the seeded generators `uniform_random` / `gaussian_random`.

conv2d and pool2d are kNonFusible: each is its own group, lowered as one reduction over the
window (and the input channels). Padding never reads outside the input: every window element
reads a clamped index and `select`s the padding value where the unclamped index is out of
bounds (a backend may evaluate both `select` arms).

The random generators are counter based, so a kernel and the numpy reference draw the same
numbers: element `i` (row-major) of the output hashes `i + 1` with a degree-4 polynomial modulo
the prime 2^31 - 1 whose coefficients come from `seed` (a 4-independent hash family; products
stay below 2^62, so int64 arithmetic is exact on every backend). `gaussian_random` feeds two such
streams through Box-Muller. Unlike CINN, `seed=0` is a fixed seed too (CINN draws a random one):
programs here are reproducible.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from cinn_py.frontend import compute as cdsl
from cinn_py.frontend.ops import testing
from cinn_py.frontend.ops.base import (
    Attrs, FrontendError, OpDef, OpPatternKind, SymbolEnv, TensorType, check_operand_dtype,
    numpy_dtype, register,
)
from cinn_py.frontend.ops.elementwise import binary_operands, scalar_of
from cinn_py.frontend.ops.reduce import accumulator
from cinn_py.frontend.ops.reference import fold_extreme
from cinn_py.frontend.ops.shapes import eval_shape, fmt_shape, shapes_equal, to_dim
from cinn_py.frontend.ops.signature import (
    OpCall, Signature, any_value, attr, boolean, dtype_arg, floating, int_list, integer, number,
    one_of, tensor,
)
from cinn_py.frontend.ops.testing import Case, Input, OpTest
from cinn_py.ir import EQ, GE, LT, And, DType, Expr, IntImm, const, float64, int64

# ---------------------------------------------------------------------------------------------------------
# conv2d / pool2d: window geometry
# ---------------------------------------------------------------------------------------------------------
_LAYOUTS = ("NCHW", "NHWC")


def _pair(method: str, arg: str, values: Sequence[int], size: int = 2) -> tuple[int, ...]:
    if len(values) != size:
        raise FrontendError(f"{method}: argument '{arg}' must have {size} entries, got {list(values)}")
    return tuple(values)


def _pads(method: str, paddings: Sequence[int]) -> tuple[int, int, int, int]:
    """(top, bottom, left, right) from CINN's [ph, pw] or [top, bottom, left, right]."""
    if len(paddings) == 2:
        return paddings[0], paddings[0], paddings[1], paddings[1]
    if len(paddings) == 4:
        return paddings[0], paddings[1], paddings[2], paddings[3]
    raise FrontendError(f"{method}: argument 'paddings' must have 2 or 4 entries, got {list(paddings)}")


def _out_extent(size: int, k: int, stride: int, pad_lo: int, pad_hi: int, dilation: int, ceil: bool) -> int:
    span = dilation * (k - 1) + 1
    room = size + pad_lo + pad_hi - span
    return (-(-room // stride) if ceil else room // stride) + 1


def _same_pads(size: int, k: int, stride: int, dilation: int) -> tuple[int, int]:
    """Paddle's SAME: the output has ceil(size / stride) elements, the extra padding at the end."""
    out = -(-size // stride)
    total = max((out - 1) * stride + dilation * (k - 1) + 1 - size, 0)
    return total // 2, total - total // 2


def _spatial(layout: str, shape: Sequence[Any]) -> tuple[Any, Any, Any]:
    """(channels, height, width) of a 4-d shape in `layout`."""
    return (shape[1], shape[2], shape[3]) if layout == "NCHW" else (shape[3], shape[1], shape[2])


def _static_hw(method: str, x: TensorType, layout: str) -> tuple[int, int]:
    _, h, w = _spatial(layout, x.shape)
    if not isinstance(h, int) or not isinstance(w, int):
        raise FrontendError(f"{method}: the spatial dims of x {fmt_shape(x.shape)} must be static "
                            "(the batch and channel dims may be symbolic)")
    return h, w


def _window_attrs(method: str, x: TensorType, kernel: tuple[int, int], strides: Sequence[int],
                  paddings: Sequence[int], dilations: Sequence[int], algorithm: str, layout: str,
                  ceil: bool = False) -> dict[str, Any]:
    if x.ndim != 4:
        raise FrontendError(f"{method}: x must have rank 4 ({layout}), got {fmt_shape(x.shape)}")
    h, w = _static_hw(method, x, layout)
    sh, sw = _pair(method, "strides", strides)
    dh, dw = _pair(method, "dilations", dilations)
    if min(sh, sw, dh, dw) < 1:
        raise FrontendError(f"{method}: strides and dilations must be >= 1, got {list(strides)}, "
                            f"{list(dilations)}")
    if algorithm == "VALID":
        pads = (0, 0, 0, 0)
    elif algorithm == "SAME":
        pads = _same_pads(h, kernel[0], sh, dh) + _same_pads(w, kernel[1], sw, dw)
    else:
        pads = _pads(method, paddings)
    if min(pads) < 0:
        raise FrontendError(f"{method}: paddings must be >= 0, got {list(paddings)}")
    oh = _out_extent(h, kernel[0], sh, pads[0], pads[1], dh, ceil)
    ow = _out_extent(w, kernel[1], sw, pads[2], pads[3], dw, ceil)
    if oh < 1 or ow < 1:
        raise FrontendError(f"{method}: the window {list(kernel)} (dilations {[dh, dw]}) does not fit the "
                            "padded "
                            f"input {h}x{w} (paddings {list(pads)}): output would be {oh}x{ow}")
    return {"kernel": kernel, "strides": (sh, sw), "pads": pads, "dilations": (dh, dw), "out_hw": (oh, ow),
            "data_format": layout}


def _layout_shape(layout: str, n: Any, c: Any, h: Any, w: Any) -> tuple[Any, ...]:
    return (n, c, h, w) if layout == "NCHW" else (n, h, w, c)


def _read_padded(x: cdsl.ComputeTensor, layout: str, n: Expr, c: Expr, ih: Expr, iw: Expr,
                 pad_value: Expr) -> Expr:
    """x at (n, c, ih, iw), or `pad_value` where (ih, iw) is outside the input (clamped read)."""
    _, h, w = _spatial(layout, x.shape)
    zero = const(0, ih.dtype)
    inside = And(And(GE(ih, zero), LT(ih, _like(h, ih.dtype))), And(GE(iw, zero), LT(iw, _like(w, iw.dtype))))
    ch = cdsl.minimum(cdsl.maximum(ih, zero), _like(h, ih.dtype) - const(1, ih.dtype))
    cw = cdsl.minimum(cdsl.maximum(iw, zero), _like(w, iw.dtype) - const(1, iw.dtype))
    load = x[_layout_shape(layout, n, c, ch, cw)]
    return cdsl.select(inside, load, pad_value)


def _like(dim: Expr, dtype: DType) -> Expr:
    """A tensor dim as an index of `dtype` (static dims are int32 even beside int64 indices)."""
    return const(dim.value, dtype) if isinstance(dim, IntImm) else dim


def _split(layout: str, idx: Sequence[Expr]) -> tuple[Expr, Expr, Expr, Expr]:
    """(n, c, h, w) index Vars of an output in `layout`."""
    if layout == "NCHW":
        return idx[0], idx[1], idx[2], idx[3]
    return idx[0], idx[3], idx[1], idx[2]


def _window_numpy(x: np.ndarray, attrs: Attrs, pad_value: float) -> tuple[np.ndarray, np.ndarray]:
    """The NCHW input padded with `pad_value`, and the (N, C, OH, OW, KH, KW) window view."""
    if attrs["data_format"] == "NHWC":
        x = x.transpose(0, 3, 1, 2)
    t, b, left, right = attrs["pads"]
    (kh, kw), (sh, sw) = attrs["kernel"], attrs["strides"]
    (dh, dw), (oh, ow) = attrs["dilations"], attrs["out_hw"]
    # room for windows that run past the padded input (ceil_mode): padded with pad_value too
    extra_h = max((oh - 1) * sh + dh * (kh - 1) + 1 - (x.shape[2] + t + b), 0)
    extra_w = max((ow - 1) * sw + dw * (kw - 1) + 1 - (x.shape[3] + left + right), 0)
    xp = np.pad(x, ((0, 0), (0, 0), (t, b + extra_h), (left, right + extra_w)), constant_values=pad_value)
    mask = np.pad(np.ones(x.shape[2:], bool), ((t, b + extra_h), (left, right + extra_w)))
    win = np.empty(x.shape[:2] + (oh, ow, kh, kw), xp.dtype)
    inside = np.empty((oh, ow, kh, kw), bool)
    for i in range(kh):
        for j in range(kw):
            rows = slice(i * dh, i * dh + (oh - 1) * sh + 1, sh)
            cols = slice(j * dw, j * dw + (ow - 1) * sw + 1, sw)
            win[..., i, j] = xp[:, :, rows, cols]
            inside[..., i, j] = mask[rows, cols]
    return win, inside


def _to_layout(y: np.ndarray, layout: str) -> np.ndarray:
    return np.ascontiguousarray(y.transpose(0, 2, 3, 1) if layout == "NHWC" else y)


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


# ---------------------------------------------------------------------------------------------------------
# batchnorm (inference)
# ---------------------------------------------------------------------------------------------------------
_BN_PARAMS = ("scale", "bias", "mean", "variance")


def _bn_channel_axis(attrs: Attrs, ndim: int) -> int:
    return 1 if attrs["data_layout"] == "NCHW" else ndim - 1


def _bn_infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    x = ins[0]
    if not x.dtype.is_float or x.ndim < 2:
        raise FrontendError(f"batchnorm: x must be a floating-point tensor of rank >= 2, got {x.dtype}"
                            f"{fmt_shape(x.shape)}")
    c = x.shape[_bn_channel_axis(attrs, x.ndim)]
    for name, t in zip(_BN_PARAMS, ins[1:]):
        if t.dtype != x.dtype or not shapes_equal(t.shape, (c,)):
            raise FrontendError(f"batchnorm: argument '{name}' must be {x.dtype}[{c}] (the channels of x "
                                f"{fmt_shape(x.shape)}, {attrs['data_layout']}), got "
                                f"{t.dtype}{fmt_shape(t.shape)}")
    return [x]


def _bn_numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    x = arrays[0]
    view = [1] * x.ndim
    view[_bn_channel_axis(attrs, x.ndim)] = -1
    scale, bias, mean, var = (a.astype(np.float64).reshape(view) for a in arrays[1:])
    y = (x.astype(np.float64) - mean) / np.sqrt(var + attrs["epsilon"]) * scale + bias
    return [y.astype(x.dtype)]


def _bn_decompose(nb: Any, ins: list[Any], attrs: dict[str, Any], name: str) -> Any:
    """y = x * a + b with per-channel a = scale * rsqrt(variance + eps), b = bias - mean * a."""
    x, scale, bias, mean, var = ins
    axis = _bn_channel_axis(attrs, x.ndim)
    a = nb.multiply(scale, nb.rsqrt(nb.scale(var, 1.0, attrs["epsilon"])))
    b = nb.subtract(bias, nb.multiply(mean, a))
    y = nb.multiply(x, a, axis=axis)
    return nb.emit("add", binary_operands(nb, "add", y, b, axis), name=name)


def _bn_build(nb: Any, call: OpCall) -> Any:
    """CINN's batchnorm returns a list of outputs; at inference (is_test) it is [y]."""
    if not call.args["is_test"]:
        raise FrontendError("batchnorm: argument 'is_test' = False (training statistics) is not supported "
                            "(expected True)")
    return [nb.build_op(call)]


def _bn_attrs(ins: Sequence[TensorType], at: dict[str, Any]) -> dict[str, Any]:
    return {"epsilon": at["epsilon"], "data_layout": at["data_layout"]}


def _bn_cases(dtype: str) -> list[Case]:
    def bn(xs: tuple[Any, ...], c: int, **kw: Any) -> Case:
        params = ([Input((c,), low=0.5, high=1.5) for _ in range(2)]
                  + [Input((c,)), Input((c,), low=0.5, high=2.0)])
        return Case((Input(xs), *params), kw)
    return [bn((2, 3, 4, 5), 3), bn((1, 1, 1, 1), 1), bn(("S0", 4, 3), 4),
            bn((2, 3, 5), 5, data_layout="NHWC"),
            bn((2, 3), 3, epsilon=1e-3)]


register(OpDef("batchnorm", OpPatternKind.kNonFusible, _bn_infer, _bn_numpy, composite=True, arity=5,
               decompose=_bn_decompose,
               signature=Signature(
                   (tensor("x"), tensor("scale"), tensor("bias"), tensor("mean"), tensor("variance"),
                    attr("epsilon", floating, 1e-5), attr("momentum", floating, 0.9),
                    attr("data_layout", one_of("NCHW", "NHWC"), "NCHW"), attr("is_test", boolean, True)),
                   attrs=_bn_attrs, build=_bn_build, methods=("batchnorm", "batch_norm"),
                   doc="Batch normalization at inference: `(x - mean) / sqrt(variance + epsilon) * scale + "
                       "bias` "
                       "per channel; returns [y] as CINN."),
               test=OpTest(testing.FLOATS, _bn_cases, rtol=1e-4, atol=1e-5)))


# ---------------------------------------------------------------------------------------------------------
# arange
# ---------------------------------------------------------------------------------------------------------
def _arange_attrs(ins: Sequence[TensorType], at: dict[str, Any]) -> dict[str, Any]:
    d = at["dtype"]
    start, stop, step = (scalar_of(at[k], d, "arange") for k in ("start", "stop", "step"))
    if step == 0:
        raise FrontendError("arange: argument 'step' must not be 0")
    count = max(math.ceil((stop - start) / step), 0)
    return {"start": start, "stop": stop, "step": step, "dtype": d, "shape": (count,)}


def _arange_numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    d = attrs["dtype"]
    i = np.arange(attrs["shape"][0])
    if d.is_float:   # as the kernel computes: start + i * step in the dtype (float32 math for 16-bit floats)
        w = accumulator(d).to_numpy()
        return [(i.astype(w) * np.asarray(attrs["step"], w)
                 + np.asarray(attrs["start"], w)).astype(numpy_dtype(d))]
    return [(attrs["start"] + i * attrs["step"]).astype(numpy_dtype(d))]


def _arange_compute(ins: Sequence[cdsl.ComputeTensor], attrs: Attrs, out: TensorType,
                    out_name: str) -> cdsl.ComputeTensor:
    d = attrs["dtype"]
    w = accumulator(d) if d.is_float else d

    def body(i: Expr) -> Expr:
        return cdsl.cast(cdsl.cast(i, w) * const(attrs["step"], w) + const(attrs["start"], w), d)

    return cdsl.compute(out.shape, body, out_name)


register(OpDef("arange", OpPatternKind.kElementWise, lambda ins, at: [TensorType(at["shape"], at["dtype"])],
               _arange_numpy, _arange_compute, arity=0,
               signature=Signature((attr("start", number), attr("stop", number), attr("step", number),
                                    attr("dtype", dtype_arg)), attrs=_arange_attrs,
                                   doc="[start, stop) in steps of `step`: ceil((stop - start) / step) "
                                       "elements."),
               test=OpTest(("float32", "int32", "int64", "float16", "bfloat16", "float64"), lambda d: [
                   Case((0, 7, 1, d)), Case((5, -4, -3, d)), Case((2, 3, 5, d))] + (
                   [Case((0.5, 2.0, 0.25, d))] if d.startswith("float") else []))))


# ---------------------------------------------------------------------------------------------------------
# uniform_random / gaussian_random
# ---------------------------------------------------------------------------------------------------------
PRIME = 2**31 - 1
_DEGREE = 4


def _coefficients(seed: int, stream: int) -> tuple[int, ...]:
    """The hash polynomial's coefficients for (seed, stream), all in [1, PRIME)."""
    rng = np.random.default_rng([seed & 0xFFFFFFFF, stream])
    return tuple(int(c) for c in rng.integers(1, PRIME, size=_DEGREE + 1))


def _hash_np(counter: np.ndarray, coeffs: Sequence[int]) -> np.ndarray:
    h = np.full(counter.shape, coeffs[0], np.int64)
    for c in coeffs[1:]:
        h = (h * counter + c) % PRIME
    return h


def _hash_expr(counter: Expr, coeffs: Sequence[int]) -> Expr:
    h: Expr = const(coeffs[0], int64)
    for c in coeffs[1:]:
        h = (h * counter + const(c, int64)) % const(PRIME, int64)
    return h


def _uniform01_np(counter: np.ndarray, coeffs: Sequence[int]) -> np.ndarray:
    return _hash_np(counter, coeffs).astype(np.float64) / PRIME


def _uniform01_expr(counter: Expr, coeffs: Sequence[int]) -> Expr:
    return cdsl.cast(_hash_expr(counter, coeffs), float64) / const(float(PRIME), float64)


def _linear_index(idx: Sequence[Expr], shape: Sequence[Any]) -> Expr:
    """Row-major element number (int64) + 1 (the hash counter must be nonzero mod PRIME)."""
    lin: Expr = const(1, int64)
    stride: Any = 1
    for i, dim in reversed(list(zip(idx, shape))):
        s = const(stride, int64) if isinstance(stride, int) else stride
        lin = lin + cdsl.cast(i, int64) * s
        stride = stride * dim if isinstance(stride, int) and isinstance(dim, int) else \
            (const(stride, int64) if isinstance(stride, int) else stride) * (const(dim, int64)
                                                                             if isinstance(dim, int) else dim)
    return lin


def _random_attrs(kind: str) -> Callable[[Sequence[TensorType], dict[str, Any]], dict[str, Any]]:
    def attrs(ins: Sequence[TensorType], at: dict[str, Any]) -> dict[str, Any]:
        d = at["dtype"]
        if not d.is_float:
            raise FrontendError(f"{kind}: argument 'dtype' must be a floating-point dtype, got {d}")
        shape = at["shape"]
        if not isinstance(shape, (list, tuple)):
            raise FrontendError(f"{kind}: argument 'shape' must be a list, got {type(shape).__name__}")
        dims = tuple(to_dim(v, f"{kind}: shape[{k}]") for k, v in enumerate(shape))
        out = {"shape": dims, "dtype": d, "seed": at["seed"]}
        if kind == "uniform_random":
            if at["min"] > at["max"]:
                raise FrontendError(f"uniform_random: argument 'min' ({at['min']}) must not exceed 'max' "
                                    f"({at['max']})")
            out.update(min=at["min"], max=at["max"], diag_num=at["diag_num"], diag_step=at["diag_step"],
                       diag_val=at["diag_val"])
        else:
            if at["std"] < 0:
                raise FrontendError(f"gaussian_random: argument 'std' must be >= 0, got {at['std']}")
            out.update(mean=at["mean"], std=at["std"])
        return out
    return attrs


def _random_numpy(kind: str) -> Callable[[Sequence[np.ndarray], Attrs, SymbolEnv], list[np.ndarray]]:
    def numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
        shape = eval_shape(attrs["shape"], env)
        counter = np.arange(1, math.prod(shape) + 1, dtype=np.int64).reshape(shape)
        u1 = _uniform01_np(counter, _coefficients(attrs["seed"], 0))
        if kind == "uniform_random":
            y = attrs["min"] + u1 * (attrs["max"] - attrs["min"])
            if attrs["diag_num"] > 0:
                k = counter - 1
                period = attrs["diag_step"] + 1
                y = np.where((k % period == 0) & (k // period < attrs["diag_num"]), attrs["diag_val"], y)
        else:
            u2 = _uniform01_np(counter, _coefficients(attrs["seed"], 1))
            y = attrs["mean"] + attrs["std"] * np.sqrt(-2.0 * np.log1p(-u1)) * np.cos(2.0 * math.pi * u2)
        return [np.asarray(y, np.float64).astype(numpy_dtype(attrs["dtype"]))]
    return numpy


def _random_compute(kind: str) -> Callable[..., cdsl.ComputeTensor]:
    def compute(ins: Sequence[cdsl.ComputeTensor], attrs: Attrs, out: TensorType,
                out_name: str) -> cdsl.ComputeTensor:
        def body(*idx: Expr) -> Expr:
            counter = _linear_index(idx, out.shape)
            u1 = _uniform01_expr(counter, _coefficients(attrs["seed"], 0))
            if kind == "uniform_random":
                lo, hi = const(float(attrs["min"]),
                               float64), const(float(attrs["max"] - attrs["min"]), float64)
                y = lo + u1 * hi
                if attrs["diag_num"] > 0:
                    k = counter - const(1, int64)
                    period = const(attrs["diag_step"] + 1, int64)
                    on_diag = And(_eq0(k % period), LT(k / period, const(attrs["diag_num"], int64)))
                    y = cdsl.select(on_diag, const(float(attrs["diag_val"]), float64), y)
            else:
                u2 = _uniform01_expr(counter, _coefficients(attrs["seed"], 1))
                radius = cdsl.sqrt(const(-2.0, float64) * cdsl.log1p(-u1))
                y = const(float(attrs["mean"]), float64) + const(float(attrs["std"]),
                                                                 float64) * radius * cdsl.cos(
                    const(2.0 * math.pi, float64) * u2)
            return cdsl.cast(y, attrs["dtype"])
        return cdsl.compute(out.shape, body, out_name)
    return compute


def _eq0(e: Expr) -> Expr:
    return EQ(e, const(0, e.dtype))


def _random_infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    return [TensorType(attrs["shape"], attrs["dtype"])]


def _random_cases(kind: str) -> Callable[[str], list[Case]]:
    def cases(dtype: str) -> list[Case]:
        if kind == "uniform_random":
            return [Case(([7],), {"seed": 1, "dtype": dtype}),
                    Case(([3, 5],), {"min": 2.0, "max": 5.0, "dtype": dtype}),
                    Case(([4, 4],),
                         {"seed": 9, "dtype": dtype, "diag_num": 3, "diag_step": 4, "diag_val": 7.0})]
        return [Case(([7],), {"seed": 1, "dtype": dtype}),
                Case(([3, 5],), {"mean": 1.0, "std": 0.5, "dtype": dtype})]
    return cases


register(OpDef("uniform_random", OpPatternKind.kElementWise, _random_infer, _random_numpy("uniform_random"),
               _random_compute("uniform_random"), arity=0,
               signature=Signature(
                   (attr("shape", any_value), attr("min", floating, -1.0), attr("max", floating, 1.0),
                    attr("seed", integer, 0), attr("dtype", dtype_arg, "float32"),
                    attr("diag_num", integer, 0),
                    attr("diag_step", integer, 0), attr("diag_val", floating, 1.0)),
                   attrs=_random_attrs("uniform_random"),
                   doc="Uniform numbers in [min, max), reproducible for a seed (counter-based hash)."),
               test=OpTest(testing.FLOATS, _random_cases("uniform_random"), rtol=1e-5, atol=1e-6)))
register(OpDef("gaussian_random", OpPatternKind.kElementWise, _random_infer, _random_numpy("gaussian_random"),
               _random_compute("gaussian_random"), arity=0,
               signature=Signature(
                   (attr("shape", any_value), attr("mean", floating, 0.0), attr("std", floating, 1.0),
                    attr("seed", integer, 0), attr("dtype", dtype_arg, "float32")),
                   attrs=_random_attrs("gaussian_random"),
                   doc="Normal numbers N(mean, std^2), reproducible for a seed (Box-Muller on two hash "
                       "streams)."),
               test=OpTest(testing.FLOATS, _random_cases("gaussian_random"), rtol=1e-5, atol=1e-6)))
