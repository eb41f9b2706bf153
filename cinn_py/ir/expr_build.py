"""Constructors and checks of expression nodes: `const` (an immediate of a dtype), `as_expr` (a
Python number promoted to the other operand's dtype, as the operators of `Expr` do), `eq`/`ne`
(comparison nodes, since `==` is structural equality), `is_const_int`, and the checks of
integer ranges and identifier text the immediates and names run. The node classes are `expr`,
which re-exports everything here.
"""

from __future__ import annotations

from typing import TypeGuard

from cinn_py.diagnostics import ConstantRangeError
from cinn_py.ir import dtype as dt
from cinn_py.ir.dtype import DType
from cinn_py.ir.expr import EQ, Expr, ExprLike, FloatImm, IntImm, NE, UIntImm


# --------------------------------------------------------------------------------------------
# Constructors
# --------------------------------------------------------------------------------------------
def const(value: int | float | bool, dtype: DType | str | None = None) -> Expr:
    """An immediate of `dtype` (default: int32 for int, float32 for float, bool for bool)."""
    if dtype is None:
        dtype = dt.bool_ if isinstance(value, bool) else dt.int32 if isinstance(value, int) else dt.float32
    dtype = dt.dtype_of(dtype)
    if dtype.is_bool:
        return UIntImm(dtype, int(bool(value)))
    if dtype.is_uint:
        return UIntImm(dtype, int(value))
    if dtype.is_int:
        return IntImm(dtype, int(value))
    if dtype.is_float:
        return FloatImm(dtype, float(value))
    raise TypeError(f"cannot make a constant of dtype {dtype}")


def as_expr(value: ExprLike, like: DType | None = None) -> Expr:
    """Promote a Python number to an immediate of dtype `like` (for operator sugar)."""
    if isinstance(value, Expr):
        return value
    if like is not None and like.lanes > 1:
        like = like.element_of()
    if isinstance(value, bool):
        return const(value, dt.bool_)
    if isinstance(value, int):
        if like is not None and (like.is_integral or like.is_float):
            _check_int_fits(value, like)
            return const(value, like)
        _check_int_fits(value, dt.int32)
        return const(value, dt.int32)
    if isinstance(value, float):
        return const(value, like if like is not None and like.is_float else dt.float32)
    raise TypeError(f"cannot convert {value!r} ({type(value).__name__}) to an IR expression")


def check_text(text: str, what: str, allowed: str = "") -> str:
    """`text` if it holds no control character (Unicode category Cc) other than those in
    `allowed`; ValueError naming `what`, the character and its position otherwise."""
    for pos, ch in enumerate(text):
        if ch not in allowed and (ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F):
            raise ValueError(f"{what}: {text!r} contains the control character {ch!r} at position {pos}; "
                             "strings in the IR may not hold control characters"
                             + (f" other than {allowed.encode('unicode_escape').decode()}"
                                if allowed else ""))
    return text


def int_range(dtype: DType) -> tuple[int, int]:
    """The inclusive [min, max] of an integer (or bool) dtype."""
    if dtype.is_bool:
        return 0, 1
    if dtype.is_uint:
        return 0, 2**dtype.bits - 1
    return -(2 ** (dtype.bits - 1)), 2 ** (dtype.bits - 1) - 1


def _check_int_fits(value: int, dtype: DType) -> None:
    """A Python int promoted to an integer dtype must fit: `X_int8 + 1000` would silently wrap
    to -24 (NetBuilder's fill_constant rejects the same value)."""
    if not dtype.is_integral or dtype.is_bool:
        return
    lo, hi = int_range(dtype.element_of())
    if not lo <= value <= hi:
        raise ConstantRangeError(f"the Python int {value} is out of range for {dtype.element_of()} [{lo}, "
                                 f"{hi}]; "
                            "Python numbers take the dtype of the other operand: use a wider dtype "
                            "(cast the tensor) or a value in range")


def eq(a: ExprLike, b: ExprLike) -> Expr:
    """The comparison node `(a == b)` (Python `==` is structural equality)."""
    ea = as_expr(a)
    return EQ(ea, as_expr(b, ea.dtype))


def ne(a: ExprLike, b: ExprLike) -> Expr:
    """The comparison node `(a != b)`."""
    ea = as_expr(a)
    return NE(ea, as_expr(b, ea.dtype))


def is_const_int(e: Expr, value: int | None = None) -> TypeGuard[IntImm | UIntImm]:
    """True if `e` is an integer immediate (equal to `value` when given)."""
    if not isinstance(e, (IntImm, UIntImm)) or e.dtype.is_bool:
        return False
    return value is None or e.value == value
