"""Conversions between index expressions and sympy, for algebra on symbolic dims.

`to_sympy` maps Vars to integer symbols (symbolic dims are `positive=True`), `+ - *` to sympy
arithmetic, `cinn_min`/`cinn_max` to `Min`/`Max`. C division and remainder agree with sympy's
`floor(a / b)` and `Mod(a, b)` only for a nonnegative dividend and positive divisor, so they map to
those exactly when the analyzer proves it, and to the uninterpreted functions `cdiv`/`cmod`
otherwise (sound: sympy then treats them as opaque). Any other node (loads, casts, calls) becomes
an opaque symbol remembered by the `SympyBridge`, so `from_sympy` restores it.

`from_sympy` maps back: `floor(x / c)` and `cdiv` to `/`, `Mod` and `cmod` to `%`, integer powers to
products. A non-integral rational coefficient cannot be an index expression and raises ValueError.
"""

from __future__ import annotations

from typing import Any

import sympy

from cinn_py.ir import Add, BinaryOp, DType, Div, Expr, IntImm, Max, Min, Minus, Mod, Mul, Sub, Var, int64
from cinn_py.symbolic.analyzer import Analyzer

CDIV = sympy.Function("cdiv")
CMOD = sympy.Function("cmod")


class SympyBridge:
    """Symbol tables of one conversion round trip (Var and opaque-atom names)."""

    def __init__(self, analyzer: Analyzer | None = None) -> None:
        self.analyzer = analyzer or Analyzer()
        self.vars: dict[str, Expr] = {}
        self._opaque: dict[Expr, sympy.Symbol] = {}

    # -- to sympy ----------------------------------------------------------------------------------
    def to_sympy(self, expr: Expr) -> Any:
        method = getattr(self, "_to_" + type(expr).__name__, None)
        if method is not None:
            return method(expr)
        return self._opaque_symbol(expr)

    def _opaque_symbol(self, expr: Expr) -> sympy.Symbol:
        sym = self._opaque.get(expr)
        if sym is None:
            sym = sympy.Symbol(f"_opaque{len(self._opaque)}", integer=True)
            self._opaque[expr] = sym
            self.vars[sym.name] = expr
        return sym

    def _to_IntImm(self, e: IntImm) -> Any:
        return sympy.Integer(e.value)

    def _to_Var(self, e: Var) -> Any:
        self.vars.setdefault(e.name, e)
        if e.is_symbolic_constant:
            return sympy.Symbol(e.name, integer=True, positive=True)
        return sympy.Symbol(e.name, integer=True)

    def _to_Add(self, e: Add) -> Any:
        return self.to_sympy(e.a) + self.to_sympy(e.b)

    def _to_Sub(self, e: Sub) -> Any:
        return self.to_sympy(e.a) - self.to_sympy(e.b)

    def _to_Mul(self, e: Mul) -> Any:
        return self.to_sympy(e.a) * self.to_sympy(e.b)

    def _to_Minus(self, e: Minus) -> Any:
        return -self.to_sympy(e.v)

    def _to_Min(self, e: Min) -> Any:
        return sympy.Min(self.to_sympy(e.a), self.to_sympy(e.b))

    def _to_Max(self, e: Max) -> Any:
        return sympy.Max(self.to_sympy(e.a), self.to_sympy(e.b))

    def _floor_semantics(self, e: BinaryOp) -> bool:
        return self.analyzer.prove_nonneg(e.a) and self.analyzer.prove_lt(IntImm(e.b.dtype, 0), e.b)

    def _to_Div(self, e: Div) -> Any:
        a, b = self.to_sympy(e.a), self.to_sympy(e.b)
        return sympy.floor(a / b) if self._floor_semantics(e) else CDIV(a, b)

    def _to_Mod(self, e: Mod) -> Any:
        a, b = self.to_sympy(e.a), self.to_sympy(e.b)
        return sympy.Mod(a, b) if self._floor_semantics(e) else CMOD(a, b)

    # -- from sympy --------------------------------------------------------------------------------
    def from_sympy(self, value: Any, dtype: DType = int64) -> Expr:
        value = sympy.sympify(value)
        if value.is_Integer:
            return IntImm(dtype, int(value))
        if value.is_Rational:
            raise ValueError(f"from_sympy: {value} is not an integer; index expressions are integral")
        if value.is_Symbol:
            known = self.vars.get(value.name)
            return known if known is not None else Var(value.name, dtype)
        if value.is_Add:
            return self._fold(Add, [self.from_sympy(arg, dtype) for arg in value.args])
        if value.is_Mul:
            return self._from_mul(value, dtype)
        if value.is_Pow:
            return self._from_pow(value, dtype)
        return self._from_function(value, dtype)

    @staticmethod
    def _fold(cls: type[BinaryOp], items: list[Expr]) -> Expr:
        result = items[0]
        for item in items[1:]:
            result = cls(result, item)
        return result

    def _from_mul(self, value: Any, dtype: DType) -> Expr:
        coef, rest = value.as_coeff_Mul()
        if not coef.is_Integer:
            raise ValueError(f"from_sympy: {value} has the non-integral coefficient {coef}")
        factors = [self.from_sympy(arg, dtype) for arg in sympy.Mul.make_args(rest)]
        body = self._fold(Mul, factors)
        return body if coef == 1 else Mul(body, IntImm(dtype, int(coef)))

    def _from_pow(self, value: Any, dtype: DType) -> Expr:
        base, exponent = value.args
        if not (exponent.is_Integer and int(exponent) > 0):
            raise ValueError(f"from_sympy: {value} is not a polynomial (exponent {exponent})")
        b = self.from_sympy(base, dtype)
        return self._fold(Mul, [b] * int(exponent))

    def _from_function(self, value: Any, dtype: DType) -> Expr:
        func = value.func
        if func in (sympy.Min, sympy.Max):
            cls = Min if func is sympy.Min else Max
            return self._fold(cls, [self.from_sympy(arg, dtype) for arg in value.args])
        if func is sympy.floor:
            num, den = sympy.fraction(sympy.together(value.args[0]))
            return Div(self.from_sympy(num, dtype), self.from_sympy(den, dtype))
        if func is sympy.ceiling:
            num, den = sympy.fraction(sympy.together(value.args[0]))
            n, d = self.from_sympy(num, dtype), self.from_sympy(den, dtype)
            return Div(Sub(Add(n, d), IntImm(dtype, 1)), d)
        if func in (sympy.Mod, CMOD):
            return Mod(self.from_sympy(value.args[0], dtype), self.from_sympy(value.args[1], dtype))
        if func is CDIV:
            return Div(self.from_sympy(value.args[0], dtype), self.from_sympy(value.args[1], dtype))
        raise ValueError(f"from_sympy: cannot express {value} ({func}) as an index expression")


def to_sympy(expr: Expr, bridge: SympyBridge | None = None) -> Any:
    """The sympy expression of an index expression (see the module docstring)."""
    return (bridge or SympyBridge()).to_sympy(expr)


def from_sympy(value: Any, dtype: DType = int64, bridge: SympyBridge | None = None) -> Expr:
    """The index expression of a sympy expression; Vars are rebuilt by name (`bridge` restores
    the exact Vars and opaque atoms of an earlier `to_sympy`)."""
    return (bridge or SympyBridge()).from_sympy(value, dtype)


def sympy_prove_eq(a: Expr, b: Expr, analyzer: Analyzer) -> bool:
    """True when sympy simplifies `a - b` to 0 (the slow path of `prove_eq`)."""
    bridge = SympyBridge(analyzer)
    diff = bridge.to_sympy(a) - bridge.to_sympy(b)
    try:
        return bool(sympy.simplify(diff) == 0)
    except (TypeError, ValueError, RecursionError):
        return False
