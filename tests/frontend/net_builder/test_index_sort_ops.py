"""CINN semantics of the index and sort ops beyond the harness's differential cases (argmax,
argmin, cumsum, sort, argsort, top_k, gather, gather_nd, index_select, scatter_add,
scatter_assign, lookup_table, one_hot): ties, NaN, accumulation, duplicates, out-of-range
indices in checked builds, and the FrontendErrors of bad arguments."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from cinn_py.frontend import NetBuilder
from cinn_py.frontend.ops.base import FrontendError
from cinn_py.pipeline import compile_program


def _run(nb: NetBuilder, outs: list, *arrays: np.ndarray) -> list[np.ndarray]:
    program = nb.build(outs)
    got = compile_program(program, "x86")(*arrays)
    return list(got) if isinstance(got, tuple) else [got]


# -- argmax / argmin -----------------------------------------------------------------------------------------
def test_argmax_argmin_signatures_are_cinns() -> None:
    nb = NetBuilder("sig")
    assert str(inspect.signature(nb.argmax)) == "(x, axis=0, keep_dim=False)"
    assert str(inspect.signature(nb.argmin)) == "(x, axis=0, keep_dim=False)"
    assert str(inspect.signature(nb.cumsum)) == "(x, axis=-1, exclusive=False, reverse=False)"


def test_argmax_argmin_first_of_ties_nan_wins_and_int32() -> None:
    nb = NetBuilder("arg")
    x = nb.create_input("float32", [4, 5], "X")
    amax, amin = nb.argmax(x, axis=1), nb.argmin(x, axis=-1, keep_dim=True)
    assert amax.shape == (4,) and amin.shape == (4, 1) and str(amax.dtype) == "int32"
    xs = np.array([[1, 3, 3, 0, 3],
                   [np.nan, 5, np.nan, -1, -1],
                   [-np.inf, -np.inf, -np.inf, -np.inf, -np.inf],
                   [2, np.inf, 1, np.nan, -np.inf]], np.float32)
    got_max, got_min = _run(nb, [amax, amin], xs)
    np.testing.assert_array_equal(got_max, np.argmax(xs, axis=1))
    np.testing.assert_array_equal(got_min, np.argmin(xs, axis=1)[:, None])
    assert got_max.tolist() == [1, 0, 0, 3] and got_min[:, 0].tolist() == [3, 0, 0, 3]


def test_argmax_over_symbolic_axis_and_int64() -> None:
    nb = NetBuilder("argsym")
    x = nb.create_input("int64", ["S0", 3], "X")
    out = nb.argmax(x)  # CINN's default axis 0
    compiled = compile_program(nb.build([out]), "x86")
    for rows in (1, 6):
        xs = np.random.default_rng(rows).integers(-3, 3, (rows, 3)).astype(np.int64)
        np.testing.assert_array_equal(compiled(xs), np.argmax(xs, axis=0).astype(np.int32))


@pytest.mark.parametrize(("call", "message"), [
    (lambda nb, x, b: nb.argmax(x, axis=2),
     r"argmax: argument 'axis' 2 is out of range for a tensor of rank 2"),
    (lambda nb, x, b: nb.argmin(x, axis=-3), r"argmin: argument 'axis' -3 is out of range"),
    (lambda nb, x, b: nb.argmax(x, axis=1.0), r"argmax: argument 'axis' must be an int, got 1.0 \(float\)"),
    (lambda nb, x, b: nb.argmax(x, keep_dim=1), r"argmax: argument 'keep_dim' must be a bool, got 1 \(int\)"),
    (lambda nb, x, b: nb.argmax(b), r"argmax: needs a numeric operand, got bool"),
    (lambda nb, x, b: nb.argmax(x, dim=1), r"argmax: got an unexpected keyword argument 'dim'; "
                                           r"expected argmax\(x, axis=0, keep_dim=False\)"),
    (lambda nb, x, b: nb.cumsum(b), r"cumsum: needs a numeric operand, got bool"),
    (lambda nb, x, b: nb.cumsum(x, axis=5), r"cumsum: argument 'axis' 5 is out of range"),
])
def test_argmax_cumsum_argument_errors(call, message) -> None:
    nb = NetBuilder("bad")
    x = nb.create_input("float32", [3, 4], "X")
    b = nb.create_input("bool", [3, 4], "B")
    with pytest.raises(FrontendError, match=message):
        call(nb, x, b)


def test_argmax_of_a_0d_tensor_is_refused() -> None:
    nb = NetBuilder("zero")
    s = nb.reduce_sum(nb.create_input("float32", [3], "X"))
    with pytest.raises(FrontendError, match="argmax: needs an operand of rank >= 1"):
        nb.argmax(s)


# -- cumsum --------------------------------------------------------------------------------------------------
def test_cumsum_float16_accumulates_in_float32() -> None:
    nb = NetBuilder("cs16")
    x = nb.create_input("float16", [3000], "X")
    (got,) = _run(nb, [nb.cumsum(x)], np.ones(3000, np.float16))
    # float16 accumulation stalls at 2048 (2048 + 1 rounds back to 2048); float32 reaches 3000
    # (rounded to float16's 2-ulp grid there)
    assert got.dtype == np.float16 and float(got[-1]) == 3000.0 and float(got[2499]) == 2500.0


def test_cumsum_exclusive_reverse_int32_wraps_like_numpy() -> None:
    nb = NetBuilder("csint")
    x = nb.create_input("int32", [2, 4], "X")
    outs = [nb.cumsum(x, axis=1), nb.cumsum(x, axis=1, exclusive=True), nb.cumsum(x, axis=0, reverse=True),
            nb.cumsum(x, axis=-1, exclusive=True, reverse=True)]
    xs = np.array([[1, 2, 3, 4], [2**31 - 1, 1, -5, 7]], np.int32)
    inc, exc, rev, both = _run(nb, outs, xs)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(inc, np.cumsum(xs, axis=1, dtype=np.int32))
        np.testing.assert_array_equal(exc, np.cumsum(xs, axis=1, dtype=np.int32) - xs)
        np.testing.assert_array_equal(rev, np.flip(np.cumsum(np.flip(xs, 0), axis=0, dtype=np.int32), 0))
        np.testing.assert_array_equal(both,
                                      np.flip(np.cumsum(np.flip(xs, 1), axis=1, dtype=np.int32), 1) - xs)


# -- gather family -------------------------------------------------------------------------------------------
@pytest.fixture
def checked():
    from cinn_py.runtime.checked import set_default_checked

    set_default_checked(True)
    yield
    set_default_checked(None)


def test_index_op_signatures_are_cinns() -> None:
    nb = NetBuilder("sig")
    sigs = {m: str(inspect.signature(getattr(nb, m))) for m in (
        "gather", "index_select", "gather_nd", "lookup_table", "one_hot", "scatter_add", "scatter_assign")}
    assert sigs == {"gather": "(x, index, axis=0)", "index_select": "(x, index, axis=0)",
                    "gather_nd": "(x, index)",
                    "lookup_table": "(table, ids, padding_idx)",
                    "one_hot": "(indices, on_value, off_value, depth, axis=-1, dtype='float32')",
                    "scatter_add": "(x, updates, index, axis=0)",
                    "scatter_assign": "(x, updates, index, axis=0)"}


def test_gather_out_of_range_index_raises_in_a_checked_build_and_in_the_reference(checked) -> None:
    from cinn_py.diagnostics import OutOfBoundsAccessError

    nb = NetBuilder("oob")
    x = nb.create_input("float32", [4, 3], "X")
    i = nb.create_input("int64", [2], "I")
    program = nb.build([nb.gather(x, i)])
    xs = np.arange(12, dtype=np.float32).reshape(4, 3)
    compiled = compile_program(program, "x86")
    np.testing.assert_array_equal(compiled(xs, np.array([3, 0], np.int64)), xs[[3, 0]])
    for bad in (4, -1, 2**32):  # past the end, negative (not wrapped), beyond int32 (not truncated)
        with pytest.raises(OutOfBoundsAccessError, match="outside \\[0, 4\\) of 'X'"):
            compiled(xs, np.array([0, bad], np.int64))
        with pytest.raises(IndexError, match=f"gather: index {bad} is outside \\[0, 4\\)"):
            program.run_numpy(xs, np.array([0, bad], np.int64))


def test_gather_nd_and_lookup_table_out_of_range_ids_raise_in_a_checked_build(checked) -> None:
    from cinn_py.diagnostics import OutOfBoundsAccessError

    nb = NetBuilder("oob2")
    x = nb.create_input("float32", [3, 2], "X")
    i = nb.create_input("int32", [2, 1], "I")
    programs = [nb.build([nb.gather_nd(x, i)]), nb.build([nb.lookup_table(x, i, -1)])]
    for program in programs:
        with pytest.raises(OutOfBoundsAccessError):
            compile_program(program, "x86")(np.zeros((3, 2), np.float32), np.array([[1], [3]], np.int32))


def test_gather_forms_and_index_select() -> None:
    nb = NetBuilder("gather")
    x = nb.create_input("float32", [3, 4], "X")
    i1 = nb.create_input("int32", [5], "I1")
    i2 = nb.create_input("int64", [3, 2], "I2")
    i3 = nb.create_input("int8", [1, 4], "I3")
    outs = [nb.gather(x, i1, axis=1), nb.index_select(x, i1, axis=-1), nb.gather(x, i2, axis=1),
            nb.gather(x, i3)]
    assert [o.shape for o in outs] == [(3, 5), (3, 5), (3, 2), (1, 4)]
    rng = np.random.default_rng(0)
    xs = rng.random((3, 4), np.float32)
    a, b = rng.integers(0, 4, 5).astype(np.int32), rng.integers(0, 4, (3, 2))
    c = rng.integers(0, 3, (1, 4)).astype(np.int8)
    got = _run(nb, outs, xs, a, b, c)
    np.testing.assert_array_equal(got[0], xs[:, a])
    np.testing.assert_array_equal(got[1], xs[:, a])
    np.testing.assert_array_equal(got[2], np.take_along_axis(xs, b, axis=1))
    np.testing.assert_array_equal(got[3], np.take_along_axis(xs, c.astype(np.int64), axis=0))


def test_gather_fuses_with_its_producers_and_consumers() -> None:
    from cinn_py.frontend import plan

    nb = NetBuilder("fused_gather")
    x = nb.create_input("float32", ["S0", 6], "X")
    i = nb.create_input("int64", [4], "I")
    g = nb.gather(nb.exp(x), nb.cast(i, "int32"), axis=1)
    y = nb.add(g, nb.lookup_table(nb.create_input("float32", [5, 4], "T"),
                                  nb.create_input("int32", ["S0", 1], "J"), 0))
    program = nb.build([y])
    groups = plan(program).groups
    assert (len(groups) == 1 and {op.type for op in groups[0].ops}
            >= {"exp", "cast", "gather", "lookup_table", "add"})
    rng = np.random.default_rng(1)
    compiled = compile_program(program, "x86")
    for rows in (1, 3):
        args = (rng.random((rows, 6), np.float32), rng.integers(0, 6, 4), rng.random((5, 4), np.float32),
                rng.integers(0, 5, (rows, 1)).astype(np.int32))
        np.testing.assert_allclose(compiled(*args), program.run_numpy(*args), rtol=1e-6)
    from cinn_py.lowering.group import lower_group
    from cinn_py.tools.fuzz import compile_cuda_auto, nvrtc_available

    if nvrtc_available():
        compile_cuda_auto(lower_group(groups[0]))  # one kernel per shape bucket of S0


def test_scatter_add_accumulates_duplicates_and_drops_out_of_range_indices() -> None:
    nb = NetBuilder("scatter")
    x = nb.create_input("float16", [4, 2], "X")
    u = nb.create_input("float16", [5, 2], "U")
    i = nb.create_input("int32", [5], "I")
    add, assign = nb.scatter_add(x, u, i), nb.scatter_assign(x, u, i)
    xs = np.zeros((4, 2), np.float16)
    us = np.arange(10, dtype=np.float16).reshape(5, 2)
    idx = np.array([1, 1, 4, -1, 1], np.int32)  # 4 and -1 are outside [0, 4): dropped
    got_add, got_assign = _run(nb, [add, assign], xs, us, idx)
    np.testing.assert_array_equal(got_add, [[0, 0], [0 + 2 + 8, 1 + 3 + 9], [0, 0], [0, 0]])
    np.testing.assert_array_equal(got_assign, [[0, 0], [8, 9], [0, 0], [0, 0]])  # the last write wins
    np.testing.assert_array_equal(nb.build([add, assign]).run_numpy(xs, us, idx)[0], got_add)


def test_scatter_add_float16_accumulates_in_float32() -> None:
    nb = NetBuilder("scatter16")
    x = nb.create_input("float16", [1], "X")
    u = nb.create_input("float16", [3000], "U")
    i = nb.create_input("int32", [3000], "I")
    (got,) = _run(nb, [nb.scatter_add(x, u, i)], np.zeros(1, np.float16), np.ones(3000, np.float16),
                  np.zeros(3000, np.int32))
    assert float(got[0]) == 3000.0  # float16 accumulation stalls at 2048


def test_lookup_table_and_one_hot_as_cinns_op_tests_call_them() -> None:
    nb = NetBuilder("as_cinn_tests")
    table = nb.create_input("float16", [128, 8], "table")
    ids = nb.create_input("int16", [8, 4, 1], "ids")
    emb = nb.lookup_table(table, ids, 1)
    x = nb.create_input("int64", [16, 8], "x")
    on = nb.fill_constant([1], 1, "on_value", dtype="int64")
    off = nb.fill_constant([1], 0, "off_value", dtype="int64")
    hot = nb.one_hot(x, on, off, depth=10, axis=-1, dtype="float32")
    hot0 = nb.one_hot(x, on, off, 10, 0)
    assert emb.shape == (8, 4, 8) and hot.shape == (16, 8, 10) and hot0.shape == (10, 16, 8)
    rng = np.random.default_rng(2)
    ts, ix, xs = rng.random((128, 8)).astype(np.float16), rng.integers(0, 128, (8, 4, 1)).astype(np.int16), \
        rng.integers(-1, 11, (16, 8))
    ix[0, 0, 0] = 1
    got_emb, got_hot, got_hot0 = _run(nb, [emb, hot, hot0], ts, ix, xs)
    want_emb = np.where((ix == 1), np.float16(0), ts[ix[..., 0].astype(np.int64)])
    np.testing.assert_array_equal(got_emb, want_emb)
    assert not got_emb[0, 0].any()
    want_hot = (xs[..., None] == np.arange(10)).astype(np.float32)  # -1 and 10 give all zeros
    np.testing.assert_array_equal(got_hot, want_hot)
    np.testing.assert_array_equal(got_hot0, np.moveaxis(want_hot, -1, 0))


@pytest.mark.parametrize(("call", "message"), [
    (lambda nb, x, i, f: nb.gather(x, f),
     r"gather: argument 'index' must be an integer tensor, got float32\[2\]"),
    (lambda nb, x, i, f: nb.gather(x, i, axis=2), r"gather: argument 'axis' 2 is out of range"),
    (lambda nb, x, i, f: nb.gather(x, nb.create_input("int32", [2, 2, 2], "I3")),
     r"gather: argument 'index' must have rank 1 or the rank of x \(2\), got \[2, 2, 2\]"),
    (lambda nb, x, i, f: nb.gather(x, nb.create_input("int32", [3, 2], "I2"), axis=0),
     r"gather: index \[3, 2\] must match x \[3, 4\] \(or be 1\) in every dim but axis 0; dim 1 is 2, "
     r"expected 4"),
    (lambda nb, x, i, f: nb.index_select(x, nb.create_input("int32", [3, 4], "I2")),
     r"index_select: argument 'index' must have rank 1, got \[3, 4\]"),
    (lambda nb, x, i, f: nb.gather_nd(x, nb.create_input("int32", [2, 3], "I2")),
     r"gather_nd: the last dim of index \[2, 3\] .* expected a static 1..2, got 3"),
    (lambda nb, x, i, f: nb.lookup_table(x, i, -1),
     r"lookup_table: argument 'ids' must have rank >= 2 with a last dim of 1"),
    (lambda nb, x, i, f: nb.lookup_table(x, nb.create_input("int32", [2, 1], "J"), 3),
     r"lookup_table: argument 'padding_idx' must be -1 \(none\) or a row of the table \(0..3 - 1\), got 3"),
    (lambda nb, x, i, f: nb.lookup_table(x, nb.create_input("int32", [2, 1], "J"), padding_idx=None),
     r"lookup_table: argument 'padding_idx' must be an int, got None"),
    (lambda nb, x, i, f: nb.one_hot(i, f, f, depth=0), r"one_hot: argument 'depth' must be >= 1, got 0"),
    (lambda nb, x, i, f: nb.one_hot(i, f, f, depth=3, axis=2),
     r"one_hot: argument 'axis' must be -1 \(last\) or in \[0, 1\] for indices of rank 1, got 2"),
    (lambda nb, x, i, f: nb.one_hot(i, x, f, depth=3),
     r"one_hot: argument 'on_value' must hold one value \(shape \[1\]\), got \[3, 4\]"),
    (lambda nb, x, i, f: nb.one_hot(i, f, f, depth=3, dtype="complex"), r"one_hot: argument 'dtype'"),
    (lambda nb, x, i, f: nb.scatter_add(x, x, i),
     r"scatter_add: updates must have x's shape with dim 0 the length of "
                                                  r"index: expected \[2, 4\], got \[3, 4\]"),
    (lambda nb, x, i, f: nb.scatter_assign(x, nb.create_input("int32", [2, 4], "U"), i),
     r"scatter_assign: updates must have the dtype of x \(float32\), got int32"),
    (lambda nb, x, i, f: nb.scatter_add(nb.create_input("bool", [2], "B"),
                                        nb.create_input("bool", [2], "C"), i),
     r"scatter_add: needs numeric x and updates, got bool"),
    (lambda nb, x, i, f: nb.scatter_add(x, x, i, axis=-3),
     r"scatter_add: argument 'axis' -3 is out of range"),
])
def test_index_op_argument_errors(call, message) -> None:
    nb = NetBuilder("bad")
    x = nb.create_input("float32", [3, 4], "X")
    i = nb.create_input("int32", [2], "I")
    f = nb.create_input("float32", [2], "F")
    with pytest.raises(FrontendError, match=message):
        call(nb, x, i, f)


# -- sort / argsort / top_k ----------------------------------------------------------------------------------
def test_sort_op_signatures_are_cinns() -> None:
    nb = NetBuilder("sig")
    assert str(inspect.signature(nb.sort)) == "(operand, axis, is_ascend=True)"
    assert str(inspect.signature(nb.argsort)) == "(operand, axis, is_ascend=True)"
    assert str(inspect.signature(nb.top_k)) == "(x, k, axis=-1, largest=True)"


def test_sorts_are_stable_with_nan_largest() -> None:
    nb = NetBuilder("sorts")
    x = nb.create_input("float32", [2, 6], "X")
    indices, positions = nb.argsort(x, 1, False)  # CINN returns [indices, positions]
    values, top = nb.top_k(x, 3, 1, True)
    outs = [nb.sort(x, 1, True), nb.sort(x, -1, False), indices, positions, values, top,
            nb.argsort(x, axis=0)[0]]
    assert ([str(o.dtype) for o in outs]
            == ["float32", "float32", "int32", "int32", "float32", "int64", "int32"])
    xs = np.array([[2, np.nan, 1, 2, -np.inf, np.nan], [0, -0.5, 0, 3, np.inf, 0]], np.float32)
    asc, desc, idx, pos, val, tk, col = _run(nb, outs, xs)
    np.testing.assert_array_equal(asc, np.sort(xs, axis=1))  # NaN last
    assert idx.tolist() == [[1, 5, 0, 3, 2, 4], [4, 3, 0, 2, 5, 1]]  # NaN first, equal values in index order
    np.testing.assert_array_equal(desc, np.take_along_axis(xs, idx, axis=1))
    np.testing.assert_array_equal(np.take_along_axis(pos, idx, axis=1), np.tile(np.arange(6), (2, 1)))
    np.testing.assert_array_equal(val, desc[:, :3])
    assert tk.tolist() == [[1, 5, 0], [4, 3, 0]]
    np.testing.assert_array_equal(col, np.argsort(xs, axis=0, kind="stable"))


def test_top_k_k_beyond_the_dim_takes_it_all_and_smallest() -> None:
    nb = NetBuilder("topk")
    x = nb.create_input("int64", ["S0", 4], "X")
    values, indices = nb.top_k(x, 10, 1, False)
    assert values.shape[1] == 4 and indices.shape[1] == 4
    compiled = compile_program(nb.build([values, indices]), "x86")
    xs = np.array([[3, -1, 3, 0], [5, 5, 5, 5], [-2, 7, 1, -2]], np.int64)
    got_v, got_i = compiled(xs)
    np.testing.assert_array_equal(got_v, np.sort(xs, axis=1))
    np.testing.assert_array_equal(got_i, np.argsort(xs, axis=1, kind="stable"))


@pytest.mark.parametrize(("call", "message"), [
    (lambda nb, x, s: nb.sort(x, 2), r"sort: argument 'axis' 2 is out of range for a tensor of rank 2"),
    (lambda nb, x, s: nb.argsort(x, 0, is_ascend="yes"), r"argsort: argument 'is_ascend' must be a bool"),
    (lambda nb, x, s: nb.sort(x),
     r"sort: missing a required argument: 'axis'; expected sort\(operand, axis, is_ascend=True\)"),
    (lambda nb, x, s: nb.top_k(x, 0), r"top_k: argument 'k' must be >= 1, got 0"),
    (lambda nb, x, s: nb.top_k(s, 2, axis=0),
     r"top_k: the dim along argument 'axis' \(0\) must be static, got \[S0, 4\]"),
    (lambda nb, x, s: nb.argsort(nb.create_input("bool", [3], "B"), 0),
     r"argsort: needs a numeric operand, got bool"),
])
def test_sort_argument_errors(call, message) -> None:
    nb = NetBuilder("bad")
    x = nb.create_input("float32", [3, 4], "X")
    s = nb.create_input("float32", ["S0", 4], "S")
    with pytest.raises(FrontendError, match=message):
        call(nb, x, s)


def test_sorts_decompose_into_rank_order_and_gather_kernels() -> None:
    from cinn_py.frontend import plan

    nb = NetBuilder("sort_plan")
    x = nb.create_input("float32", ["S0", 9], "X")
    values, indices = nb.top_k(x, 4, 1, True)
    groups = plan(nb.build([values, indices, nb.sort(x, 1, False)])).groups
    kinds = [[op.type for op in g.ops] for g in groups]
    # the ranks read whole rows and the orders read all ranks of a row: each is a kernel of its
    # own; the ranks are computed once for the three results (CSE)
    assert (kinds.count(["sort_rank"]) == 1 and kinds.count(["rank_order"]) == 3
            and kinds.count(["gather"]) == 2)
