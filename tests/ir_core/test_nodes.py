"""IR core: node construction, value vs identity equality, traversal, names."""

from __future__ import annotations

import math

import numpy as np
import pytest

from cinn_py import ir
from cinn_py.ir import dtype as dt


def _simple_func() -> tuple[ir.LoweredFunc, ir.For, ir.For]:
    a = ir.make_tensor("A", (ir.const(32), ir.const(64)), dt.float32)
    b = ir.make_tensor("B", (ir.const(32), ir.const(64)), dt.float32)
    i, j, i0, i1 = ir.Var("i"), ir.Var("j"), ir.Var("i0"), ir.Var("i1")
    store = ir.Store(b, ir.Load(a, (i0, i1)) * 2.0, (i0, i1))
    realize = ir.ScheduleBlockRealize((i, j), ir.ScheduleBlock("B", (i0, i1), store))
    inner = ir.For(j, ir.const(0), ir.const(64), ir.Block((realize,)))
    outer = ir.For(i, ir.const(0), ir.const(32), ir.Block((inner,)))
    root = ir.ScheduleBlockRealize((), ir.ScheduleBlock("root", (), outer))
    args = (ir.Argument(ir.ArgIO.INPUT, a), ir.Argument(ir.ArgIO.OUTPUT, b))
    return ir.LoweredFunc("fn", args, ir.Block((root,))), outer, inner


def test_dtype_names_round_trip() -> None:
    for d in dt.ALL_SCALAR_DTYPES:
        assert ir.dtype_of(str(d)) == d
    assert str(dt.float32.with_lanes(4)) == "float32<4>"
    assert ir.dtype_of("float32<4>") == dt.float32.with_lanes(4)
    assert ir.dtype_of(np.float16) == dt.float16
    with pytest.raises(TypeError, match="unknown dtype 'float8'"):
        ir.dtype_of("float8")


def test_expressions_compare_by_value_and_hash() -> None:
    i = ir.Var("i")
    assert i * 4 + 1 == i * 4 + 1
    assert hash(i * 4 + 1) == hash(i * 4 + 1)
    assert ir.Add(i, i) != ir.Sub(i, i)
    assert {i + 1: "x"}[i + 1] == "x"


def test_var_equality_ignores_bounds_but_not_dtype() -> None:
    assert ir.Var("n", dt.int64, lower_bound=ir.const(1, "int64")) == ir.Var("n", dt.int64)
    assert ir.Var("n", dt.int64) != ir.Var("n", dt.int32)


def test_operator_sugar_promotes_python_numbers() -> None:
    x = ir.Var("x", dt.float16)
    assert (x * 2).b == ir.FloatImm(dt.float16, 2.0)
    n = ir.Var("n", dt.int64)
    assert (n + 1).b == ir.IntImm(dt.int64, 1)
    assert (n < 3).dtype == dt.bool_
    assert ir.eq(n, 3) == ir.EQ(n, ir.IntImm(dt.int64, 3))


def test_nan_immediates_are_structurally_equal() -> None:
    assert ir.const(math.nan, "float32") == ir.const(math.nan, "float32")
    assert ir.const(0.0, "float32") != ir.const(-0.0, "float32")


@pytest.mark.parametrize(("build", "message"), [
    (lambda: ir.IntImm(dt.float32, 1), "IntImm needs a signed integer dtype"),
    (lambda: ir.And(ir.Var("i"), ir.const(True)), "And needs bool operands"),
    (lambda: ir.Select(ir.const(True), ir.const(1), ir.const(1.0)), "Select branches must share a dtype"),
    (lambda: ir.For(ir.Var("i"), ir.const(0), ir.const(4), ir.Block(), ir.ForType.GPU_THREAD),
     "needs bind_offset"),
    (lambda: ir.For(ir.Var("i"), ir.const(0), ir.const(4), ir.Block(), ir.ForType.VECTORIZED),
     "needs a positive factor"),
])
def test_construction_checks(build, message: str) -> None:
    with pytest.raises((TypeError, ValueError), match=message):
        build()


def test_statements_compare_by_identity_and_structurally() -> None:
    f1, _, _ = _simple_func()
    f2, _, _ = _simple_func()
    assert f1 is not f2 and f1 != f2
    assert ir.structural_equal(f1, f2)


def test_mutator_keeps_identity_when_nothing_changes_and_uids_when_rebuilt() -> None:
    func, outer, inner = _simple_func()
    assert ir.substitute(func, {ir.Var("zz"): ir.const(0)}) is func
    renamed = ir.substitute(func, {ir.Var("i1"): ir.Var("q")})
    new_outer = renamed.body.stmts[0].schedule_block.body
    assert new_outer is not outer and new_outer.uid == outer.uid
    assert "B[i0, q] = (A[i0, q] * 2.00000000f)" in str(renamed)


def test_substitute_leaves_binders_alone() -> None:
    func, _, _ = _simple_func()
    out = ir.substitute(func, {ir.Var("i"): ir.const(3)})
    assert "serial for (i, 0, 32)" in str(out)
    assert "axis.bind(3, j)" in str(out)


def test_replace_stmt_by_identity() -> None:
    func, outer, inner = _simple_func()
    new_inner = ir.For(inner.loop_var, inner.min, inner.extent, inner.body, ir.ForType.UNROLLED)
    out = ir.replace_stmt(func, inner, new_inner)
    assert "unroll for (j, 0, 64)" in str(out)
    assert "serial for (j, 0, 64)" in str(func)


def test_walk_visits_every_node_pre_order() -> None:
    func, outer, inner = _simple_func()
    kinds = [type(n).__name__ for n in ir.walk(func.body)]
    assert kinds.index("For") < kinds.index("Store") < kinds.index("Mul")
    assert sum(k == "Load" for k in kinds) == 1


def test_structural_equal_with_name_suffixes() -> None:
    a = ir.Var("i0") + ir.Var("i1_2")
    b = ir.Var("i0_3") + ir.Var("i1")
    assert not ir.structural_equal(a, b)
    assert ir.structural_equal(a, b, allow_name_suffix_diff=True)


def test_assert_structural_equal_shows_a_diff() -> None:
    with pytest.raises(AssertionError, match=r"-\(i \+ 1\)\n\+\(i \+ 2\)"):
        ir.assert_structural_equal(ir.Var("i") + 1, ir.Var("i") + 2)


def test_name_generator_follows_cinn() -> None:
    assert [ir.unique_name("i0") for _ in range(3)] == ["i0", "i0_0", "i0_1"]
    ir.reset_name_ids()
    assert ir.unique_name("i0") == "i0"
    with ir.compile_context():
        assert ir.unique_name("i0") == "i0"
    assert ir.unique_name("i0") == "i0_0"
    assert [ir.default_axis_name(k) for k in (0, 1, 2, 3, 22)] == ["i", "j", "k", "a", "ii"]


def test_memory_type_scopes() -> None:
    assert ir.MemoryType.from_scope("shared") is ir.MemoryType.GPU_SHARED
    with pytest.raises(ValueError, match="unknown memory type 'texture'"):
        ir.MemoryType.from_scope("texture")


def test_immediates_convert_to_python_numbers() -> None:
    assert [int(d) for d in (ir.const(8), ir.const(3, "int64"), ir.const(5, "uint8"))] == [8, 3, 5]
    assert float(ir.const(2.5, "float32")) == 2.5
    assert list(range(ir.const(3)))[-1] == 2  # __index__
    with pytest.raises(TypeError):
        int(ir.Var("S0", dt.int64))
