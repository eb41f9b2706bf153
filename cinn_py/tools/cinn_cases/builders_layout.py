"""Builders of CINN's layout, indexing and bitwise op tests (see `builders`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from cinn_py.tools.cinn_cases.builders import Built, _new_builder, _tolerance, np_dtype, random_array


def _special_or_random(
    case: dict[str, Any], rng: np.random.Generator, shape: list[int], dtype: str
) -> np.ndarray:
    """CINN's `with_inf` / `with_nan` inputs (np.full, cast to the dtype as numpy casts) or random."""
    for key, value in (("with_inf", np.inf), ("with_nan", np.nan)):
        if case.get(key):
            with np.errstate(invalid="ignore"):
                return np.full(shape, value).astype(np_dtype(dtype))
    return random_array(rng, shape, dtype, case.get("low"), case.get("high"))


_BITWISE = {
    "and": ("bitwise_and", np.bitwise_and),
    "or": ("bitwise_or", np.bitwise_or),
    "xor": ("bitwise_xor", np.bitwise_xor),
}


def build_bitwise(case: dict[str, Any], rng: np.random.Generator) -> Built:
    """CINN's bitwise test: `op_type` and/or/xor of x and y, or `not` of x."""
    dtype, kind = case["dtype"], case["op_type"]
    x = _special_or_random(case, rng, list(case["x_shape"]), dtype)
    nb = _new_builder({**case, "op": "bitwise"})
    xv = nb.create_input(dtype, list(case["x_shape"]), "x")
    if kind == "not":
        out = nb.bitwise_not(xv)
        return Built(nb.build(), [xv], [x], [out], [np.invert(x)], True, 0.0, 0.0)
    y = random_array(rng, list(case["y_shape"]), dtype, case.get("low"), case.get("high"))
    yv = nb.create_input(dtype, list(case["y_shape"]), "y")
    method, np_fn = _BITWISE[kind]
    out = getattr(nb, method)(xv, yv)
    return Built(nb.build(), [xv, yv], [x, y], [out], [np_fn(x, y)], True, 0.0, 0.0)


def build_transpose(case: dict[str, Any], rng: np.random.Generator) -> Built:
    shape, dtype, axes = list(case["shape"]), case["dtype"], list(case["axes"])
    x = random_array(rng, shape, dtype, case.get("low"), case.get("high"))
    nb = _new_builder({**case, "op": "transpose_test"})
    xv = nb.create_input(dtype, shape, "x")
    out = nb.transpose(xv, axes)
    return Built(nb.build(), [xv], [x], [out], [np.transpose(x, axes)], True, 0.0, 0.0)


def build_concat(case: dict[str, Any], rng: np.random.Generator) -> Built:
    dtype, axis = case["dtype"], int(case["axis"])
    xs = [random_array(rng, list(sh), dtype, case.get("low"), case.get("high")) for sh in case["shapes"]]
    nb = _new_builder({**case, "op": "concat"})
    vs = [nb.create_input(dtype, list(sh), f"x{k}") for k, sh in enumerate(case["shapes"])]
    out = nb.concat(vs, axis=axis)
    return Built(nb.build(), vs, xs, [out], [np.concatenate(xs, axis=axis)], True, 0.0, 0.0)


def build_isclose(case: dict[str, Any], rng: np.random.Generator) -> Built:
    """CINN's isclose test: y = x + U[0, 1); `nan_as_input` makes x all NaN (float64, as np.full)."""
    shape, dtype = list(case["shape"]), case["dtype"]
    if case.get("nan_as_input"):
        x = np.full(shape, np.nan)
        dtype = "float64"
    else:
        x = random_array(rng, shape, dtype, None, None)
    y = (x + random_array(rng, shape, dtype, None, None)).astype(x.dtype)
    rtol, atol, equal_nan = float(case["rtol"]), float(case["atol"]), bool(case["equal_nan"])
    nb = _new_builder({**case, "op": "isclose"})
    xv, yv = nb.create_input(dtype, shape, "x"), nb.create_input(dtype, shape, "y")
    out = nb.isclose(xv, yv, rtol, atol, equal_nan)
    want = np.isclose(x, y, rtol=rtol, atol=atol, equal_nan=equal_nan)
    return Built(nb.build(), [xv, yv], [x, y], [out], [want], True, 0.0, 0.0)


def build_arg(case: dict[str, Any], rng: np.random.Generator) -> Built:
    """argmax / argmin(x, axis, keepdim): the first extreme's index."""
    op, shape, dtype = case["op"], list(case["shape"]), case["dtype"]
    axis, keep = int(case["axis"]), bool(case["keepdim"])
    x = random_array(rng, shape, dtype, case.get("low"), case.get("high"))
    nb = _new_builder(case)
    xv = nb.create_input(dtype, shape, "x")
    out = getattr(nb, op)(xv, axis, keep)
    fn = np.argmax if op == "argmax" else np.argmin
    wide = x.astype(np.float64) if x.dtype.kind == "f" else x
    want = np.asarray(fn(wide, axis=axis, keepdims=keep)).astype(np.int64)
    return Built(nb.build(), [xv], [x], [out], [want], True, 0.0, 0.0, int_values_only=True)


def build_reshape(case: dict[str, Any], rng: np.random.Generator) -> Built:
    shape, dtype, target = list(case["shape"]), case["dtype"], list(case["target_shape"])
    x = random_array(rng, shape, dtype, case.get("low"), case.get("high"))
    nb = _new_builder({**case, "op": "reshape_test"})
    xv = nb.create_input(dtype, shape, "x")
    out = nb.reshape(xv, target)
    return Built(nb.build(), [xv], [x], [out], [x.reshape(target)], True, 0.0, 0.0)


