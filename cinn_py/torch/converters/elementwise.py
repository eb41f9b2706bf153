"""Elementwise ops: arithmetic with torch's type promotion, comparisons, activations and their
backward ops."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from cinn_py.frontend.program import Variable
from cinn_py.torch.converters.base import (
    Converter,
    Emitter,
    Value,
    converts,
    scaled,
)

_COMPARISONS = frozenset({"greater_than", "greater_equal", "less_than", "less_equal", "equal", "not_equal"})


def _promoted(e: Emitter, method: str, a: Variable, b: Any) -> tuple[Variable, Any]:
    """Operands cast to torch's promoted dtype (the node's, or for comparisons the wider operand's)."""
    if not isinstance(b, Variable):
        return (a, b) if method in _COMPARISONS or str(a.dtype) == e.dtype else (e.nb.cast(a, e.dtype), b)
    to = str(np.promote_types(str(a.dtype), str(b.dtype))) if method in _COMPARISONS else e.dtype
    return tuple(v if str(v.dtype) == to else e.nb.cast(v, to) for v in (a, b))  # type: ignore[return-value]


_BOOL_ARITHMETIC = {"multiply": "logical_and", "add": "logical_or", "maximum": "logical_or",
                    "minimum": "logical_and"}
"""torch computes bool * bool, bool + bool, max/min of bools in bool (and, or); NetBuilder's
arithmetic takes numbers only."""


def _binary(method: str) -> Converter:
    def convert(e: Emitter, a: Any, b: Any) -> Value:
        if not isinstance(a, Variable):
            a = e.broadcast(a, b.shape)
        if e.dtype == "bool" and method in _BOOL_ARITHMETIC:
            return _bool_binary(e, _BOOL_ARITHMETIC[method], a, b)
        return getattr(e.nb, method)(*_promoted(e, method, a, b))
    return convert


def _bool_binary(e: Emitter, method: str, a: Variable, b: Any) -> Value:
    """A logical op on operands cast to bool (a number operand: its truth, broadcast)."""
    b = b if isinstance(b, Variable) else e.broadcast(bool(b), a.shape)
    a, b = (v if str(v.dtype) == "bool" else e.nb.not_equal(v, 0) for v in (a, b))
    return getattr(e.nb, method)(a, b)


@converts("aten.add.Tensor", "aten.add.Scalar")
def _add(e: Emitter, a: Any, b: Any, alpha: Any = 1) -> Value:
    return _binary("add")(e, a, scaled(e, b, alpha))


@converts("aten.sub.Tensor", "aten.sub.Scalar")
def _sub(e: Emitter, a: Any, b: Any, alpha: Any = 1) -> Value:
    return _binary("subtract")(e, a, scaled(e, b, alpha))


@converts("aten.rsub.Scalar", "aten.rsub.Tensor")
def _rsub(e: Emitter, a: Any, b: Any, alpha: Any = 1) -> Value:
    return _binary("subtract")(e, b, scaled(e, a, alpha))


for _name, _method in (("mul", "multiply"),
                       ("gt", "greater_than"), ("ge", "greater_equal"), ("lt", "less_than"),
                       ("le", "less_equal"), ("eq", "equal"), ("ne", "not_equal")):
    converts(f"aten.{_name}.Tensor", f"aten.{_name}.Scalar", f"aten.{_name}.default")(_binary(_method))
converts("aten.div.Tensor", "aten.div.Scalar")(_binary("divide"))  # with a rounding mode: math.py

for _name, _method in (("neg", "negative"), ("exp", "exp"), ("log", "log"), ("tanh", "tanh"),
                       ("sigmoid", "sigmoid"), ("sqrt", "sqrt"), ("rsqrt", "rsqrt"),
                       ("abs", "abs"), ("erf", "erf"), ("sin", "sin"), ("cos", "cos"),
                       ("reciprocal", "reciprocal"), ("silu", "silu"), ("log1p", "log1p"), ("floor", "floor"),
                       ("ceil", "ceil")):
    converts(f"aten.{_name}.default")(lambda e, x, _m=_method: getattr(e.nb, _m)(x))


@converts("aten.pow.Tensor_Scalar")
def _pow(e: Emitter, x: Variable, exponent: Any) -> Value:
    if exponent == 2:
        return e.nb.multiply(x, x)
    return e.nb.pow(x, e.broadcast(exponent, x.shape))


