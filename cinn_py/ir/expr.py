"""Expression nodes of the CINN AST IR (`paddle/cinn/ir/ir.h`): the `Expr` base, immediates,
`Var`, the arithmetic / comparison / logical operators, `Cast` and `Select`. The constructors
(`const`, `as_expr`, `eq`, ...) are `expr_build`, loads, calls, reductions and vector nodes
`expr_access` (both re-exported here).

Expressions are frozen dataclasses compared **by value** (two `Add(i, 1)` are equal and hash
equal), so they can key dicts and the simplifier can match them. Statements (`stmt.py`) compare by
identity instead, because schedules use them as handles.

Python operators build nodes: `i * 4 + j`, `x < n`, `-x`; Python numbers are promoted to
immediates of the other operand's dtype. `==` stays structural equality; use `eq(a, b)`/`ne(a, b)`
for comparison nodes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Union

from cinn_py.ir import dtype as dt
from cinn_py.ir.dtype import DType
from cinn_py.ir.structural import install_depth_guards

ExprLike = Union["Expr", int, float, bool]


def _derived_dtype() -> DType:
    """The dtype field of a node whose dtype follows from its operands (set in `__post_init__`)."""
    return field(init=False, repr=False, compare=False)  # type: ignore[return-value]


def _set_dtype(node: Expr, dtype: DType) -> None:
    object.__setattr__(node, "dtype", dtype)  # frozen dataclass: set once, at construction


class Expr:
    """Base of every expression node; every node has a `dtype`.

    Immediates, `Var`, `Cast` and `Call` take their dtype as a constructor field; the other nodes
    derive it from their operands once, at construction (`_derived_dtype`), into a field that is
    left out of `__init__`, equality, hashing and repr. Either way `dtype` is a plain attribute.
    """

    __slots__ = ()
    dtype: DType
    if TYPE_CHECKING:  # every node class is a dataclass (dataclasses.replace/fields take any Expr)
        __dataclass_fields__: ClassVar[dict[str, Any]]

    def __str__(self) -> str:
        from cinn_py.ir.text.printer import print_ir

        return print_ir(self)

    def __bool__(self) -> bool:
        # `if X[i] > 0:` or `a and b` on IR expressions would silently be always true; TVM
        # raises here too. Use `select(...)`/`ir.And` in IR, or `is not None` for optionals.
        raise TypeError(
            f"an IR expression has no truth value: {self}; use select()/ir.And/ir.Or to build "
            "conditions, and `is not None` to test optional expressions"
        )

    # -- operator sugar: builds nodes, never evaluates --------------------------------------
    def __add__(self, other: ExprLike) -> Expr:
        return Add(self, as_expr(other, self.dtype))

    def __radd__(self, other: ExprLike) -> Expr:
        return Add(as_expr(other, self.dtype), self)

    def __sub__(self, other: ExprLike) -> Expr:
        return Sub(self, as_expr(other, self.dtype))

    def __rsub__(self, other: ExprLike) -> Expr:
        return Sub(as_expr(other, self.dtype), self)

    def __mul__(self, other: ExprLike) -> Expr:
        return Mul(self, as_expr(other, self.dtype))

    def __rmul__(self, other: ExprLike) -> Expr:
        return Mul(as_expr(other, self.dtype), self)

    def __truediv__(self, other: ExprLike) -> Expr:
        return Div(self, as_expr(other, self.dtype))

    def __rtruediv__(self, other: ExprLike) -> Expr:
        return Div(as_expr(other, self.dtype), self)

    def __floordiv__(self, other: ExprLike) -> Expr:
        return Div(self, as_expr(other, self.dtype))

    def __mod__(self, other: ExprLike) -> Expr:
        return Mod(self, as_expr(other, self.dtype))

    def __neg__(self) -> Expr:
        return Minus(self)

    def __lt__(self, other: ExprLike) -> Expr:
        return LT(self, as_expr(other, self.dtype))

    def __le__(self, other: ExprLike) -> Expr:
        return LE(self, as_expr(other, self.dtype))

    def __gt__(self, other: ExprLike) -> Expr:
        return GT(self, as_expr(other, self.dtype))

    def __ge__(self, other: ExprLike) -> Expr:
        return GE(self, as_expr(other, self.dtype))

    def __and__(self, other: ExprLike) -> Expr:
        return And(self, as_expr(other, dt.bool_))

    def __or__(self, other: ExprLike) -> Expr:
        return Or(self, as_expr(other, dt.bool_))

    def __invert__(self) -> Expr:
        return Not(self)


# --------------------------------------------------------------------------------------------
# Immediates
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class IntImm(Expr):
    """Signed integer constant: `7` (int32), `7ll` (int64), `(int8_t)7`."""

    dtype: DType
    value: int

    def __post_init__(self) -> None:
        if not self.dtype.is_int:
            raise TypeError(f"IntImm needs a signed integer dtype, got {self.dtype}")

    def __int__(self) -> int:
        # `[int(d) for d in tensor.shape]` for static shapes; a symbolic dim raises TypeError.
        return self.value

    __index__ = __int__


@dataclass(frozen=True, slots=True)
class UIntImm(Expr):
    """Unsigned integer or bool constant: `true`, `7ull`, `(uint8_t)7`."""

    dtype: DType
    value: int

    def __post_init__(self) -> None:
        if not (self.dtype.is_uint or self.dtype.is_bool):
            raise TypeError(f"UIntImm needs an unsigned or bool dtype, got {self.dtype}")

    def __int__(self) -> int:
        return self.value

    __index__ = __int__


@dataclass(frozen=True, slots=True)
class FloatImm(Expr):
    """Floating constant: `2.00000000f` (float32), `(float16)2.00000000f`, `2.0000000000000000`."""

    dtype: DType
    value: float

    def __post_init__(self) -> None:
        if not self.dtype.is_float:
            raise TypeError(f"FloatImm needs a float dtype, got {self.dtype}")

    def __float__(self) -> float:
        return self.value

    def __eq__(self, other: object) -> bool:
        # NaN literals must compare equal to themselves for structural equality.
        if not isinstance(other, FloatImm) or other.dtype != self.dtype:
            return False
        if math.isnan(self.value) and math.isnan(other.value):
            return True
        return self.value == other.value and math.copysign(1, self.value) == math.copysign(1, other.value)

    def __hash__(self) -> int:
        return hash(("FloatImm", self.dtype, "nan" if math.isnan(self.value) else self.value))


@dataclass(frozen=True, slots=True)
class StringImm(Expr):
    """String constant, printed quoted: `"text"` (`\\`, `\"`, `\n`, `\t` escaped).

    Other control characters (NUL, CR, ESC, ...) are rejected: C and the IR text have no
    faithful spelling for all of them, and a NUL would truncate the string in generated C."""

    value: str
    dtype: DType = field(default=dt.string, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.value, str):
            raise TypeError(f"StringImm needs a str value, got {type(self.value).__name__}")
        check_text(self.value, "StringImm", allowed="\n\t")


# --------------------------------------------------------------------------------------------
# Variables
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Var(Expr):
    """A named scalar: loop variable, block iter var, or symbolic dim (`S0`).

    Equality and hashing use the name and dtype only (as CINN keys Vars by name); bounds and
    flags are metadata, compared by `structural_equal`.
    """

    name: str
    dtype: DType = dt.int32
    lower_bound: Expr | None = field(default=None, compare=False)
    """Inclusive lower bound, if known (symbolic dims: `sym(lower=...)`)."""
    upper_bound: Expr | None = field(default=None, compare=False)
    """Exclusive upper bound, if known (reduce axes: their extent)."""
    is_reduce_axis: bool = field(default=False, compare=False)
    is_symbolic_constant: bool = field(default=False, compare=False)
    """True for a dynamic dim symbol such as `S0` (a LoweredFunc int64 argument)."""

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("Var needs a non-empty name")


# --------------------------------------------------------------------------------------------
# Arithmetic, comparison, logic
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class BinaryOp(Expr):
    """`(a OP b)`; the result type is the type of `a` (comparisons/logic: bool)."""

    a: Expr
    b: Expr
    dtype: DType = _derived_dtype()
    op_symbol: ClassVar[str] = "?"

    def __post_init__(self) -> None:
        # Subclasses that add checks call this too (it sets the derived dtype).
        _set_dtype(self, self.result_dtype(self.a))

    @staticmethod
    def result_dtype(a: Expr) -> DType:
        return a.dtype


class Add(BinaryOp):
    op_symbol = "+"


class Sub(BinaryOp):
    op_symbol = "-"


class Mul(BinaryOp):
    op_symbol = "*"


class Div(BinaryOp):
    """Integer division rounds toward zero (C semantics), as in CINN/CUDA."""

    op_symbol = "/"


class Mod(BinaryOp):
    """Integer remainder with the sign of the dividend (C semantics)."""

    op_symbol = "%"


class Min(BinaryOp):
    op_symbol = "cinn_min"


class Max(BinaryOp):
    op_symbol = "cinn_max"


class CmpOp(BinaryOp):
    """Comparison; result is bool."""

    @staticmethod
    def result_dtype(a: Expr) -> DType:
        return dt.bool_.with_lanes(a.dtype.lanes)


class EQ(CmpOp):
    op_symbol = "=="


class NE(CmpOp):
    op_symbol = "!="


class LT(CmpOp):
    op_symbol = "<"


class LE(CmpOp):
    op_symbol = "<="


class GT(CmpOp):
    op_symbol = ">"


class GE(CmpOp):
    op_symbol = ">="


class LogicalOp(CmpOp):
    """And/Or: both operands must be bool (CINN CHECKs this)."""

    def __post_init__(self) -> None:
        if not (self.a.dtype.is_bool and self.b.dtype.is_bool):
            raise TypeError(f"{type(self).__name__} needs bool operands, got {self.a.dtype}, {self.b.dtype}")
        super().__post_init__()


class And(LogicalOp):
    op_symbol = "and"


class Or(LogicalOp):
    op_symbol = "or"


@dataclass(frozen=True, slots=True)
class Minus(Expr):
    """Arithmetic negation, printed `-(x)`."""

    v: Expr
    dtype: DType = _derived_dtype()

    def __post_init__(self) -> None:
        _set_dtype(self, self.v.dtype)


@dataclass(frozen=True, slots=True)
class Not(Expr):
    """Logical not, printed `!x`."""

    v: Expr
    dtype: DType = field(default=dt.bool_, init=False, repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class Cast(Expr):
    """Type conversion, printed `float32(x)`."""

    dtype: DType
    v: Expr


@dataclass(frozen=True, slots=True)
class Select(Expr):
    """`select(c, t, f)`: elementwise conditional; `t` and `f` share one dtype."""

    condition: Expr
    true_value: Expr
    false_value: Expr
    dtype: DType = _derived_dtype()

    def __post_init__(self) -> None:
        if self.true_value.dtype != self.false_value.dtype:
            raise TypeError(
                f"Select branches must share a dtype, got {self.true_value.dtype} and "
                f"{self.false_value.dtype}"
            )
        _set_dtype(self, self.true_value.dtype)


# Equality and hashing of any depth (deep inlined chains): see `structural`. Leaves (immediates,
# Var) compare their own fields only and keep the generated methods.
install_depth_guards([BinaryOp, Minus, Not, Cast, Select])  # expr_access guards its own nodes

BINARY_OPS: tuple[type[BinaryOp], ...] = (Add, Sub, Mul, Div, Mod, Min, Max, EQ, NE, LT, LE, GT, GE, And, Or)

# The constructors (`expr_build`: `as_expr` serves the operators above, `check_text` StringImm) and
# the memory, call, reduction and vector nodes (`expr_access`: it subclasses `Expr`) import this
# module, so they are imported last, once every name they need exists; re-exported so that
# `expr.Load` / `expr.const` and the `E.Call` of the text layer keep their path.
from cinn_py.ir.expr_build import (  # noqa: E402, F401
    as_expr, check_text, const, eq, int_range, is_const_int, ne,
)
from cinn_py.ir.expr_access import (  # noqa: E402, F401
    Broadcast, Call, CallType, Load, Ramp, Reduce, ReduceType,
)
