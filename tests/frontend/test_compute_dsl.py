"""The compute DSL: sym, placeholder, compute, indexing, reduce_axis and reductions, with every
error path (LoweringError for program errors, TypeError/ValueError for bad Python arguments)."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

import cinn_py as cp
from cinn_py.diagnostics import LoweringError
from cinn_py.ir import FloatImm, IntImm, Load, Reduce, ReduceType, UIntImm, Var, const
from cinn_py.ir import dtype as dt


# -- sym -------------------------------------------------------------------------------------------
def test_sym_is_a_bounded_int64_symbolic_var() -> None:
    s = cp.sym("S0", lower=2, upper=4096)
    assert s == Var("S0", dt.int64)
    assert s.is_symbolic_constant and not s.is_reduce_axis
    assert s.lower_bound == IntImm(dt.int64, 2) and s.upper_bound == IntImm(dt.int64, 4096)
    assert cp.sym("N").lower_bound == IntImm(dt.int64, 1) and cp.sym("N").upper_bound is None


@pytest.mark.parametrize(("kwargs", "exc", "msg"), [
    ({"name": "1S"}, ValueError, "not an identifier"),
    ({"name": "S", "lower": -1}, ValueError, "lower bound must be >= 0"),
    ({"name": "S", "lower": 4, "upper": 4}, ValueError, "must exceed lower bound"),
    ({"name": "S", "lower": 1.5}, TypeError, "lower must be an int"),
    ({"name": 7}, TypeError, "name must be a str"),
    ({"name": "a b"}, ValueError, "not an identifier"),
])
def test_sym_rejects_bad_arguments(kwargs: dict, exc: type, msg: str) -> None:
    with pytest.raises(exc, match=msg):
        cp.sym(**kwargs)


# -- placeholder -----------------------------------------------------------------------------------
def test_static_placeholder_has_int32_shape_and_default_buffer() -> None:
    X = cp.placeholder((4, 8), "float16", "X")
    assert X.name == "X" and X.dtype == dt.float16 and X.ndim == 2
    assert X.shape == (IntImm(dt.int32, 4), IntImm(dt.int32, 8))
    assert X.tensor.buffer.name == "_X" and X.is_placeholder and not X.is_reduction
    assert repr(X) == "<placeholder X[4, 8] float16>"


def test_symbolic_placeholder_has_int64_shape() -> None:
    S = cp.sym("S")
    X = cp.placeholder([S, S * 2, 3], "float32", "X")
    assert X.shape == (S, S * 2, IntImm(dt.int64, 3))
    assert all(d.dtype == dt.int64 for d in X.shape)


@pytest.mark.parametrize(("shape", "exc", "msg"), [
    (4, TypeError, "shape must be a tuple or list"),
    ((4, -1), LoweringError, r"shape\[1\] must be non-negative"),
    ((4, 2.0), TypeError, r"shape\[1\] must be an int"),
    ((True,), TypeError, r"shape\[0\] must be an int"),
    ((Var("i"),), LoweringError, r"may only use symbolic dims \(cp.sym\), but uses i"),
    ((const(2.0),), LoweringError, "must be an int32/int64 expression"),
])
def test_placeholder_rejects_bad_shapes(shape: object, exc: type, msg: str) -> None:
    with pytest.raises(exc, match=msg):
        cp.placeholder(shape, "float32", "X")  # type: ignore[arg-type]


def test_placeholder_rejects_bad_dtype_and_names() -> None:
    with pytest.raises(TypeError, match="unknown dtype 'float8'"):
        cp.placeholder((4,), "float8", "X")
    with pytest.raises(TypeError, match="scalar bool/int/uint/float dtype"):
        cp.placeholder((4,), "float32<4>", "X")
    with pytest.raises(ValueError, match="reserves for reduction init tensors"):
        cp.placeholder((4,), "float32", "X__reduce_init")
    with pytest.raises(ValueError, match="not an identifier"):
        cp.placeholder((4,), "float32", "X-1")


# -- indexing --------------------------------------------------------------------------------------
def test_indexing_builds_loads_with_index_dtype_of_the_tensor() -> None:
    X = cp.placeholder((4, 8), "float32", "X")
    i = Var("i")
    load = X[i, 3]
    assert isinstance(load, Load) and load.tensor is X.tensor
    assert load.indices == (i, IntImm(dt.int32, 3))
    S = cp.sym("S")
    Y = cp.placeholder((S,), "float32", "Y")
    assert Y[0].indices == (IntImm(dt.int64, 0),)
    Z = cp.placeholder((), "float32", "Z")
    assert Z[()].indices == ()


def test_indexing_checks_rank_dtypes_and_constant_bounds() -> None:
    X = cp.placeholder((4, 8), "float32", "X")
    with pytest.raises(LoweringError, match="tensor 'X' has rank 2 but was indexed with 1 index"):
        X[0]
    with pytest.raises(LoweringError, match="index 1 must be an integer expression, got dtype float32"):
        X[0, const(1.0)]
    with pytest.raises(TypeError, match="index 0 must be an int or an integer expression, got float"):
        X[0.5, 1]
    with pytest.raises(TypeError, match="slicing is not supported"):
        X[0, 1:3]
    with pytest.raises(LoweringError, match=r"constant index 8 is out of bounds \[0, 8\) in dimension 1"):
        X[0, 8]
    with pytest.raises(LoweringError, match="constant index -1 is out of bounds"):
        X[-1, 0]


# -- compute ---------------------------------------------------------------------------------------
def test_compute_calls_fcompute_with_default_axis_names() -> None:
    X = cp.placeholder((2, 3, 4), "float32", "X")
    seen: list[Var] = []

    def body(*axis: Var) -> object:
        seen.extend(axis)
        return X[axis[0], axis[1], axis[2]] * 2

    Y = cp.compute((2, 3, 4), body, "Y")
    assert [v.name for v in seen] == ["i", "j", "k"] and all(v.dtype == dt.int32 for v in seen)
    assert Y.axis == tuple(seen) and Y.producers == (X,) and Y.dtype == dt.float32
    assert Y.body.b == FloatImm(dt.float32, 2.0)  # Python int promoted to the tensor dtype


def test_compute_axis_vars_are_int64_for_symbolic_shapes() -> None:
    S = cp.sym("S")
    X = cp.placeholder((S,), "float32", "X")
    Y = cp.compute((S,), lambda i: X[i], "Y")
    assert Y.axis[0].dtype == dt.int64


def test_compute_accepts_python_numbers_and_infers_dtype() -> None:
    assert cp.compute((2,), lambda i: 1.5, "F").dtype == dt.float32
    assert cp.compute((2,), lambda i: 3, "I").dtype == dt.int32
    assert cp.compute((2,), lambda i: const(True), "B").dtype == dt.bool_


def test_compute_rejects_a_python_bool_from_structural_equality() -> None:
    X = cp.placeholder((2,), "float32", "X")
    with pytest.raises(TypeError, match=r"returned a Python bool; for an elementwise comparison use ir.eq"):
        cp.compute((2,), lambda i: X[i] == 0, "Y")
    from cinn_py.ir import eq

    assert cp.compute((2,), lambda i: eq(X[i], 0.0), "Y").dtype == dt.bool_


def test_compute_records_producers_in_first_read_order() -> None:
    A = cp.placeholder((4,), "float32", "A")
    B = cp.placeholder((4,), "float32", "B")
    C = cp.compute((4,), lambda i: B[i] * A[i] + B[i], "C")
    assert C.producers == (B, A)


@pytest.mark.parametrize(("fcompute", "exc", "msg"), [
    (lambda i: 1.0, TypeError, r"fcompute must take 2 index argument\(s\)"),
    (lambda i, j: "x", TypeError, "must return an IR expression or a number, got str"),
    (lambda i, j: None, TypeError, "got NoneType"),
    (42, TypeError, "fcompute must be callable"),
])
def test_compute_rejects_bad_fcompute(fcompute: object, exc: type, msg: str) -> None:
    with pytest.raises(exc, match=msg):
        cp.compute((2, 3), fcompute, "Y")  # type: ignore[arg-type]


def test_compute_rejects_returning_a_tensor() -> None:
    X = cp.placeholder((2,), "float32", "X")
    with pytest.raises(TypeError, match="returned the tensor 'X' itself; index it"):
        cp.compute((2,), lambda i: X, "Y")


def test_compute_accepts_varargs_fcompute() -> None:
    X = cp.placeholder((2, 3), "float32", "X")
    Y = cp.compute((2, 3), lambda *ax: X[ax], "Y")
    assert Y.producers == (X,)


def test_mixing_float_and_int_needs_an_explicit_cast() -> None:
    F = cp.placeholder((4,), "float32", "F")
    N = cp.placeholder((4,), "int32", "N")
    with pytest.raises(LoweringError, match=r"compute 'Y': Add mixes dtypes float32 and int32; insert an "
                                            r"explicit cast") as info:
        cp.compute((4,), lambda i: F[i] + N[i], "Y")
    assert info.value.detail == "  in: (F[i] + N[i])"
    Y = cp.compute((4,), lambda i: F[i] + cp.cast(N[i], "float32"), "Y")
    assert Y.dtype == dt.float32


def test_mixing_float_widths_and_python_float_on_int_tensors_is_rejected() -> None:
    H = cp.placeholder((4,), "float16", "H")
    F = cp.placeholder((4,), "float32", "F")
    N = cp.placeholder((4,), "int32", "N")
    with pytest.raises(LoweringError, match="Mul mixes dtypes float16 and float32"):
        cp.compute((4,), lambda i: H[i] * F[i], "Y")
    with pytest.raises(LoweringError, match="Mul mixes dtypes int32 and float32"):
        cp.compute((4,), lambda i: N[i] * 2.5, "Y")
    with pytest.raises(LoweringError, match="LT mixes dtypes int32 and float32"):
        cp.compute((4,), lambda i: N[i] < F[i], "Y")


def test_int32_int64_index_arithmetic_is_allowed_but_not_int_data_mixing() -> None:
    S = cp.sym("S")
    X = cp.placeholder((S,), "float32", "X")
    Y = cp.compute((4,), lambda i: X[S - 1 - i], "Y")  # int64 sym with an int32 axis var
    assert Y.producers == (X,)
    A = cp.placeholder((4,), "int64", "A")
    B = cp.placeholder((4,), "int32", "B")
    with pytest.raises(LoweringError, match="Add mixes dtypes int64 and int32"):
        cp.compute((4,), lambda i: A[i] + B[i], "Y")


def test_logical_not_and_select_conditions_must_be_bool() -> None:
    N = cp.placeholder((4,), "int32", "N")
    with pytest.raises(LoweringError, match=r"logical not \(~\) needs a bool operand, got int32"):
        cp.compute((4,), lambda i: ~N[i], "Y")


def test_reading_a_hand_built_tensor_is_rejected() -> None:
    from cinn_py.ir import make_tensor

    raw = make_tensor("R", (const(4),), dt.float32)
    with pytest.raises(LoweringError, match="reads tensor 'R', which was not created by placeholder"):
        cp.compute((4,), lambda i: Load(raw, (i,)), "Y")


# -- reductions ------------------------------------------------------------------------------------
def test_reduce_axis_defaults_and_bounds() -> None:
    k = cp.reduce_axis(16)
    k2 = cp.reduce_axis(8)
    assert (k.name, k2.name) == ("reduce_k", "reduce_k_0")
    assert k.is_reduce_axis and k.dtype == dt.int32
    assert k.lower_bound == IntImm(dt.int32, 0) and k.upper_bound == IntImm(dt.int32, 16)
    S = cp.sym("S")
    r = cp.reduce_axis(S, "r")
    assert r.dtype == dt.int64 and r.upper_bound == S
    r2 = cp.reduce_axis((2, 10), "r2")
    assert r2.lower_bound == IntImm(dt.int32, 2) and r2.upper_bound == IntImm(dt.int32, 10)
    with pytest.raises(LoweringError, match=r"empty range \[5, 2\)"):
        cp.reduce_axis((5, 2), "bad")
    with pytest.raises(LoweringError, match="must be non-negative"):
        cp.reduce_axis(-3, "bad")


@pytest.mark.parametrize(("fn", "kind", "dtype", "init"), [
    (cp.reduce_sum, ReduceType.SUM, "float32", FloatImm(dt.float32, 0.0)),
    (cp.reduce_sum, ReduceType.SUM, "int8", IntImm(dt.int8, 0)),
    (cp.reduce_prod, ReduceType.MUL, "float64", FloatImm(dt.float64, 1.0)),
    (cp.reduce_prod, ReduceType.MUL, "uint8", UIntImm(dt.uint8, 1)),
    (cp.reduce_max, ReduceType.MAX, "float16", FloatImm(dt.float16, -math.inf)),
    (cp.reduce_max, ReduceType.MAX, "int32", IntImm(dt.int32, -(2**31))),
    (cp.reduce_max, ReduceType.MAX, "uint16", UIntImm(dt.uint16, 0)),
    (cp.reduce_min, ReduceType.MIN, "bfloat16", FloatImm(dt.bfloat16, math.inf)),
    (cp.reduce_min, ReduceType.MIN, "int64", IntImm(dt.int64, 2**63 - 1)),
    (cp.reduce_min, ReduceType.MIN, "uint32", UIntImm(dt.uint32, 2**32 - 1)),
    (cp.reduce_all, ReduceType.ALL, "bool", UIntImm(dt.bool_, 1)),
    (cp.reduce_any, ReduceType.ANY, "bool", UIntImm(dt.bool_, 0)),
])
def test_reductions_use_the_identity_of_their_dtype(fn: Callable[..., Reduce], kind: ReduceType, dtype: str,
                                                    init: object) -> None:
    X = cp.placeholder((4, 8), dtype, "X")
    k = cp.reduce_axis(8, "k")
    Y = cp.compute((4,), lambda i: fn(X[i, k], [k]), "Y")
    assert isinstance(Y.body, Reduce) and Y.is_reduction
    assert Y.body.reduce_type is kind and Y.body.init == init and Y.body.reduce_axis == (k,)
    assert Y.dtype == dt.dtype_of(dtype)


def test_reduction_dtype_rules() -> None:
    B = cp.placeholder((4,), "bool", "B")
    F = cp.placeholder((4,), "float32", "F")
    k = cp.reduce_axis(4, "k")
    with pytest.raises(LoweringError, match="reduce_sum: cannot reduce a bool expression; use reduce_any"):
        cp.reduce_sum(B[k], k)
    with pytest.raises(LoweringError, match="reduce_prod: cannot reduce a bool expression; use reduce_all"):
        cp.reduce_prod(B[k], k)
    with pytest.raises(LoweringError, match="reduce_all: needs a bool expression, got float32"):
        cp.reduce_all(F[k], k)
    assert cp.reduce_any(F[k] > 0, k).reduce_type is ReduceType.ANY


def test_reduction_axes_rules() -> None:
    X = cp.placeholder((4, 4), "float32", "X")
    k = cp.reduce_axis(4, "k")
    with pytest.raises(LoweringError, match="reduce axis 'k' is listed twice"):
        cp.reduce_sum(X[k, k], [k, k])
    with pytest.raises(TypeError, match="every axis must come from reduce_axis"):
        cp.reduce_sum(X[0, 0], [Var("i")])
    with pytest.raises(LoweringError, match="reduce axis 'r' has no extent"):
        cp.reduce_sum(X[0, 0], [Var("r", is_reduce_axis=True)])
    with pytest.raises(TypeError, match="non-empty list"):
        cp.reduce_sum(X[0, 0], [])
    with pytest.raises(TypeError, match="reduce an element expression such as X"):
        cp.reduce_sum(X, [k])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="expected an IR expression to reduce"):
        cp.reduce_sum(1.0, [k])  # type: ignore[arg-type]


def test_nested_and_non_top_level_reductions_are_rejected() -> None:
    X = cp.placeholder((4, 4), "float32", "X")
    k, r = cp.reduce_axis(4, "k"), cp.reduce_axis(4, "r")
    with pytest.raises(LoweringError, match="reductions cannot be nested"):
        cp.reduce_sum(cp.reduce_sum(X[k, r], [r]), [k])
    with pytest.raises(LoweringError, match="a reduction must be the whole body of its compute"):
        cp.compute((4,), lambda i: cp.reduce_sum(X[i, k], [k]) * 2, "Y")


def test_reduce_axis_used_outside_its_reduction() -> None:
    X = cp.placeholder((4, 4), "float32", "X")
    k, r = cp.reduce_axis(4, "k"), cp.reduce_axis(4, "r")
    with pytest.raises(LoweringError, match="reduce axis 'k' is used outside a reduction over it"):
        cp.compute((4,), lambda i: X[i, k], "Y")
    with pytest.raises(LoweringError, match="reduce axis 'k' is used outside a reduction over it"):
        cp.compute((4,), lambda i: cp.reduce_sum(X[r, k], [r]), "Y")


def test_reduce_axis_named_like_a_loop_axis_of_its_tensor() -> None:
    X = cp.placeholder((4, 4), "float32", "X")
    j = cp.reduce_axis(4, "j")
    with pytest.raises(LoweringError, match="reduce axis 'j' has the same name as one of the tensor's loop"):
        cp.compute((4, 4), lambda i, jj: cp.reduce_sum(X[i, j], [j]), "Y")
    # the same name is fine for a tensor whose loops are only `i`
    assert cp.compute((4,), lambda i: cp.reduce_sum(X[i, j], [j]), "Y").is_reduction
