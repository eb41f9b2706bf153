"""Lowering: argument order, temp buffers, topological order, names, index dtypes, iter-var flags."""

from __future__ import annotations

import cinn_py as cp
from cinn_py.ir import (
    ArgIO, Block, For, Load, ScheduleBlockRealize, Store, Var, structural_equal, walk,
)
from cinn_py.ir import dtype as dt


def _blocks(func: object) -> list[ScheduleBlockRealize]:
    return [n for n in walk(func.body) if isinstance(n, ScheduleBlockRealize) and n.name != "root"]


def test_function_shape_is_block_of_root() -> None:
    A = cp.placeholder((4,), "float32", "A")
    B = cp.compute((4,), lambda i: A[i] + 1, "B")
    func = cp.lower("fn", [A, B])
    assert isinstance(func.body, Block) and len(func.body.stmts) == 1
    root = func.body.stmts[0]
    assert isinstance(root, ScheduleBlockRealize) and root.name == "root" and root.iter_values == ()
    assert isinstance(root.schedule_block.body, For)  # a single nest is not wrapped in a Block
    assert isinstance(root.schedule_block.body.body, Block)


def test_arguments_inputs_then_outputs_then_symbols_in_first_appearance_order() -> None:
    S0, S1 = cp.sym("S0"), cp.sym("S1")
    Y = cp.placeholder((S1,), "float32", "Y")
    X = cp.placeholder((S0, S1), "float32", "X")
    Z = cp.compute((S0, S1), lambda i, j: X[i, j] + Y[j], "Z")
    W = cp.compute((S1,), lambda j: Y[j] * 2, "W")
    # interleaved listing: inputs keep their relative order, outputs theirs
    func = cp.lower("fn", [W, Y, Z, X])
    assert [a.name for a in func.args] == ["_Y", "_X", "_W", "_Z", "S1", "S0"]
    assert [a.io for a in func.args] == [ArgIO.INPUT] * 2 + [ArgIO.OUTPUT] * 2 + [ArgIO.SCALAR] * 2
    assert func.scalar_args == (S1, S0)
    assert [t.name for t in func.inputs] == ["Y", "X"] and [t.name for t in func.outputs] == ["W", "Z"]


def test_symbol_only_in_an_intermediate_shape_is_still_an_argument() -> None:
    N = cp.sym("N")
    A = cp.placeholder((4,), "float32", "A")
    T = cp.compute((N, 4), lambda i, j: A[j], "T")
    k = cp.reduce_axis(N, "r")
    B = cp.compute((4,), lambda j: cp.reduce_sum(T[k, j], [k]), "B")
    func = cp.lower("fn", [A, B])
    assert [a.name for a in func.args] == ["_A", "_B", "N"]
    loop_r = [n for n in walk(func.body) if isinstance(n, For) and n.loop_var.name == "r"]
    assert loop_r and loop_r[0].extent == N and loop_r[0].min.dtype == dt.int64


def test_temp_buffers_are_unlisted_intermediates_in_topological_order() -> None:
    A = cp.placeholder((4,), "float32", "A")
    B = cp.compute((4,), lambda i: A[i] * 2, "B")
    C = cp.compute((4,), lambda i: B[i] + A[i], "C")
    D = cp.compute((4,), lambda i: C[i] + B[i], "D")
    func = cp.lower("fn", [A, D])
    assert [b.name for b in func.temp_bufs] == ["_B", "_C"]
    assert [b.name for b in _blocks(func)] == ["B", "C", "D"]
    func2 = cp.lower("fn", [A, D, B])
    assert [b.name for b in func2.temp_bufs] == ["_C"]
    assert [a.name for a in func2.args] == ["_A", "_D", "_B"]


def test_shared_producer_is_lowered_once() -> None:
    A = cp.placeholder((4,), "float32", "A")
    B = cp.compute((4,), lambda i: A[i] * 2, "B")
    C = cp.compute((4,), lambda i: B[i] + 1, "C")
    D = cp.compute((4,), lambda i: B[i] - 1, "D")
    func = cp.lower("fn", [A, C, D])
    assert [b.name for b in _blocks(func)] == ["B", "C", "D"]


