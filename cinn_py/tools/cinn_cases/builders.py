"""How each family of CINN op tests builds its program, feeds it and computes its reference.

A builder takes one case (CINN's dict: shapes, dtypes, attributes and the test's constants) and a
numpy Generator and returns a `Built`: the NetBuilder program, the feed variables and arrays (drawn
as CINN's `OpTest.random` draws them: uniform floats in [low, high), integers in [low, high), random
booleans), the fetched variables and the expected arrays. The references are numpy's (scipy's for
erf), never `Program.run_numpy`: an op's own numpy implementation would share its mistakes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from cinn_py.tools.cinn_cases.references import BINARY, UNARY, paddle_broadcast


@dataclass(frozen=True)
class Built:
    """A case ready to run: `build_and_get_output(program, target, feeds, datas, fetch)` must
    give `expected` (exactly when `exact`, else within `rtol` relative + `atol` absolute)."""

    program: Any
    feeds: list[Any]
    datas: list[np.ndarray]
    fetch: list[Any]
    expected: list[np.ndarray]
    exact: bool
    rtol: float
    atol: float
    int_values_only: bool = False
    """Integer outputs compared by value whatever their integer dtype (CINN's argmax test casts
    CINN's int32 indices to int64 before comparing)."""


_ATOL = 1e-6  # CINN's max_absolute_error, for every float dtype


_DEFAULT_RTOL = 1e-5  # CINN's default max_relative_error


def random_array(
    rng: np.random.Generator, shape: list[int], dtype: str, low: float | None, high: float | None
) -> np.ndarray:
    """CINN's `OpTest.random`: floats uniform in [low, high) (default [0, 1)), integers in
    [low, high) (default [-100, 100)), booleans fair coins."""
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype.startswith(("int", "uint")):
        lo = -100 if low is None else int(low)
        hi = 100 if high is None else int(high)
        return rng.integers(lo, hi, size=shape).astype(dtype)
    lo = 0.0 if low is None else float(low)
    hi = 1.0 if high is None else float(high)
    return rng.uniform(lo, hi, size=shape).astype(np_dtype(dtype))


def np_dtype(dtype: str) -> np.dtype:
    """numpy's dtype of a CINN dtype name (`ml_dtypes.bfloat16` for bfloat16)."""
    if dtype == "bfloat16":
        import ml_dtypes  # noqa: PLC0415

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(dtype)


def _first(case: dict[str, Any], *keys: str, default: Any = None) -> Any:
    for key in keys:
        if key in case:
            return case[key]
    return default


# half-precision results carry 11 (8) significant bits: where CINN's test names no tolerance for
# them, its default 1e-5 is below their own rounding, so the floor is one unit of their precision
_HALF_RTOL = {"float16": 1e-3, "bfloat16": 1e-2}  # bfloat16: CINN's own 1e-2


# CINN's log test picks the op by `base`
LOG_BASE = {"e": "log", "2": "log2", "10": "log10"}


def _tolerance(case: dict[str, Any], dtype: str) -> tuple[float, float]:
    rtol = max(float(case.get("max_relative_error", _DEFAULT_RTOL)), _HALF_RTOL.get(dtype, 0.0))
    return rtol, float(case.get("max_absolute_error", _ATOL))


def _new_builder(case: dict[str, Any]) -> Any:
    from cinn_py.frontend.net_builder import NetBuilder  # noqa: PLC0415

    return NetBuilder(case.get("program_name", case["op"]))


def build_unary(case: dict[str, Any], rng: np.random.Generator) -> Built:
    """`out = op(x)`; `inject` puts NaN or inf in a random row as CINN's is_nan/is_inf tests do;
    `relu_grad` adds CINN's `relu_grad(dout, out)` output."""
    op = case["op"] if "op" in case else LOG_BASE[case["base"]]
    shape = list(_first(case, "x_shape", "shape"))
    dtype = _first(case, "x_dtype", "dtype")
    low, high = case.get("low"), case.get("high")
    if case.get("full_int_range"):  # CINN's popc test: [INT_MIN, INT_MAX) of the dtype
        low, high = int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)
    x = random_array(rng, shape, dtype, low, high)
    if case.get("inject") and x.ndim:
        # CINN writes the special value cast to x's dtype (an integer x gets what numpy's cast gives)
        with np.errstate(invalid="ignore"):
            row = int(rng.integers(0, len(x)))
            if case["inject"] == "inf_or_nan":  # CINN's is_finite test: inf where positive, else NaN
                x[row] = np.where(x[row] > 0, np.inf, np.nan).astype(x.dtype)
            else:
                x[row] = np.asarray({"nan": np.nan, "inf": np.inf}[case["inject"]]).astype(x.dtype)
    nb = _new_builder({**case, "op": op})
    xv = nb.create_input(dtype, shape, "x")
    out = getattr(nb, op)(xv, **case.get("kwargs", {}))
    ref, exact = UNARY[op]
    feeds, datas, fetch, want = [xv], [x], [out], [ref(x, **case.get("kwargs", {}))]
    if case.get("relu_grad"):
        dout = random_array(rng, shape, dtype, -1.0, 1.0)
        dv = nb.create_input(dtype, shape, "dout")
        feeds.append(dv)
        datas.append(dout)
        fetch.append(nb.relu_grad(dv, out))
        want.append(np.where(want[0] > 0, dout, np.zeros((), dout.dtype)).astype(dout.dtype))
    rtol, atol = _tolerance(case, dtype)
    return Built(nb.build(), feeds, datas, fetch, want, exact or case.get("all_equal", False), rtol, atol)