# torch's NaN rule: max/min/relu/clamp of a NaN is NaN. NetBuilder's maximum/minimum are CINN's
# `a > b ? a : b` (a NaN operand gives b: relu(NaN) = 0, clamp(NaN) = lo), which NetBuilder
# programs keep; a torch graph gets torch's semantics from one `select(isnan(a), a, ...)` more,
# a compare and a blend per vector: the kernels stay vectorised (docs/training.md).
def nan_kept(e: Emitter, x: Any, y: Variable) -> Variable:
    """`y`, but `x` where `x` is NaN (floating-point `x`; integers have no NaN)."""
    if not isinstance(x, Variable) or not x.dtype.is_float:
        return y
    x = e.broadcast(x, y.shape)
    return e.nb.select(e.nb.is_nan(x), x, y)


def _nan_propagating(method: str) -> Any:
    def convert(e: Emitter, a: Any, b: Any) -> Value:
        y = _binary(method)(e, a, b)
        return nan_kept(e, a, y)  # a NaN `b` already wins: cinn_max(a, NaN) is NaN
    return convert


for _name, _method in (("maximum", "maximum"), ("minimum", "minimum")):
    converts(f"aten.{_name}.Tensor", f"aten.{_name}.Scalar",
             f"aten.{_name}.default")(_nan_propagating(_method))


@converts("aten.relu.default")
def _relu(e: Emitter, x: Variable) -> Value:
    return nan_kept(e, x, e.nb.relu(x))


@converts("aten.clamp.default")
def _clamp(e: Emitter, x: Variable, lo: Any = None, hi: Any = None) -> Value:
    y = x if lo is None else e.nb.maximum(x, lo)
    y = y if hi is None else e.nb.minimum(y, hi)
    return y if y is x else nan_kept(e, x, y)


converts("aten.clamp_min.default")(lambda e, x, lo: _clamp(e, x, lo))
converts("aten.clamp_max.default")(lambda e, x, hi: _clamp(e, x, None, hi))


@converts("aten.threshold_backward.default")
def _threshold_backward(e: Emitter, g: Variable, x: Variable, threshold: Any) -> Value:
    return e.nb.select(e.nb.greater_than(x, threshold), g, e.broadcast(0))


@converts("aten.sigmoid_backward.default")
def _sigmoid_backward(e: Emitter, g: Variable, y: Variable) -> Value:
    return e.nb.multiply(g, e.nb.multiply(y, e.nb.subtract(e.broadcast(1.0), y)))


@converts("aten.tanh_backward.default")
def _tanh_backward(e: Emitter, g: Variable, y: Variable) -> Value:
    return e.nb.multiply(g, e.nb.subtract(e.broadcast(1.0), e.nb.multiply(y, y)))


def _gelu_mode(*args: Any, approximate: str = "none") -> str | None:
    return None if approximate in ("none", "tanh") else f"gelu approximate={approximate!r}"


@converts("aten.gelu.default", check=_gelu_mode)
def _gelu(e: Emitter, x: Variable, approximate: str = "none") -> Value:
    return e.nb.gelu(x, approximate=approximate == "tanh")


@converts("aten.gelu_backward.default", check=_gelu_mode)
def _gelu_backward(e: Emitter, g: Variable, x: Variable, approximate: str = "none") -> Value:
    nb = e.nb
    if approximate == "tanh":  # d/dx 0.5 x (1 + tanh(k (x + c x^3)))
        k, c = math.sqrt(2 / math.pi), 0.044715
        x2 = nb.multiply(x, x)
        t = nb.tanh(nb.scale(nb.add(x, nb.scale(nb.multiply(x2, x), c)), k))
        dinner = nb.scale(x2, 3 * c * k, k)
        left = nb.scale(t, 0.5, 0.5)
        right = nb.multiply(nb.scale(x, 0.5), nb.multiply(nb.scale(nb.multiply(t, t), -1.0, 1.0), dinner))
        return nb.multiply(g, nb.add(left, right))
    cdf = nb.scale(nb.erf(nb.scale(x, math.sqrt(0.5))), 0.5, 0.5)
    pdf = nb.scale(nb.exp(nb.scale(nb.multiply(x, x), -0.5)), 1 / math.sqrt(2 * math.pi))
    return nb.multiply(g, nb.add(cdf, nb.multiply(x, pdf)))