def test_iter_var_names_follow_cinn_unique_names() -> None:
    A = cp.placeholder((4, 8), "float32", "A")
    k = cp.reduce_axis(8, "k")
    B = cp.compute((4,), lambda i: cp.reduce_sum(A[i, k], [k]), "B")
    C = cp.compute((4, 8), lambda i, j: A[i, j] - B[i], "C")
    func = cp.lower("fn", [A, C])
    names = {b.name: [v.name for v in b.schedule_block.iter_vars] for b in _blocks(func)}
    assert names == {"B__reduce_init": ["i0"], "B": ["i0_0", "i1"], "C": ["i0_1", "i1_0"]}
    update = next(b for b in _blocks(func) if b.name == "B")
    assert [v.is_reduce_axis for v in update.schedule_block.iter_vars] == [False, True]
    assert update.iter_values == (Var("i"), Var("k"))


def test_generated_names_avoid_user_names() -> None:
    i0 = cp.sym("i0")
    A = cp.placeholder((i0,), "float32", "A")
    B = cp.compute((i0,), lambda i: A[i] + 1, "B")
    func = cp.lower("fn", [A, B])
    (block,) = _blocks(func)
    assert [v.name for v in block.schedule_block.iter_vars] == ["i0_0"]
    assert "B[i0_0] = (A[i0_0] + 1.00000000f)" in str(func)


def test_static_function_uses_int32_indices() -> None:
    A = cp.placeholder((4, 8), "int64", "A")
    B = cp.compute((4, 8), lambda i, j: A[i, j] + 1, "B")
    func = cp.lower("fn", [A, B])
    for node in walk(func.body):
        if isinstance(node, For):
            assert node.loop_var.dtype == node.min.dtype == node.extent.dtype == dt.int32
        if isinstance(node, (Load, Store)):
            assert all(ix.dtype == dt.int32 for ix in node.indices)
    assert "(A[i0, i1] + 1ll)" in str(func)  # data stays int64


def test_symbolic_function_widens_static_tensors_and_indices() -> None:
    S = cp.sym("S")
    A = cp.placeholder((4,), "int32", "A")
    X = cp.placeholder((S,), "int32", "X")
    B = cp.compute((4,), lambda i: A[i] + i, "B")  # static compute: int32 axis var i
    C = cp.compute((S,), lambda i: X[i] + B[i % 4], "C")
    func = cp.lower("fn", [A, X, C])
    text = str(func)
    assert "serial for (i, 0ll, 4ll)" in text
    # the int32 value A[i] + i keeps its dtype: the widened axis var is cast back where it is a value
    assert "B[i0] = (A[i0] + int32(i0))" in text
    assert "B[(i0_0 % 4ll)]" in text
    temp = func.temp_bufs[0]
    assert temp.name == "_B" and all(d.dtype == dt.int64 for d in temp.shape)
    assert func.inputs[0].shape[0].dtype == dt.int64  # the static input is widened too


def test_lowering_is_deterministic_and_reuses_no_statement() -> None:
    A = cp.placeholder((4,), "float32", "A")
    B = cp.compute((4,), lambda i: A[i] * 2, "B")
    C = cp.compute((4,), lambda i: B[i] * 2, "C")
    f1 = cp.lower("fn", [A, C])
    f2 = cp.lower("fn", [A, C])
    assert structural_equal(f1, f2, allow_name_suffix_diff=True)
    ids1 = {id(n) for n in walk(f1.body) if isinstance(n, (For, Store))}
    ids2 = {id(n) for n in walk(f2.body) if isinstance(n, (For, Store))}
    assert not ids1 & ids2


def test_reduce_axis_with_nonzero_lower_bound() -> None:
    A = cp.placeholder((4, 10), "float32", "A")
    r = cp.reduce_axis((2, 10), "r")
    B = cp.compute((4,), lambda i: cp.reduce_sum(A[i, r], r), "B")
    text = str(cp.lower("fn", [A, B]))
    assert "serial for (r, 2, 8)" in text


def test_constant_compute_without_inputs() -> None:
    B = cp.compute((3,), lambda i: cp.cast(i, "float32") * 0.5, "B")
    func = cp.lower("iota", [B])
    assert [a.name for a in func.args] == ["_B"]
    assert "B[i0] = (float32(i0) * 0.500000000f)" in str(func)


def test_shapes_can_be_taken_from_other_tensors() -> None:
    S = cp.sym("S")
    X = cp.placeholder((S, 3), "float32", "X")
    Y = cp.compute(X.shape, lambda i, j: X[i, j] + 1, "Y")
    Z = cp.compute(Y.shape[:1], lambda i: Y[i, 0] + Y[i, 2], "Z")
    func = cp.lower("fn", [X, Z])
    assert [a.name for a in func.args] == ["_X", "_Z", "S"]
    assert "Z[i0_0] = (Y[i0_0, 0ll] + Y[i0_0, 2ll])" in str(func)
