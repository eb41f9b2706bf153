"""islpy analyses on small loop nests built with the compute DSL and by hand."""

from __future__ import annotations

import dataclasses

import islpy as isl
import pytest

from cinn_py import analysis as A
from cinn_py import ir
from cinn_py.frontend.compute import compute, placeholder, reduce_axis, reduce_sum, sym
from cinn_py.lowering import lower


def _loops(func: ir.LoweredFunc) -> list[ir.For]:
    return [n for n in ir.walk(func.body) if isinstance(n, ir.For)]


@pytest.fixture
def reduce_func() -> tuple[ir.LoweredFunc, object, object]:
    a = placeholder([32, 64], "float32", "A")
    k = reduce_axis(64, "k")
    b = compute([32], lambda i: reduce_sum(a[i, k], [k]), "B")
    c = compute([32, 64], lambda i, j: a[i, j] * 2.0 + b[i], "C")
    return lower("fn", [a, b, c]), a, b


def test_domain_and_accesses(reduce_func) -> None:
    func, _, _ = reduce_func
    dom = A.iteration_domain(func, "B")
    assert dom == isl.Set("{ S_B[i, k] : 0 <= i < 32 and 0 <= k < 64 }")
    acc = A.access_relations(func, "B")
    assert acc.exact
    assert acc.write_map() == isl.UnionMap("{ S_B[i, k] -> B__B[i] : 0 <= i < 32 and 0 <= k < 64 }")
    assert len(acc.reads) == 2  # B[i0] (the accumulator) and A[i0, i1]


def test_dependences_follow_execution_order(reduce_func) -> None:
    func, _, _ = reduce_func
    raw = A.dependences(func, "B", "C").raw
    assert raw == isl.UnionMap("{ S_B[i, k] -> S_C[i, j] : 0 <= i < 32 and 0 <= k < 64 and 0 <= j < 64 }")
    assert A.dependences(func, "C", "B").is_empty()  # C runs after B: nothing flows back
    init = A.dependences(func, "B__reduce_init", "B")  # shares buffer _B
    assert not init.waw.is_empty() and not init.raw.is_empty()


def test_loop_carries_dependence(reduce_func) -> None:
    func, _, _ = reduce_func
    i1, k, i2, j = _loops(func)
    assert not A.loop_carries_dependence(func, i1)
    assert A.loop_carries_dependence(func, k)  # the reduction accumulates into B[i]
    assert not A.loop_carries_dependence(func, i2)
    assert not A.loop_carries_dependence(func, j)


def test_loop_carried_shift() -> None:
    # T[i + 1] = T[i] * 2: carried; U[i] = U[i] * 2: not.
    t = ir.make_tensor("T", (ir.const(33),), ir.dtype.float32)
    i = ir.Var("i")
    iv = ir.Var("i0")
    body = ir.Store(t, ir.Load(t, (iv,)) * ir.const(2.0), (iv + 1,))
    realize = ir.ScheduleBlockRealize((i,), ir.ScheduleBlock("T", (iv,), body))
    loop = ir.For(i, ir.const(0), ir.const(32), ir.Block((realize,)))
    root = ir.ScheduleBlockRealize((), ir.ScheduleBlock("root", (), ir.Block((loop,))))
    func = ir.LoweredFunc("f", (ir.Argument(ir.ArgIO.OUTPUT, tensor=t),), ir.Block((root,)))
    assert A.loop_carries_dependence(func, loop)
    same = dataclasses.replace(body, indices=(iv,))
    func2 = ir.LoweredFunc("f", func.args, ir.Block((ir.replace_stmt(root, body, same),)))
    assert not A.loop_carries_dependence(func2, _loops(func2)[0])


def test_symbolic_and_quasi_affine() -> None:
    s0 = sym("S0")
    x = placeholder([s0, 8], "float32", "X")
    y = compute([s0 * 8], lambda i: x[i / 8, i % 8] + 1.0, "Y")
    func = lower("dyn", [x, y])
    dom = A.iteration_domain(func, "Y")
    assert dom == isl.Set("[S0] -> { S_Y[i] : S0 >= 1 and 0 <= i < 8 * S0 }")
    acc = A.access_relations(func, "Y")
    assert acc.exact
    read = acc.reads[0].relation
    assert read == isl.Map("[S0] -> { S_Y[i] -> B__X[floor(i/8), i mod 8] : S0 >= 1 and 0 <= i < 8 * S0 }")
    assert not A.loop_carries_dependence(func, _loops(func)[0])