def build_binary(case: dict[str, Any], rng: np.random.Generator) -> Built:
    """`out = op(x, y, axis)` with Paddle's axis broadcasting; a `dout_shape` adds CINN's
    `elementwise_add_grad(dout, x, y, axis)` outputs (add only); `nonzero_y` replaces zero
    divisors by 1 as CINN's remainder/divide tests do."""
    op = case["op"]
    x_shape = list(_first(case, "x_shape", "shape"))
    y_shape = list(_first(case, "y_shape", "shape"))
    x_dtype = _first(case, "x_dtype", "dtype")
    y_dtype = _first(case, "y_dtype", "dtype")
    axis = int(case.get("axis", -1))
    x = random_array(
        rng,
        x_shape,
        x_dtype,
        _first(case, "x_low", "base_low", "low"),
        _first(case, "x_high", "base_high", "high"),
    )
    y = random_array(
        rng,
        y_shape,
        y_dtype,
        _first(case, "y_low", "exp_low", "low"),
        _first(case, "y_high", "exp_high", "high"),
    )
    if case.get("random_sign"):  # CINN: random(1, 100) * one random sign per input
        x = (x * rng.choice([-1, 1])).astype(x.dtype)
        y = (y * rng.choice([-1, 1])).astype(y.dtype)
    if case.get("nonzero_y") or (case.get("nonzero_int_y") and y.dtype.kind in "iu"):
        y = np.where(y == 0, np.ones_like(y), y)
    nb = _new_builder(case)
    xv, yv = nb.create_input(x_dtype, x_shape, "x"), nb.create_input(y_dtype, y_shape, "y")
    out = getattr(nb, op)(xv, yv, axis=axis)
    ref, exact = BINARY[_ALIASES.get(str(op), str(op))]
    yb = paddle_broadcast(y, x.ndim, axis)
    feeds, datas, fetch, want = [xv, yv], [x, y], [out], [ref(x, yb)]
    if "dout_shape" in case and op == "add":
        dout = random_array(rng, list(case["dout_shape"]), case.get("dout_dtype", x_dtype), None, None)
        dv = nb.create_input(case.get("dout_dtype", x_dtype), list(case["dout_shape"]), "dout")
        x_grad, y_grad = nb.elementwise_add_grad(dv, xv, yv, axis=axis)
        feeds.append(dv)
        datas.append(dout)
        fetch += [x_grad, y_grad]
        want += [_sum_to(dout, x.shape), _sum_to(paddle_unbroadcast(dout, y.shape, axis), y.shape)]
    rtol, atol = _tolerance(case, x_dtype)
    return Built(nb.build(), feeds, datas, fetch, want, exact, rtol, atol)


# CINN's NetBuilder names of the elementwise max/min
_ALIASES = {"max": "maximum", "min": "minimum"}


def paddle_unbroadcast(grad: np.ndarray, y_shape: tuple[int, ...], axis: int) -> np.ndarray:
    """`grad` (x's shape) summed down to y's dims placed at `axis` (Paddle's rule), in y's rank."""
    rank = grad.ndim
    start = rank - len(y_shape) if axis < 0 else axis
    outer = tuple(range(start)) + tuple(range(start + len(y_shape), rank))
    return grad.sum(axis=outer) if outer else grad


