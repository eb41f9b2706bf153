"""Shape / dtype inference of every NetBuilder op and its error messages."""

from __future__ import annotations

import numpy as np
import pytest

import cinn_py as cp
from cinn_py.frontend.net_builder import NetBuilder
from cinn_py.frontend.ops import REGISTRY, FrontendError, OpPatternKind
from cinn_py.frontend.ops.shapes import fmt_shape
from cinn_py.lowering.group import KERNELS


def shape_of(v) -> str:  # type: ignore[no-untyped-def]
    return fmt_shape(v.shape)


@pytest.fixture
def nb() -> NetBuilder:
    return NetBuilder("t")


# -- inputs -------------------------------------------------------------------------------------------------
def test_create_input_symbolic_and_static(nb: NetBuilder) -> None:
    x = nb.create_input("float32", ["S0", 768], "X")
    y = nb.create_input("float16", [cp.sym("S1"), 4], "Y")
    assert shape_of(x) == "[S0, 768]" and str(x.dtype) == "float32"
    assert shape_of(y) == "[S1, 4]" and str(y.dtype) == "float16"


@pytest.mark.parametrize("args, exc, msg", [
    (("float32", [-1], "X"), FrontendError, "must be non-negative"),
    (("float32", [1.5], "X"), TypeError, "must be an int"),
    (("float32<4>", [4], "X"), TypeError, "not supported by NetBuilder"),
    (("float32", ["i"], "X"), FrontendError, "loop axis names"),
    (("float32", [cp.sym("S0") * 2], "X"), FrontendError, "bare symbolic dim"),
    (("float32", [4], "1X"), ValueError, "not an identifier"),
])
def test_create_input_errors(nb: NetBuilder, args, exc, msg) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(exc, match=msg):
        nb.create_input(*args)


def test_duplicate_names_and_foreign_variables(nb: NetBuilder) -> None:
    x = nb.create_input("float32", [4], "X")
    with pytest.raises(FrontendError, match="'X' is already used"):
        nb.create_input("float32", [4], "X")
    other = NetBuilder("o").create_input("float32", [4], "Z")
    with pytest.raises(FrontendError, match="add: argument 'y' \\('Z'\\) belongs to another NetBuilder"):
        nb.add(x, other)


# -- elementwise and broadcasting --------------------------------------------------------------------------
BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "pow"]
COMPARE = ["equal", "not_equal", "less_than", "less_equal", "greater_than", "greater_equal"]
UNARY_FLOAT = ["exp", "log", "sqrt", "rsqrt", "tanh", "erf", "sigmoid"]


@pytest.mark.parametrize("op", BINARY + COMPARE)
def test_binary_broadcasting(nb: NetBuilder, op: str) -> None:
    x = nb.create_input("float32", ["S0", 1, 8], "X")
    y = nb.create_input("float32", [3, 1], "Y")
    z = getattr(nb, op)(x, y)
    assert shape_of(z) == "[S0, 3, 8]"
    assert str(z.dtype) == ("bool" if op in COMPARE else "float32")
    # both operands got an explicit broadcast_to; the op itself sees equal shapes
    types = [o.type for o in nb.build().ops]
    assert types == ["broadcast_to", "broadcast_to", op]


@pytest.mark.parametrize("op", BINARY + COMPARE)
def test_binary_dtype_mismatch(nb: NetBuilder, op: str) -> None:
    x = nb.create_input("float32", [4], "X")
    y = nb.create_input("float16", [4], "Y")
    with pytest.raises(FrontendError, match=f"{op}: operands have different dtypes float32 and float16"):
        getattr(nb, op)(x, y)


def test_broadcast_error_names_the_dims(nb: NetBuilder) -> None:
    x = nb.create_input("float32", ["S0", 768], "X")
    y = nb.create_input("float32", [4, 768], "Y")
    with pytest.raises(FrontendError) as err:
        nb.add(x, y)
    assert str(err.value) == "add: shapes [S0, 768] and [4, 768] are not broadcastable: S0 vs 4"


def test_symbolic_broadcast_rules(nb: NetBuilder) -> None:
    x = nb.create_input("float32", ["S0", "S1"], "X")
    y = nb.create_input("float32", ["S0", 1], "Y")
    z = nb.create_input("float32", ["S1", "S0"], "Z")
    assert shape_of(nb.multiply(x, y)) == "[S0, S1]"
    with pytest.raises(FrontendError, match="S0 vs S1"):
        nb.add(x, z)


def test_python_scalars_become_constants(nb: NetBuilder) -> None:
    x = nb.create_input("int32", [4], "X")
    y = nb.add(x, 3)
    assert str(y.dtype) == "int32"
    with pytest.raises(FrontendError, match="not representable in int32"):
        nb.add(x, 0.5)


@pytest.mark.parametrize("op", UNARY_FLOAT)
def test_float_unary_ops(nb: NetBuilder, op: str) -> None:
    x = nb.create_input("float32", ["S0", 3], "X")
    assert shape_of(getattr(nb, op)(x)) == "[S0, 3]"
    i = nb.create_input("int32", [3], "I")
    with pytest.raises(FrontendError, match=f"{op}: needs a floating-point operand, got int32"):
        getattr(nb, op)(i)