def test_non_affine_index_is_over_approximated() -> None:
    t = ir.make_tensor("T", (ir.const(64),), ir.dtype.float32)
    i, iv = ir.Var("i"), ir.Var("i0")
    body = ir.Store(t, ir.Load(t, (iv * iv,)) + ir.const(1.0), (iv,))  # reads T[i*i]
    realize = ir.ScheduleBlockRealize((i,), ir.ScheduleBlock("T", (iv,), body))
    loop = ir.For(i, ir.const(0), ir.const(8), ir.Block((realize,)))
    root = ir.ScheduleBlockRealize((), ir.ScheduleBlock("root", (), ir.Block((loop,))))
    func = ir.LoweredFunc("f", (ir.Argument(ir.ArgIO.OUTPUT, tensor=t),), ir.Block((root,)))
    acc = A.access_relations(func, "T")
    assert not acc.exact
    assert acc.reads[0].relation == isl.Map("{ S_T[i] -> B__T[o] : 0 <= i < 8 and 0 <= o < 64 }")
    assert A.loop_carries_dependence(func, loop)  # conservative: T[i*i] may be T[j] of another i


def test_required_region(reduce_func) -> None:
    func, a, b = reduce_func
    i1, k, i2, j = _loops(func)
    region = A.required_region(func, ["C"], b.tensor, i2)
    assert [(str(lo), str(ext)) for lo, ext in region] == [("i", "1")]
    region = A.required_region(func, ["C"], a.tensor, i2)
    assert [(str(lo), str(ext)) for lo, ext in region] == [("i", "1"), ("0", "64")]
    region = A.required_region(func, ["C"], "A", j)
    assert [(str(lo), str(ext)) for lo, ext in region] == [("i", "1"), ("j", "1")]
    assert A.required_region(func, ["B"], "C", k) is None
    with pytest.raises(A.AnalysisError, match="not under loop 'j'"):
        A.required_region(func, ["B"], a.tensor, j)


def test_required_region_of_split_consumer() -> None:
    # Consumer reads A[i_o * 4 + i_i] for i_i in [0, 4): region under i_o is (i_o * 4, 4).
    a = ir.make_tensor("A", (ir.const(64),), ir.dtype.float32)
    out = ir.make_tensor("O", (ir.const(64),), ir.dtype.float32)
    io, ii, iv = ir.Var("i_o"), ir.Var("i_i"), ir.Var("i0")
    body = ir.Store(out, ir.Load(a, (iv,)), (iv,))
    realize = ir.ScheduleBlockRealize((io * 4 + ii,), ir.ScheduleBlock("O", (iv,), body))
    inner = ir.For(ii, ir.const(0), ir.const(4), ir.Block((realize,)))
    outer = ir.For(io, ir.const(0), ir.const(16), ir.Block((inner,)))
    root = ir.ScheduleBlockRealize((), ir.ScheduleBlock("root", (), ir.Block((outer,))))
    func = ir.LoweredFunc("f",
                          (ir.Argument(ir.ArgIO.INPUT, tensor=a), ir.Argument(ir.ArgIO.OUTPUT, tensor=out)),
                          ir.Block((root,)))
    region = A.required_region(func, ["O"], a, outer)
    assert [(str(lo), str(ext)) for lo, ext in region] == [("(i_o * 4)", "4")]


def test_is_always_true() -> None:
    i = ir.Var("i")
    s0 = ir.Var("S0", ir.dtype.int64, is_symbolic_constant=True)
    n = ir.Var("n", ir.dtype.int64)
    assert A.is_always_true(i < 32, {i: (0, 32)})
    assert not A.is_always_true(i < 31, {i: (0, 32)})
    assert A.is_always_true(ir.And(i >= 0, (i * 8 + 7) / 8 < 32), {i: (0, 32)})
    assert A.is_always_true(n < s0, {n: (ir.const(0, ir.dtype.int64), s0)})
    assert not A.is_always_true(n < s0 - 1, {n: (ir.const(0, ir.dtype.int64), s0)})
    assert (not A.is_always_true(ir.Load(ir.make_tensor("M", (ir.const(4),), ir.dtype.int32), (i,)) < 3,
                                 {i: (0, 4)}))


def test_unknown_block() -> None:
    a = placeholder([4], "float32", "A")
    b = compute([4], lambda i: a[i] + 1.0, "B")
    func = lower("fn", [a, b])
    with pytest.raises(A.AnalysisError, match="block 'nope' is not in function 'fn'"):
        A.iteration_domain(func, "nope")
