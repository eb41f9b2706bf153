"""Special functions from elementwise ops, computed in float64 and cast to the node's dtype:
lgamma (Lanczos, g = 7, reflected below 1/2), digamma (shifted up by six terms of the recurrence,
then the asymptotic series; reflected below 0), trigamma (polygamma of order 1: the same shift
and series, reflected below 1/2, as torch), polygamma of higher orders (the Hurwitz zeta function,
cephes' Euler-Maclaurin sum, reflected below 0), mvlgamma (a sum of lgammas), erfinv (Giles'
approximation refined by Newton steps on erf), frexp and the angle of real numbers."""

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


def _trigamma_wide(e: Emitter, x: Variable) -> Variable:
    """psi'(x) as torch's calc_trigamma: below 1/2 reflected (psi'(1 - x) + psi'(x) = pi^2 /
    sin^2(pi x)), six terms of the recurrence, then the asymptotic series."""
    nb = e.nb
    z = x if str(x.dtype) == _WIDE else nb.cast(x, _WIDE)
    o = _Ops(e, z)
    low = nb.less_than(z, o.c(0.5))
    sin_pi = nb.sin(nb.scale(z, math.pi))
    reflection = nb.divide(o.c(math.pi * math.pi), nb.multiply(sin_pi, sin_pi))
    y = nb.select(low, nb.subtract(o.c(1.0), z), z)
    total = o.c(0.0)
    for k in range(6):
        w = nb.add(y, o.c(float(k)))
        total = nb.add(total, nb.divide(o.c(1.0), nb.multiply(w, w)))
    w = nb.add(y, o.c(6.0))
    ixx = nb.divide(o.c(1.0), nb.multiply(w, w))
    tail = nb.multiply(ixx, nb.subtract(o.c(1 / 6), nb.multiply(ixx, nb.subtract(o.c(1 / 30),
                                                                              nb.scale(ixx, 1 / 42)))))
    series = nb.divide(nb.add(nb.add(o.c(1.0), nb.divide(o.c(0.5), w)), tail), w)
    value = nb.add(total, series)
    return nb.select(low, nb.subtract(reflection, value), value)


_ZETA_BERNOULLI = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
                   -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
                   1.8152105401943546773e17, -7.1661652561756670113e18)
"""(2j)! / B_2j of the Euler-Maclaurin tail of the Hurwitz zeta function (cephes' `zeta`)."""


def _zeta_positive(o: _Ops, s: int, q: Variable) -> Variable:
    """Hurwitz zeta(s, q) = sum over k >= 0 of (q + k)^-s for q > 0 and an integer s >= 2, as
    cephes: nine terms of the sum, then the Euler-Maclaurin tail at w = q + 9 (>= 9)."""
    nb = o.nb
    total = o.c(0.0)
    for k in range(10):
        total = nb.add(total, nb.pow(nb.add(q, o.c(float(k))), o.c(float(-s))))
    w = nb.add(q, o.c(9.0))
    b = nb.pow(w, o.c(float(-s)))
    total = nb.add(total, nb.subtract(nb.divide(nb.multiply(b, w), o.c(s - 1.0)), nb.scale(b, 0.5)))
    rising, k = 1.0, 0.0
    for coefficient in _ZETA_BERNOULLI:
        rising *= s + k  # s (s + 1) ... (s + 2j - 2)
        b = nb.divide(b, w)
        total = nb.add(total, nb.scale(b, rising / coefficient))
        rising *= s + k + 1.0
        b = nb.divide(b, w)
        k += 2.0
    return total


def _zeta(e: Emitter, s: int, q: Variable) -> Variable:
    """zeta(s, q) for any real q: below 0, with f = q - floor(q) and K = -floor(q), the K terms
    (q + k)^-s = (f - j)^-s, j = 1..K, sum to (-1)^s (zeta(s, 1 - f) - zeta(s, K + 1 - f)), so
    zeta(s, q) = zeta(s, f) + (-1)^s (zeta(s, 1 - f) - zeta(s, K + 1 - f)): three evaluations at
    positive arguments (cephes sums the K terms one by one). +inf at 0 and the negative integers."""
    nb = e.nb
    o = _Ops(e, q)
    negative = nb.less_than(q, o.c(0.0))
    pole = nb.logical_and(nb.equal(q, nb.floor(q)), nb.less_equal(q, o.c(0.0)))
    frac = nb.subtract(q, nb.floor(q))
    safe_frac = nb.select(pole, o.c(0.5), frac)
    count = nb.negative(nb.floor(q))
    reflected = nb.subtract(_zeta_positive(o, s, nb.subtract(o.c(1.0), safe_frac)),
                            _zeta_positive(o, s, nb.subtract(nb.add(count, o.c(1.0)), safe_frac)))
    below = nb.add(_zeta_positive(o, s, safe_frac), reflected if s % 2 == 0 else nb.negative(reflected))
    above = _zeta_positive(o, s, nb.select(negative, o.c(1.0), nb.select(pole, o.c(1.0), q)))
    return nb.select(pole, o.c(math.inf), nb.select(negative, below, above))