@pytest.mark.parametrize("op", ["negative", "abs", "relu"])
def test_numeric_unary_ops(nb: NetBuilder, op: str) -> None:
    i = nb.create_input("int32", [3], "I")
    assert str(getattr(nb, op)(i).dtype) == "int32"
    b = nb.create_input("bool", [3], "B")
    with pytest.raises(FrontendError, match=f"{op}: needs a numeric operand, got bool"):
        getattr(nb, op)(b)


def test_cast_select_scale_fill(nb: NetBuilder) -> None:
    x = nb.create_input("float32", ["S0", 4], "X")
    assert str(nb.cast(x, "int64").dtype) == "int64"
    c = nb.greater_than(x, 0.0)
    s = nb.select(c, x, 0.0)
    assert shape_of(s) == "[S0, 4]" and str(s.dtype) == "float32"
    with pytest.raises(FrontendError,
                       match=r"select: needs a bool operand, got float32 for argument 'condition' \(expected "
                             r"one of bool\)"):
        nb.select(x, x, x)
    assert shape_of(nb.scale(x, 2.0, 1.0)) == "[S0, 4]"
    f = nb.fill_constant(["S0", 2], 1, dtype="int8")
    assert shape_of(f) == "[S0, 2]" and str(f.dtype) == "int8"
    with pytest.raises(FrontendError, match="value 300 is out of range for int8"):
        nb.fill_constant([2], 300, dtype="int8")
    with pytest.raises(FrontendError, match="cast: argument 'dtype': unknown dtype 'float7'"):
        nb.cast(x, "float7")


def test_logical_ops(nb: NetBuilder) -> None:
    b = nb.create_input("bool", [3], "B")
    assert str(nb.logical_and(b, nb.logical_not(b)).dtype) == "bool"
    x = nb.create_input("float32", [3], "X")
    assert str(nb.logical_or(x, x).dtype) == "bool"      # CINN: nonzero operands are true
    with pytest.raises(FrontendError, match="logical_or: operands have different dtypes float32 and bool"):
        nb.logical_or(x, b)


# -- data movement -------------------------------------------------------------------------------------------
def test_broadcast_to(nb: NetBuilder) -> None:
    x = nb.create_input("float32", ["S0"], "X")
    assert shape_of(nb.broadcast_to(x, ["S0", 8], broadcast_axes=[0])) == "[S0, 8]"
    with pytest.raises(FrontendError, match=r"input dim 0 \(S0\) maps to output axis 1 \(8\)"):
        nb.broadcast_to(x, ["S0", 8])
    with pytest.raises(FrontendError, match="strictly increasing"):
        nb.broadcast_to(nb.create_input("float32", [1, 1], "Y"), [2, 2], broadcast_axes=[1, 0])


def test_reshape_static_and_symbolic(nb: NetBuilder) -> None:
    x = nb.create_input("float32", ["S0", 768], "X")
    assert shape_of(nb.reshape(x, [-1, 12, 64])) == "[S0, 12, 64]"
    assert shape_of(nb.reshape(x, [0, 12, -1])) == "[S0, 12, 64]"
    y = nb.create_input("float32", [6, 4], "Y")
    assert shape_of(nb.reshape(y, [3, -1])) == "[3, 8]"
    with pytest.raises(FrontendError, match=r"reshape: cannot reshape \[6, 4\] \(24 elements\) to \[5, 5\]"):
        nb.reshape(y, [5, 5])
    with pytest.raises(FrontendError, match="cannot infer -1"):
        nb.reshape(x, [-1, 7])
    with pytest.raises(FrontendError, match="more than one -1"):
        nb.reshape(x, [-1, -1])
    assert shape_of(nb.reshape(x, [cp.sym("S0") * 2, 384])) == "[2*S0, 384]"


def test_transpose_slice_concat(nb: NetBuilder) -> None:
    x = nb.create_input("float32", ["S0", 6, 4], "X")
    assert shape_of(nb.transpose(x, [2, 0, 1])) == "[4, S0, 6]"
    with pytest.raises(FrontendError, match="not a permutation"):
        nb.transpose(x, [0, 0, 1])
    assert shape_of(nb.slice(x, [1, 2], [1, 0], [5, 4], strides=[2, 1])) == "[S0, 2, 4]"
    assert shape_of(nb.slice(x, [0], [-1], [2**31 - 1])) == "[1, 6, 4]"
    with pytest.raises(FrontendError, match="symbolic extent S0; a non-negative start or end"):
        nb.slice(x, [0], [0], [3])
    y = nb.create_input("float32", ["S0", 2, 4], "Y")
    assert shape_of(nb.concat([x, y], axis=1)) == "[S0, 8, 4]"
    assert shape_of(nb.concat([x, x], axis=0)) == "[2*S0, 6, 4]"
    with pytest.raises(FrontendError, match=r"concat: operand 1 \[S0, 2, 4\] differs from operand 0 "
                                             r"\[S0, 6, 4\] at axis 1: 2 vs 6"):
        nb.concat([x, y], axis=2)


