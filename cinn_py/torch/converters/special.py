"""Gamma-family special functions from elementwise ops, computed in float64 and cast to the node's
dtype: lgamma (Lanczos, g = 7, reflected below 1/2), digamma (shifted up by six terms of the
recurrence, then the asymptotic series; reflected below 0) and mvlgamma (a sum of lgammas)."""

from __future__ import annotations

import math

from cinn_py.frontend.program import Variable
from cinn_py.torch.converters.base import Emitter, Value, converts

_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6,
            1.5056327351493116e-7)
_WIDE = "float64"


class _Ops:
    """Float64 helpers over one shape."""

    def __init__(self, e: Emitter, like: Variable) -> None:
        self.nb, self.shape = e.nb, list(like.shape)

    def c(self, value: float) -> Variable:
        return self.nb.fill_constant(self.shape, value, dtype=_WIDE)

    def non_positive_integer(self, z: Variable) -> Variable:
        nb = self.nb
        return nb.logical_and(nb.equal(z, nb.floor(z)), nb.less_equal(z, self.c(0.0)))


def _lanczos(o: _Ops, y: Variable) -> Variable:
    """lgamma(y) for y >= 1/2."""
    nb = o.nb
    z = nb.subtract(y, o.c(1.0))
    a = o.c(_LANCZOS[0])
    for i, p in enumerate(_LANCZOS[1:], start=1):
        a = nb.add(a, nb.divide(o.c(p), nb.add(z, o.c(float(i)))))
    t = nb.add(z, o.c(7.5))
    head = nb.subtract(nb.multiply(nb.add(z, o.c(0.5)), nb.log(t)), t)
    return nb.add(nb.add(head, o.c(0.5 * math.log(2 * math.pi))), nb.log(a))


def lgamma_wide(e: Emitter, x: Variable) -> Variable:
    """lgamma of x (cast to float64), float64; +inf at the poles (0, -1, -2, ...)."""
    nb = e.nb
    z = x if str(x.dtype) == _WIDE else nb.cast(x, _WIDE)
    o = _Ops(e, z)
    low = nb.less_than(z, o.c(0.5))
    y = nb.select(low, nb.subtract(o.c(1.0), z), z)
    main = _lanczos(o, y)
    reflected = nb.subtract(nb.log(nb.divide(o.c(math.pi), nb.abs(nb.sin(nb.scale(z, math.pi))))), main)
    value = nb.select(low, reflected, main)
    return nb.select(o.non_positive_integer(z), o.c(math.inf), value)


@converts("aten.lgamma.default")
def _lgamma(e: Emitter, x: Variable) -> Value:
    return e.nb.cast(lgamma_wide(e, x), e.dtype)


def _digamma_wide(e: Emitter, x: Variable) -> Variable:
    nb = e.nb
    z = x if str(x.dtype) == _WIDE else nb.cast(x, _WIDE)
    o = _Ops(e, z)
    negative = nb.less_than(z, o.c(0.0))
    y = nb.select(negative, nb.subtract(o.c(1.0), z), z)  # psi(1 - z) - pi / tan(pi z) below 0
    shift = o.c(0.0)
    for k in range(6):  # psi(y) = psi(y + 6) - sum 1 / (y + k)
        shift = nb.add(shift, nb.divide(o.c(1.0), nb.add(y, o.c(float(k)))))
    w = nb.add(y, o.c(6.0))
    inv2 = nb.divide(o.c(1.0), nb.multiply(w, w))
    series = nb.multiply(inv2, nb.subtract(o.c(1 / 12), nb.multiply(inv2, nb.subtract(
        o.c(1 / 120), nb.multiply(inv2, nb.subtract(o.c(1 / 252), nb.multiply(inv2, o.c(1 / 240))))))))
    psi = nb.subtract(nb.subtract(nb.subtract(nb.log(w), nb.divide(o.c(0.5), w)), series), shift)
    reflected = nb.subtract(psi, nb.divide(o.c(math.pi), nb.tan(nb.scale(z, math.pi))))
    value = nb.select(negative, reflected, psi)
    at_zero = nb.equal(z, o.c(0.0))
    value = nb.select(o.non_positive_integer(z), o.c(math.nan), value)
    return nb.select(at_zero, o.c(-math.inf), value)


@converts("aten.digamma.default")
def _digamma(e: Emitter, x: Variable) -> Value:
    """psi(x); -inf at 0 and NaN at the negative integers, as torch."""
    return e.nb.cast(_digamma_wide(e, x), e.dtype)


@converts("aten.polygamma.default", check=lambda n, x: None if n == 0 else f"polygamma of order {n}")
def _polygamma(e: Emitter, n: int, x: Variable) -> Value:
    return _digamma(e, x)


@converts("aten.mvlgamma.default")
def _mvlgamma(e: Emitter, x: Variable, p: int) -> Value:
    """p (p - 1) / 4 log(pi) + sum over j < p of lgamma(x - j / 2)."""
    nb = e.nb
    z = nb.cast(x, _WIDE)
    o = _Ops(e, z)
    total = o.c(p * (p - 1) / 4 * math.log(math.pi))
    for j in range(p):
        total = nb.add(total, lgamma_wide(e, nb.subtract(z, o.c(j / 2))))
    return nb.cast(total, e.dtype)
