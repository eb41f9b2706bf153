"""DSL math functions: the Call / node each builds, dtype rules, scalar promotion, errors; and the
intrinsics table they draw on."""

from __future__ import annotations

import math

import numpy as np
import pytest

import cinn_py as cp
from cinn_py.diagnostics import LoweringError
from cinn_py.frontend import compute as dsl
from cinn_py.ir import Call, CallType, Cast, Div, FloatImm, Max, Min, Select, UIntImm, Var, print_ir
from cinn_py.ir import dtype as dt
from cinn_py.ir.intrinsics import INTRINSICS, ArgKind, lookup

x32 = Var("x", dt.float32)
x16 = Var("h", dt.float16)
xbf = Var("b", dt.bfloat16)
n32 = Var("n", dt.int32)
u8 = Var("u", dt.uint8)
flag = Var("p", dt.bool_)

UNARY_FLOAT = ["exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "cbrt", "sin",
               "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan", "asinh", "acosh", "atanh",
               "erf", "floor", "ceil", "round", "trunc"]


@pytest.mark.parametrize("name", UNARY_FLOAT)
@pytest.mark.parametrize("x", [x32, x16, xbf], ids=["f32", "f16", "bf16"])
def test_unary_float_intrinsics_build_calls_in_their_own_dtype(name: str, x: Var) -> None:
    e = getattr(dsl, name)(x)
    assert e == Call(name, (x,), x.dtype, CallType.EXTERN)
    assert print_ir(e) == f"{name}({x.name})"


@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "rsqrt", "tanh", "erf", "sin", "cos", "log2"])
def test_float_only_intrinsics_reject_integers_with_a_clear_error(name: str) -> None:
    with pytest.raises(LoweringError, match=rf"{name}: needs a floating-point operand, got int32; cast it"):
        getattr(dsl, name)(n32)
    with pytest.raises(LoweringError, match="got bool"):
        getattr(dsl, name)(flag)


def test_rounding_is_the_identity_on_integers_and_predicates_fold() -> None:
    for name in ("floor", "ceil", "round", "trunc"):
        assert getattr(dsl, name)(n32) is n32
    assert dsl.isnan(n32) == UIntImm(dt.bool_, 0) and dsl.isinf(n32) == UIntImm(dt.bool_, 0)
    assert dsl.isfinite(n32) == UIntImm(dt.bool_, 1)
    assert dsl.isnan(x16) == Call("isnan", (x16,), dt.bool_)


def test_abs_on_every_numeric_kind() -> None:
    assert cp.abs(x32) == Call("abs", (x32,), dt.float32)
    assert cp.abs(n32) == Call("abs", (n32,), dt.int32)
    assert cp.abs(u8) is u8
    with pytest.raises(LoweringError, match="abs: needs a numeric operand, got bool"):
        cp.abs(flag)


def test_pow_promotes_a_python_number_to_the_other_side() -> None:
    assert cp.pow(x16, 2) == Call("pow", (x16, FloatImm(dt.float16, 2.0)), dt.float16)
    assert cp.pow(2.0, x32) == Call("pow", (FloatImm(dt.float32, 2.0), x32), dt.float32)
    with pytest.raises(LoweringError, match="pow: operands have different dtypes float16 and float32"):
        cp.pow(x16, x32)
    with pytest.raises(LoweringError, match="pow: needs a floating-point operand, got int32"):
        cp.pow(n32, 2)


def test_sigmoid_decomposes_like_cinn() -> None:
    e = cp.sigmoid(x16)
    assert isinstance(e, Div) and e.dtype == dt.float16
    assert print_ir(e) == "((float16)1.00000000f / ((float16)1.00000000f + exp(-(h))))"
    with pytest.raises(LoweringError, match="sigmoid: needs a floating-point operand, got int32"):
        cp.sigmoid(n32)


def test_maximum_minimum() -> None:
    assert cp.maximum(x32, 0) == Max(x32, FloatImm(dt.float32, 0.0))
    assert cp.minimum(0, n32) == Min(cp.cast(0, "int32"), n32)
    assert print_ir(cp.maximum(n32, 3)) == "cinn_max(n, 3)"
    with pytest.raises(LoweringError, match="maximum: operands have different dtypes float32 and int32"):
        cp.maximum(x32, n32)
    with pytest.raises(LoweringError, match="minimum: needs numeric operands, got bool"):
        cp.minimum(flag, flag)