def _polygamma_order(n: int, x: object) -> str | None:
    return None if isinstance(n, int) and n >= 0 else f"polygamma of order {n}"


@converts("aten.polygamma.default", check=_polygamma_order)
def _polygamma(e: Emitter, n: int, x: Variable) -> Value:
    """digamma (order 0), trigamma (order 1: torch's calc_trigamma), else as torch:
    (-1)^(n + 1) n! zeta(n + 1, x)."""
    if n == 0:
        return _digamma(e, x)
    if n == 1:
        return e.nb.cast(_trigamma_wide(e, x), e.dtype)
    z = x if str(x.dtype) == _WIDE else e.nb.cast(x, _WIDE)
    factor = (1.0 if n % 2 else -1.0) * math.factorial(n)
    return e.nb.cast(e.nb.scale(_zeta(e, n + 1, z), factor), e.dtype)


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


_ERFINV_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                   -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERFINV_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)
"""Giles' single-precision erfinv polynomials ("Approximating the erfinv function", 2010), in
w = -log((1 - y)(1 + y)) - 2.5 (w < 5) and sqrt(w) - 3 (the tails)."""


def _horner(o: _Ops, t: Variable, coefficients: tuple[float, ...]) -> Variable:
    acc = o.c(coefficients[0])
    for c in coefficients[1:]:
        acc = o.nb.add(o.nb.multiply(acc, t), o.c(c))
    return acc


@converts("aten.erfinv.default")
def _erfinv(e: Emitter, y: Variable) -> Value:
    """Giles' approximation (~1e-7 relative) refined by two Newton steps on erf(x) = y in float64;
    +-inf at +-1, NaN outside [-1, 1] (as torch)."""
    nb = e.nb
    y = nb.cast(y, _WIDE)
    o = _Ops(e, y)
    w = nb.negative(nb.log(nb.multiply(nb.subtract(o.c(1.0), y), nb.add(o.c(1.0), y))))
    central = _horner(o, nb.subtract(w, o.c(2.5)), _ERFINV_CENTRAL)
    tail = _horner(o, nb.subtract(nb.sqrt(nb.maximum(w, o.c(5.0))), o.c(3.0)), _ERFINV_TAIL)
    x = nb.multiply(nb.select(nb.less_than(w, o.c(5.0)), central, tail), y)
    for _ in range(2):  # x -= (erf(x) - y) / erf'(x), erf'(x) = 2 / sqrt(pi) exp(-x^2)
        slope = nb.scale(nb.exp(nb.negative(nb.multiply(x, x))), 2 / math.sqrt(math.pi))
        x = nb.subtract(x, nb.divide(nb.subtract(nb.erf(x), y), slope))
    edge = nb.equal(nb.abs(y), o.c(1.0))
    x = nb.select(edge, nb.scale(y, math.inf), x)
    return nb.cast(nb.select(nb.greater_than(nb.abs(y), o.c(1.0)), o.c(math.nan), x), e.dtype)


@converts("aten.frexp.Tensor")
def _frexp(e: Emitter, x: Variable) -> Value:
    """(mantissa, exponent): x = mantissa 2^exponent, 0.5 <= |mantissa| < 1 (int32 exponent); 0,
    inf and NaN: (x, 0). Computed in float64, where 2^-exponent of a float32 subnormal is finite;
    the exponent from log2, corrected by one where log2 rounded across a power of two."""
    nb = e.nb
    wide = nb.cast(x, _WIDE)
    o = _Ops(e, wide)
    magnitude = nb.abs(wide)
    special = nb.logical_or(nb.equal(magnitude, o.c(0.0)), nb.logical_not(nb.is_finite(wide)))
    safe = nb.select(special, o.c(1.0), magnitude)
    exponent = nb.add(nb.floor(nb.log2(safe)), o.c(1.0))
    mantissa = nb.divide(safe, nb.pow(o.c(2.0), exponent))
    too_big, too_small = nb.greater_equal(mantissa, o.c(1.0)), nb.less_than(mantissa, o.c(0.5))
    exponent = nb.add(exponent, nb.select(too_big, o.c(1.0), nb.select(too_small, o.c(-1.0), o.c(0.0))))
    mantissa = nb.divide(safe, nb.pow(o.c(2.0), exponent))
    signed = nb.select(nb.less_than(wide, o.c(0.0)), nb.negative(mantissa), mantissa)
    mantissa_out = nb.cast(nb.select(special, wide, signed), str(x.dtype))
    return mantissa_out, nb.cast(nb.select(special, o.c(0.0), exponent), "int32")


@converts("aten.angle.default")
def _angle(e: Emitter, x: Variable) -> Value:
    """The angle of a real number: pi below 0, else 0; NaN stays NaN (complex inputs are eager by
    design)."""
    nb = e.nb
    x = x if str(x.dtype) == e.dtype else nb.cast(x, e.dtype)
    zero = nb.fill_constant(list(x.shape), 0.0, dtype=e.dtype)
    angle = nb.select(nb.less_than(x, zero), nb.fill_constant(list(x.shape), math.pi, dtype=e.dtype), zero)
    return nb.select(nb.is_nan(x), x, angle)