# -- reductions and matmul -----------------------------------------------------------------------------------
@pytest.mark.parametrize("op", ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"])
def test_reductions(nb: NetBuilder, op: str) -> None:
    x = nb.create_input("float32", ["S0", 6, 4], "X")
    red = getattr(nb, op)
    assert shape_of(red(x, [1])) == "[S0, 4]"
    assert shape_of(red(x, [-1], keep_dim=True)) == "[S0, 6, 1]"
    assert shape_of(red(x)) == "[]"
    with pytest.raises(FrontendError, match=f"{op}: axis 3 is out of range for a tensor of rank 3"):
        red(x, [3])
    with pytest.raises(FrontendError, match="name the same axis twice"):
        red(x, [1, -2])


def test_bool_reductions(nb: NetBuilder) -> None:
    b = nb.create_input("bool", [4, 3], "B")
    assert str(nb.reduce_all(b, [0]).dtype) == "bool"
    x = nb.create_input("float32", [4], "X")
    with pytest.raises(FrontendError, match="reduce_any: needs a bool operand, got float32"):
        nb.reduce_any(x)
    with pytest.raises(FrontendError, match="reduce_sum: cannot reduce a bool operand; use reduce_any"):
        nb.reduce_sum(b)


def test_matmul(nb: NetBuilder) -> None:
    x = nb.create_input("float32", ["S0", 64], "X")
    w = nb.create_input("float32", [64, 32], "W")
    assert shape_of(nb.matmul(x, w)) == "[S0, 32]"
    assert shape_of(nb.matmul(w, x, transpose_x=True, transpose_y=True)) == "[32, S0]"
    with pytest.raises(FrontendError, match=r"matmul: contracting dims differ: x \[S0, 64\] has 64, "
                                             r"y \[S0, 64\] has S0"):
        nb.matmul(x, x)


def test_composites(nb: NetBuilder) -> None:
    x = nb.create_input("float32", ["S0", 8], "X")
    w = nb.create_input("float32", [8], "W")
    for y in (nb.softmax(x), nb.rms_norm(x, w), nb.layer_norm(x, w, w), nb.gelu(x, approximate=True)):
        assert shape_of(y) == "[S0, 8]"
    bad = nb.create_input("float32", [4], "V")
    with pytest.raises(FrontendError, match=r"rms_norm: weight has shape \[4\] but the normalized dims"):
        nb.rms_norm(x, bad)


def test_build_outputs_and_symbol_check(nb: NetBuilder) -> None:
    x = nb.create_input("float32", ["S0"], "X")
    y = nb.exp(x)
    z = nb.relu(y)
    p = nb.build()
    assert [v.name for v in p.outputs] == [z.name]
    assert [v.name for v in nb.build([y, z]).outputs] == [y.name, z.name]
    nb.fill_constant(["S9"], 1.0)
    with pytest.raises(FrontendError, match="uses the symbolic dim 'S9', which no input declares"):
        nb.build()
    with pytest.raises(FrontendError, match="no output"):
        NetBuilder("empty").build()


def test_every_op_is_registered_with_a_pattern_kind() -> None:
    kinds = {name: op.pattern for name, op in REGISTRY.items()}
    assert kinds["add"] is OpPatternKind.kElementWise
    assert kinds["broadcast_to"] is OpPatternKind.kBroadcast
    assert kinds["transpose"] is OpPatternKind.kInjective
    assert kinds["reduce_sum"] is OpPatternKind.kReduction
    assert kinds["matmul"] is OpPatternKind.kNonFusible
    for name, op in REGISTRY.items():  # kernel-template ops (attention, conv2d_tiled) lower through KERNELS
        assert op.composite == (op.compute is None and name not in KERNELS), name


def test_program_input_validation(nb: NetBuilder) -> None:
    x = nb.create_input("float32", ["S0", 4], "X")
    y = nb.create_input("float32", ["S0"], "Y")
    nb.add(x, nb.broadcast_to(y, ["S0", 4], [0]))
    p = nb.build()
    with pytest.raises(TypeError, match="expects 2 input"):
        p.run_numpy(np.zeros((2, 4), np.float32))
    with pytest.raises(TypeError, match="input 'X' must have dtype float32, got float64"):
        p.run_numpy(np.zeros((2, 4)), np.zeros(2, np.float32))
    with pytest.raises(ValueError, match="input 'X' dim 1 must be 4, got 5"):
        p.run_numpy(np.zeros((2, 5), np.float32), np.zeros(2, np.float32))
    with pytest.raises(ValueError,
                       match="symbolic dim 'S0' is 3 in input 'Y' dim 0 but 2 in input 'X' dim 0"):
        p.run_numpy(np.zeros((2, 4), np.float32), np.zeros(3, np.float32))