def test_select() -> None:
    e = cp.select(x32 > 0, x32, 0)
    assert isinstance(e, Select) and e.false_value == FloatImm(dt.float32, 0.0)
    assert print_ir(e) == "select((x > 0.00000000f), x, 0.00000000f)"
    assert cp.select(flag, 1.0, 2.0).dtype == dt.float32
    with pytest.raises(TypeError, match="select: the condition is a Python bool"):
        cp.select(x32 == 0, 1.0, 2.0)  # structural equality, not a comparison node
    with pytest.raises(LoweringError, match="select: condition must be bool, got float32"):
        cp.select(x32, 1.0, 0.0)
    with pytest.raises(LoweringError, match="select: operands have different dtypes float32 and int32"):
        cp.select(flag, x32, n32)


def test_cast() -> None:
    assert cp.cast(n32, "float16") == Cast(dt.float16, n32)
    assert cp.cast(x32, dt.float32) is x32
    assert print_ir(cp.cast(n32, "bfloat16")) == "bfloat16(n)"
    assert cp.cast(3, "int64").dtype == dt.int64
    with pytest.raises(TypeError, match="cast: target must be a scalar"):
        cp.cast(x32, "float32<4>")
    with pytest.raises(TypeError, match="unknown dtype"):
        cp.cast(x32, "float128")


def test_math_functions_reject_non_expressions() -> None:
    X = cp.placeholder((4,), "float32", "X")
    with pytest.raises(TypeError, match="got the tensor 'X' itself; index it"):
        cp.exp(X)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="expected an IR expression or a Python number, got str"):
        cp.exp("x")  # type: ignore[arg-type]


def test_call_intrinsic_checks_names_and_arity() -> None:
    from cinn_py.frontend.math_ops import call_intrinsic

    with pytest.raises(ValueError, match="unknown intrinsic 'expp'"):
        call_intrinsic("expp", x32)
    with pytest.raises(TypeError, match="pow: expects 2 argument"):
        call_intrinsic("pow", x32)


def test_public_api_exports_the_planned_names() -> None:
    for name in ("exp", "log", "sqrt", "rsqrt", "tanh", "erf", "sigmoid", "abs", "floor", "ceil", "pow",
                 "maximum", "minimum", "select", "cast"):
        assert callable(getattr(cp, name))


# -- intrinsics table ------------------------------------------------------------------------------
def test_every_dsl_intrinsic_is_in_the_table_with_its_arity() -> None:
    for name in UNARY_FLOAT + ["isnan", "isinf", "isfinite", "abs"]:
        assert lookup(name) is not None and lookup(name).arity == 1
    for name in ("pow", "atan2", "fmod"):
        assert INTRINSICS[name].arity == 2 and INTRINSICS[name].arg_kind is ArgKind.FLOAT
    assert lookup("__syncthreads") is None
    assert INTRINSICS["isnan"].result_dtype(dt.float16) == dt.bool_
    assert INTRINSICS["exp"].result_dtype(dt.bfloat16) == dt.bfloat16
    assert not INTRINSICS["exp"].accepts(dt.int32) and INTRINSICS["abs"].accepts(dt.int8)


def test_reference_semantics() -> None:
    x = np.array([-2.5, -0.5, 0.5, 1.5, 2.5], dtype=np.float32)
    # C round: half away from zero (np.round would give -2, -0, 0, 2, 2)
    np.testing.assert_array_equal(INTRINSICS["round"].reference(x), [-3.0, -1.0, 1.0, 2.0, 3.0])
    np.testing.assert_allclose(INTRINSICS["rsqrt"].reference(np.float32([4.0, 16.0])), [0.5, 0.25])
    erf = INTRINSICS["erf"].reference(np.float32([0.0, 0.5, -1.0]))
    assert erf.dtype == np.float32
    np.testing.assert_allclose(erf, [0.0, math.erf(0.5), math.erf(-1.0)], rtol=1e-6)
    np.testing.assert_array_equal(INTRINSICS["isfinite"].reference(np.float32([1.0, np.inf, np.nan])),
                                  [True, False, False])
    np.testing.assert_allclose(INTRINSICS["pow"].reference(np.float64([2.0]), np.float64([10.0])), [1024.0])
