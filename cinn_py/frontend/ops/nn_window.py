"""Window geometry shared by the sliding-window ops (`conv2d`, `pool2d`, their gradients and the
GEMM-form convolution): attribute checks for kernel / stride / padding / dilation, output extents
(explicit, SAME and VALID padding, ceil mode), layout (NCHW / NHWC) index helpers, the clamped
padded read of the compute definitions and the numpy window extraction of the references.

Padding never reads outside the input: every window element reads a clamped index and `select`s
the padding value where the unclamped index is out of bounds (a backend may evaluate both
`select` arms).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cinn_py.frontend import compute as cdsl
from cinn_py.frontend.ops.base import Attrs, FrontendError, TensorType
from cinn_py.frontend.ops.shapes import fmt_shape
from cinn_py.ir import GE, LT, And, DType, Expr, IntImm, const


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