def _sum_to(grad: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    axes = tuple(k for k, (g, s) in enumerate(zip(grad.shape, shape)) if s == 1 and g != 1)
    return (grad.sum(axis=axes, keepdims=True) if axes else grad).astype(grad.dtype)


def build_compare(case: dict[str, Any], rng: np.random.Generator) -> Built:
    """CINN's comparison test: `operation` picks the op; `broadcast` picks x_shape/y_shape."""
    return build_binary({**case, "op": case["operation"]}, rng)


def build_reduce(case: dict[str, Any], rng: np.random.Generator) -> Built:
    op = case["op"]
    shape, dtype = list(case["shape"]), case["dtype"]
    dim, keep_dim = list(case.get("dim", [])), bool(case.get("keep_dim", False))
    x = random_array(rng, shape, dtype, case.get("low"), case.get("high"))
    nb = _new_builder(case)
    xv = nb.create_input(dtype, shape, "x")
    out = getattr(nb, op)(xv, dim, keep_dim)
    axes = tuple(dim) if dim else None
    np_fn = {
        "reduce_sum": np.sum,
        "reduce_prod": np.prod,
        "reduce_max": np.max,
        "reduce_min": np.min,
        "reduce_all": np.all,
        "reduce_any": np.any,
        "reduce_mean": np.mean,
    }[op]
    wide = x.astype(np.float64) if x.dtype.kind == "f" else x
    want = np.asarray(np_fn(wide, axis=axes, keepdims=keep_dim)).astype(x.dtype)
    rtol, atol = _tolerance(case, dtype)
    exact = op in ("reduce_max", "reduce_min", "reduce_all", "reduce_any") or x.dtype.kind != "f"
    return Built(nb.build(), [xv], [x], [out], [want], exact, rtol, atol)


def build_cast(case: dict[str, Any], rng: np.random.Generator) -> Built:
    """CINN's cast test: x of `x_dtype` in [0, 1) (booleans: coins) cast to `d_dtype`."""
    shape, src, dst = list(case["x_shape"]), case["x_dtype"], case["d_dtype"]
    x = random_array(
        rng, shape, src, case.get("low", 0), case.get("high", 1 if src.startswith("float") else 2)
    )
    nb = _new_builder({**case, "op": "cast"})
    xv = nb.create_input(src, shape, "x")
    out = nb.cast(xv, dst)
    rtol, atol = _tolerance(case, dst)
    return Built(
        nb.build(), [xv], [x], [out], [x.astype(np_dtype(dst))], not dst.startswith("float"), rtol, atol
    )


def build_select(case: dict[str, Any], rng: np.random.Generator) -> Built:
    """`select(condition, x, y)` (CINN's names Condition, X, Y; program name `select`)."""
    shape, dtype = list(case["shape"]), case["dtype"]
    c = random_array(rng, shape, "bool", None, None)
    x = random_array(rng, shape, dtype, case.get("low", 0), case.get("high", 1))
    y = random_array(rng, shape, dtype, case.get("low", 0), case.get("high", 1))
    nb = _new_builder({**case, "op": "select"})
    cv, xv, yv = (
        nb.create_input(d, shape, n) for d, n in (("bool", "Condition"), (dtype, "X"), (dtype, "Y"))
    )
    out = nb.select(cv, xv, yv)
    return Built(nb.build(), [cv, xv, yv], [c, x, y], [out], [np.where(c, x, y)], True, 0.0, 0.0)


def build_scale(case: dict[str, Any], rng: np.random.Generator) -> Built:
    """`scale(x, scale, bias, bias_after_scale)`: x * s + b, or (x + b) * s; for an integer x,
    CINN and Paddle convert s and b to x's dtype first (C's truncation: -0.1 is 0)."""
    shape, dtype = list(case["x_shape"]), case["x_dtype"]
    x = random_array(
        rng, shape, dtype, case.get("low", 0), case.get("high", 1 if dtype.startswith("float") else 100)
    )
    s, b, after = float(case["scale"]), float(case["bias"]), bool(case["bias_after_scale"])
    nb = _new_builder({**case, "op": "scale"})
    xv = nb.create_input(dtype, shape, "x")
    out = nb.scale(xv, s, b, after)
    w = x.astype(np.float64)
    if x.dtype.kind in "iu":
        s, b = float(np.trunc(s)), float(np.trunc(b))
    want = (w * s + b) if after else ((w + b) * s)
    rtol, atol = _tolerance(case, dtype)
    return Built(nb.build(), [xv], [x], [out], [want.astype(x.dtype)], False, rtol, atol)


BUILDERS: dict[str, Callable[[dict[str, Any], np.random.Generator], Built]] = {
    "unary": build_unary,
    "binary": build_binary,
    "compare": build_compare,
    "reduce": build_reduce,
    "cast": build_cast,
    "select": build_select,
    "scale": build_scale,
}
