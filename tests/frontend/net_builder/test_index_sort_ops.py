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
    (lambda nb, x, b: nb.argmax(x, axis=2), r"argmax: argument 'axis' 2 is out of range for a tensor of rank 2"),
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


# -- cumsum -------------------------------------------------------------------------------------------------------
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
        np.testing.assert_array_equal(both, np.flip(np.cumsum(np.flip(xs, 1), axis=1, dtype=np.int32), 1) - xs)