def build_gather(case: dict[str, Any], rng: np.random.Generator) -> Built:
    """CINN's gather test: x ~ N(0, 1), an int32 index in [0, x.shape[axis]) (1-d: index_select)."""
    x_shape, index_shape, axis, dtype = (
        list(case["x"]),
        list(case["index"]),
        int(case["axis"]),
        case["x_dtype"],
    )
    x = rng.standard_normal(x_shape).astype(np_dtype(dtype))
    index = rng.integers(0, x_shape[axis], index_shape).astype(np.int32)
    nb = _new_builder({**case, "op": "gather"})
    xv, iv = nb.create_input(dtype, x_shape, "x"), nb.create_input("int32", index_shape, "index")
    out = nb.gather(xv, iv, axis=axis)
    return Built(nb.build(), [xv, iv], [x, index], [out], [np.take(x, index, axis=axis)], True, 0.0, 0.0)


def build_reverse(case: dict[str, Any], rng: np.random.Generator) -> Built:
    """CINN's reverse test: `reverse` or `flip` (`net_builder_api`) over axes clamped to the rank."""
    shape, dtype = list(case["shape"]), case["dtype"]
    dims = len(shape)
    axes = [max(min(a, dims - 1), -dims) for a in case["axes"]]
    unique = sorted({a % dims for a in axes})  # an axis named twice is reversed once (CINN, Paddle)
    x = random_array(rng, shape, dtype, case.get("low"), case.get("high"))
    nb = _new_builder({**case, "op": "reverse"})
    xv = nb.create_input(dtype, shape, "x")
    out = getattr(nb, case["net_builder_api"])(xv, axes)
    want = np.flip(x, axis=tuple(unique)) if unique else x
    return Built(nb.build(), [xv], [x], [out], [want], True, 0.0, 0.0)


def build_one_hot(case: dict[str, Any], rng: np.random.Generator) -> Built:
    """one_hot(x, on=fill_constant 1, off=fill_constant 0, depth, axis, float32) as CINN's test
    builds it; indices in [0, depth) (CINN's default draw gives only zeros)."""
    shape, dtype, depth, axis = list(case["x_shape"]), case["x_dtype"], int(case["depth"]), int(case["axis"])
    x = random_array(rng, shape, dtype, 0, depth)
    nb = _new_builder({**case, "op": "one_hot"})
    xv = nb.create_input(dtype, shape, "x")
    on = nb.fill_constant([1], 1, "on_value", dtype=dtype)
    off = nb.fill_constant([1], 0, "off_value", dtype=dtype)
    out = nb.one_hot(xv, on, off, depth=depth, axis=axis, dtype="float32")
    want = np.moveaxis((x[..., None] == np.arange(depth)).astype(np.float32), -1, axis)
    return Built(nb.build(), [xv], [x], [out], [want], True, 0.0, 0.0)


def build_expand_dims(case: dict[str, Any], rng: np.random.Generator) -> Built:
    shape, dtype, axes = list(case["x_shape"]), case["x_dtype"], list(case["axes_shape"])
    x = random_array(rng, shape, dtype, case.get("low"), case.get("high"))
    nb = _new_builder({**case, "op": "expand_dims"})
    xv = nb.create_input(dtype, shape, "x")
    out = nb.expand_dims(xv, axes)
    return Built(nb.build(), [xv], [x], [out], [np.expand_dims(x, tuple(axes))], True, 0.0, 0.0)


def build_matmul(case: dict[str, Any], rng: np.random.Generator) -> Built:
    """matmul(x, y, transpose_x, transpose_y), then `transpose(perm)` when the case has one (CINN's
    TestMatmulTransposePass); a 1-d operand is not transposed (Paddle)."""
    xs, ys, dtype = list(case["x_shape"]), list(case["y_shape"]), case["dtype"]
    tx, ty = bool(case["transx"]), bool(case["transy"])
    x = random_array(rng, xs, dtype, case.get("low"), case.get("high"))
    y = random_array(rng, ys, dtype, case.get("low"), case.get("high"))
    nb = _new_builder({**case, "op": "matmul"})
    xv, yv = nb.create_input(dtype, xs, "x"), nb.create_input(dtype, ys, "y")
    out = nb.matmul(xv, yv, transpose_x=tx, transpose_y=ty)
    wx, wy = x.astype(np.float64), y.astype(np.float64)
    wx = np.swapaxes(wx, -1, -2) if tx and wx.ndim > 1 else wx
    wy = np.swapaxes(wy, -1, -2) if ty and wy.ndim > 1 else wy
    want = np.matmul(wx, wy)
    if "perm" in case:
        out = nb.transpose(out, list(case["perm"]))
        want = np.transpose(want, case["perm"])
    rtol, atol = _tolerance(case, dtype)
    return Built(nb.build(), [xv, yv], [x, y], [out], [np.asarray(want).astype(x.dtype)], False, rtol, atol)


BUILDERS: dict[str, Callable[[dict[str, Any], np.random.Generator], Built]] = {
    "bitwise": build_bitwise,
    "transpose": build_transpose,
    "concat": build_concat,
    "isclose": build_isclose,
    "arg": build_arg,
    "reshape": build_reshape,
    "gather": build_gather,
    "reverse": build_reverse,
    "one_hot": build_one_hot,
    "expand_dims": build_expand_dims,
    "matmul": build_matmul,
}
