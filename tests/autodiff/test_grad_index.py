"""The gather/scatter/slice_assign/split gradient rules (rules_gather.py, rules_index.py) through
the compiled pipeline and against PyTorch's autograd.

Each case is a small forward program with the index op (and a nonlinearity, so the cotangent is
not uniform); its backward program is compiled for x86 (auto schedule) and for CUDA (run in the
CPU emulator) and compared with the backward's numpy reference (test_grad_ops checks that
reference op by op against finite differences); the gradients are compared with torch autograd
of the equivalent torch code (torch.gather, index_select, embedding, index_add, index_copy,
slicing, split) in float32 and float64. Duplicate indices are checked where torch defines their
result: accumulation (index_add, embedding, gather's backward); for scatter_assign, where torch
leaves the winner of a duplicate unspecified, the last write wins and the test spells the
gradient out."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from cinn_py.autodiff import grad
from cinn_py.frontend import NetBuilder
from cinn_py.frontend.program import Program
from cinn_py.pipeline import compile_program
from cinn_py.tools.testing.cuda import cuda_emulation


@dataclass(frozen=True)
class Case:
    build: Callable[[str], Program]
    arrays: Callable[[np.random.Generator, str], list[np.ndarray]]
    torch_fn: Callable[..., Any]
    """The forward in torch: the inputs as tensors (float ones require grad), the outputs."""


def _take_along_axis(dtype: str) -> Program:
    nb = NetBuilder("take_along")
    x = nb.create_input(dtype, [3, 5, 4], "X")
    index = nb.create_input("int64", [3, 7, 1], "Index")  # size-1 last dim: broadcast
    return nb.build([nb.tanh(nb.gather(x, index, axis=-2))])


def _index_select(dtype: str) -> Program:
    nb = NetBuilder("index_select")
    x = nb.create_input(dtype, [4, 6], "X")
    index = nb.create_input("int32", [5], "Index")
    return nb.build([nb.tanh(nb.index_select(x, index, axis=-1))])


def _gather_nd(dtype: str) -> Program:
    nb = NetBuilder("gather_nd")
    x = nb.create_input(dtype, [4, 3, 2], "X")
    index = nb.create_input("int64", [5, 2], "Index")
    return nb.build([nb.tanh(nb.gather_nd(x, index))])


def _embedding(dtype: str) -> Program:
    nb = NetBuilder("embedding")
    table = nb.create_input(dtype, [10, 4], "Table")
    ids = nb.create_input("int64", [2, 6, 1], "Ids")
    return nb.build([nb.tanh(nb.lookup_table(table, ids, padding_idx=3))])


def _scatter_add(dtype: str) -> Program:
    nb = NetBuilder("scatter_add")
    x = nb.create_input(dtype, [6, 3], "X")
    updates = nb.create_input(dtype, [5, 3], "Updates")
    index = nb.create_input("int64", [5], "Index")
    return nb.build([nb.tanh(nb.scatter_add(x, updates, index, axis=0))])


def _scatter_assign(dtype: str) -> Program:
    nb = NetBuilder("scatter_assign")
    x = nb.create_input(dtype, [3, 6], "X")
    updates = nb.create_input(dtype, [3, 4], "Updates")
    index = nb.create_input("int64", [4], "Index")
    return nb.build([nb.tanh(nb.scatter_assign(x, updates, index, axis=1))])


def _slice_assign(dtype: str) -> Program:
    nb = NetBuilder("slice_assign")
    x = nb.create_input(dtype, [5, 6], "X")
    a = nb.create_input(dtype, [2, 2], "A")
    return nb.build([nb.tanh(nb.slice_assign(x, a, [0, 1], [1, 0], [5, 6], [2, 3]))])


def _split(dtype: str) -> Program:
    nb = NetBuilder("split")
    x = nb.create_input(dtype, [4, 7], "X")
    a, b = nb.split(x, [2, -1], axis=-1)
    return nb.build([nb.tanh(a), nb.multiply(b, b)])


def _uniform(*shapes: tuple[int, ...]) -> Callable[[np.random.Generator, str], list[np.ndarray]]:
    return lambda rng, dtype: [rng.uniform(-1, 1, s).astype(dtype) for s in shapes]


def _with_index(shapes: list[tuple[int, ...]], index: Callable[[np.random.Generator], np.ndarray]
                ) -> Callable[[np.random.Generator, str], list[np.ndarray]]:
    return lambda rng, dtype: _uniform(*shapes)(rng, dtype) + [index(rng)]


def _table_and_ids(rng: np.random.Generator, dtype: str) -> list[np.ndarray]:
    table = rng.uniform(-1, 1, (10, 4)).astype(dtype)
    table[3] = 0  # the padding row (nn.Embedding zeroes it; lookup_table outputs zeros there)
    ids = np.array([[3, 1, 1, 7, 3, 0], [9, 1, 2, 3, 7, 7]], np.int64)[..., None]  # repeats, padding 3
    return [table, ids]


def _torch_embedding(t: Any, table: Any, ids: Any) -> list[Any]:
    return [t.tanh(t.nn.functional.embedding(ids[..., 0], table, padding_idx=3))]


def _torch_slice_assign(t: Any, x: Any, a: Any) -> list[Any]:
    y = x.clone()
    y[1:5:2, 0:6:3] = a
    return [t.tanh(y)]


CASES = {
    "take_along_axis": Case(_take_along_axis, _with_index([(3, 5, 4)], lambda r: r.integers(0, 5, (3, 7, 1))),
                            lambda t, x, i: [t.tanh(t.gather(x, -2, i.expand(3, 7, 4)))]),
    "index_select": Case(_index_select, _with_index([(4, 6)], lambda r: np.array([5, 0, 5, 2, 5], np.int32)),
                         lambda t, x, i: [t.tanh(t.index_select(x, -1, i.long()))]),
    "gather_nd": Case(_gather_nd, _with_index([(4, 3, 2)], lambda r: np.array([[0, 1], [3, 2], [0, 1], [2, 0],
                                                                               [3, 2]], np.int64)),
                      lambda t, x, i: [t.tanh(x[i[:, 0], i[:, 1]])]),
    "embedding": Case(_embedding, _table_and_ids, _torch_embedding),
    "scatter_add": Case(_scatter_add,
                        _with_index([(6, 3), (5, 3)], lambda r: np.array([4, 0, 4, 5, 4], np.int64)),
                        lambda t, x, u, i: [t.tanh(x.index_add(0, i, u))]),
    # distinct indices: torch's index_copy leaves the winner of a duplicate unspecified
    "scatter_assign": Case(_scatter_assign,
                           _with_index([(3, 6), (3, 4)], lambda r: np.array([5, 0, 2, 3], np.int64)),
                           lambda t, x, u, i: [t.tanh(x.index_copy(1, i, u))]),
    "slice_assign": Case(_slice_assign, _uniform((5, 6), (2, 2)), _torch_slice_assign),
    "split": Case(_split, _uniform((4, 7)), lambda t, x: [t.tanh(x[:, :2]), x[:, 2:] * x[:, 2:]]),
}


def _cotangents(program: Program, rng: np.random.Generator, dtype: str) -> list[np.ndarray]:
    return [rng.uniform(-1, 1, [int(d) for d in v.shape]).astype(dtype) for v in program.outputs]


def _as_tuple(value: Any) -> tuple[Any, ...]:
    return value if isinstance(value, tuple) else (value,)


@pytest.mark.parametrize("name", sorted(CASES))
def test_backward_compiles_and_matches_reference(name: str) -> None:
    case = CASES[name]
    program = case.build("float32")
    rng = np.random.default_rng(0)
    args = case.arrays(rng, "float32") + _cotangents(program, rng, "float32")
    backward = grad(program)
    want = _as_tuple(backward.run_numpy(*args))
    got = _as_tuple(compile_program(backward, "x86", schedule="auto")(*args))
    assert len(got) == len(want) == len([v for v in program.inputs if v.dtype.is_float])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(CASES))
def test_backward_cuda_kernels_match_reference_in_the_emulator(name: str) -> None:
    """The same backward programs' auto-scheduled CUDA kernels, run in the CPU emulator."""
    case = CASES[name]
    program = case.build("float32")
    rng = np.random.default_rng(0)
    args = case.arrays(rng, "float32") + _cotangents(program, rng, "float32")
    backward = grad(program)
    want = _as_tuple(backward.run_numpy(*args))
    with cuda_emulation():
        got = _as_tuple(compile_program(backward, "cuda", schedule="auto")(*args))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_match_torch_autograd(name: str, dtype: str) -> None:
    torch = pytest.importorskip("torch")
    case = CASES[name]
    program = case.build(dtype)
    rng = np.random.default_rng(1)
    arrays = case.arrays(rng, dtype)
    cots = _cotangents(program, rng, dtype)
    got = _as_tuple(grad(program).run_numpy(*arrays, *cots))
    ts = [torch.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    outs = case.torch_fn(torch, *ts)
    for mine, out in zip(_as_tuple(program.run_numpy(*arrays)), outs):
        np.testing.assert_allclose(mine, out.detach().numpy(), rtol=1e-6, atol=1e-7)
    torch.autograd.backward(outs, [torch.tensor(c) for c in cots])
    tol = 1e-5 if dtype == "float32" else 1e-12
    wanted = [t.grad.numpy() for t in ts if t.requires_grad]
    assert len(got) == len(wanted)
    for k, (mine, theirs) in enumerate(zip(got, wanted)):
        np.testing.assert_allclose(mine, theirs, rtol=tol, atol=tol, err_msg=f"{name}: input {k}'s gradient")


def test_scatter_assign_last_duplicate_wins_in_the_gradient() -> None:
    """index [1, 3, 1, 9, 3] into 5 rows: rows 1 and 3 take updates 2 and 4 (the last writes), the
    index 9 is dropped; those three updates and x's rows 1 and 3 get no gradient."""
    nb = NetBuilder("assign_dups")
    x = nb.create_input("float64", [5, 2], "X")
    updates = nb.create_input("float64", [5, 2], "Updates")
    index = nb.create_input("int32", [5], "Index")
    program = nb.build([nb.scatter_assign(x, updates, index)])
    xs, us = np.zeros((5, 2)), np.arange(10.0).reshape(5, 2)
    idx = np.array([1, 3, 1, 9, 3], np.int32)
    np.testing.assert_array_equal(program.run_numpy(xs, us, idx)[[1, 3]], us[[2, 4]])
    dout = np.arange(1.0, 11.0).reshape(5, 2)
    backward = grad(program)
    for run in (backward.run_numpy, compile_program(backward)):
        dx, du = run(xs, us, idx, dout)
        np.testing.assert_array_equal(dx, dout * np.array([1, 0, 1, 0, 1])[:, None])
        np.testing.assert_array_equal(du, np.stack([0 * dout[1], 0 * dout[3], dout[1], 0 * dout[0], dout[3]]))


def test_symbolic_split_concat_and_gather_backward_compile() -> None:
    """Sections of a symbolic axis (one starts at S0 - 3, after the -1 section), concatenated back
    in another order, and a gather along a symbolic axis: the backward program's zero padding,
    split sections and positions are symbolic too."""
    nb = NetBuilder("sym")
    x = nb.create_input("float64", ["S0", 5], "X")
    index = nb.create_input("int64", [2, 5], "Index")
    head, mid, tail = nb.split(x, [1, -1, 3], axis=0)
    picked = nb.gather(x, index, axis=0)  # take_along_axis over S0 rows
    rolled = nb.concat([tail, head, mid], 0)  # x's rows permuted: S0 - 3 .. S0 - 1, 0, 1 .. S0 - 4
    y = nb.add(nb.add(nb.reduce_sum(nb.multiply(mid, mid), [0]), nb.reshape(head, [5])),
               nb.add(nb.reduce_sum(nb.tanh(tail), [0]), nb.reduce_sum(nb.multiply(picked, picked), [0])))
    y = nb.add(y, nb.reduce_sum(nb.multiply(rolled, x), [0]))
    program = nb.build([y])
    backward = grad(program)
    compiled = compile_program(backward, "x86", schedule="auto")
    rng = np.random.default_rng(2)
    for rows in (4, 7):
        xs = rng.uniform(-1, 1, (rows, 5))
        idx = rng.integers(0, rows, (2, 5))
        dy = rng.uniform(-1, 1, 5)
        want = np.zeros_like(xs)
        want[0] = dy
        want[1:rows - 3] = 2 * xs[1:rows - 3] * dy
        want[rows - 3:] = (1 - np.tanh(xs[rows - 3:]) ** 2) * dy
        for k in range(2):
            np.add.at(want, (idx[k], np.arange(5)), 2 * xs[idx[k], np.arange(5)] * dy)
        perm = np.r_[rows - 3:rows, 0:rows - 3]  # sum_r x[perm[r]] x[r]: d/dx[j] = x[perm[j]] + x[perm^-1[j]]
        want += (xs[perm] + xs[np.argsort(perm)]) * dy
        np.testing.assert_allclose(backward.run_numpy(xs, idx, dy), want, rtol=1e-12)
        np.testing.assert_allclose(compiled(xs, idx, dy), want, rtol=1e-12)


def test_symbolic_gather_nd_stride_and_embedding_rows_compile() -> None:
    """gather_nd into [4, S0, 2] (the row stride of its linearised index is S0, a tensor in the
    backward) and lookup_table of [S0, 2, 1] ids (2 * S0 cotangent rows, padding row 2)."""
    nb = NetBuilder("sym_rows")
    x = nb.create_input("float64", [4, "S0", 2], "X")
    index = nb.create_input("int64", [5, 2], "Index")
    table = nb.create_input("float64", [6, 3], "Table")
    ids = nb.create_input("int32", ["S0", 2, 1], "Ids")
    picked = nb.gather_nd(x, index)
    rows = nb.lookup_table(table, ids, padding_idx=2)
    program = nb.build([nb.multiply(picked, picked), nb.reduce_sum(nb.tanh(rows), [0])])
    backward = grad(program)
    compiled = compile_program(backward, "x86", schedule="auto")
    rng = np.random.default_rng(3)
    for s in (3, 1):
        xs, ts = rng.uniform(-1, 1, (4, s, 2)), rng.uniform(-1, 1, (6, 3))
        idx = np.stack([rng.integers(0, 4, 5), rng.integers(0, s, 5)], 1)
        ii = rng.integers(0, 6, (s, 2, 1)).astype(np.int32)
        ii[0, 0, 0] = 2
        d1, d2 = rng.uniform(-1, 1, (5, 2)), rng.uniform(-1, 1, (2, 3))
        want_x = np.zeros_like(xs)
        np.add.at(want_x, (idx[:, 0], idx[:, 1]), 2 * xs[idx[:, 0], idx[:, 1]] * d1)
        ids_ = ii[..., 0]
        kept = (ids_ != 2)[..., None]
        dy = (1 - np.tanh(ts[ids_] * kept) ** 2) * d2[None] * kept
        want_t = np.zeros_like(ts)
        np.add.at(want_t, ids_.reshape(-1), dy.reshape(-1, 3))
        for run in (backward.run_numpy, compiled):
            got_x, got_t = run(xs, idx, ts, ii, d1, d2)
            np.testing.assert_allclose(got_x, want_x, rtol=1e-12, atol=1e-15)
            np.testing.assert_allclose(got_t, want_t, rtol=1e-12, atol=1e-15)
            assert not got_t[2].any()  # the padding row


def test_concat_of_two_symbolic_extents_backward_compiles() -> None:
    """concat of [S0, 2] and [S1, 2] rows: each input's cotangent is gathered at its symbolic
    offset (0 and S0), compiled and by hand."""
    nb = NetBuilder("cat_sym")
    a = nb.create_input("float64", ["S0", 2], "A")
    b = nb.create_input("float64", ["S1", 2], "B")
    rows = nb.concat([a, nb.tanh(b)], 0)
    program = nb.build([nb.reduce_sum(nb.multiply(rows, nb.reverse(rows, [0])), [0])])
    backward = grad(program)
    compiled = compile_program(backward, "x86", schedule="auto")
    rng = np.random.default_rng(4)
    for s0, s1 in ((3, 2), (1, 4)):
        xa, xb, dy = rng.uniform(-1, 1, (s0, 2)), rng.uniform(-1, 1, (s1, 2)), rng.uniform(-1, 1, 2)
        both = np.concatenate([xa, np.tanh(xb)])
        d_rows = 2 * both[::-1] * dy  # d/drows of sum(rows * reversed(rows)) (each pair meets twice)
        want = [d_rows[:s0], d_rows[s0:] * (1 - np.tanh(xb) ** 2)]
        for run in (backward.run_numpy, compiled):
            for got, w in zip(run(xa, xb, dy), want):
                np.testing.assert_allclose(got, w, rtol=1e-12, atol=1e-15)
