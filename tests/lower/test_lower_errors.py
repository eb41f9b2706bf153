"""Every error path of `lower`: each is a LoweringError (or TypeError/ValueError for bad Python
arguments) whose message names the function, the tensor and the rule."""

from __future__ import annotations

import pytest

import cinn_py as cp
from cinn_py.diagnostics import CinnError, LoweringError


def test_unlisted_placeholder_is_an_unknown_input() -> None:
    A = cp.placeholder((4,), "float32", "A")
    W = cp.placeholder((4,), "float32", "W")
    B = cp.compute((4,), lambda i: A[i] * W[i], "B")
    C = cp.compute((4,), lambda i: B[i] + 1, "C")
    with pytest.raises(LoweringError, match=r"lower\('fn'\): compute 'B' reads placeholder 'W', "
                                            r"which is not in the argument list") as info:
        cp.lower("fn", [A, C])
    assert info.value.detail == "  in: (A[i] * W[i])"


def test_no_output_listed() -> None:
    A = cp.placeholder((4,), "float32", "A")
    with pytest.raises(LoweringError, match=r"lower\('fn'\): no computed tensor is listed"):
        cp.lower("fn", [A])


def test_duplicate_tensor_names() -> None:
    A = cp.placeholder((4,), "float32", "A")
    B1 = cp.compute((4,), lambda i: A[i] + 1, "B")
    B2 = cp.compute((4,), lambda i: B1[i] * 2, "B")
    with pytest.raises(LoweringError, match="two different tensors are named 'B'"):
        cp.lower("fn", [A, B2])


def test_placeholder_and_compute_with_one_name() -> None:
    A = cp.placeholder((4,), "float32", "A")
    A2 = cp.compute((4,), lambda i: A[i] + 1, "A")
    with pytest.raises(LoweringError, match="two different tensors are named 'A'"):
        cp.lower("fn", [A, A2])


def test_tensor_listed_twice() -> None:
    A = cp.placeholder((4,), "float32", "A")
    B = cp.compute((4,), lambda i: A[i] + 1, "B")
    with pytest.raises(LoweringError, match="tensor 'B' is listed twice"):
        cp.lower("fn", [A, B, B])


def test_symbolic_dim_named_like_a_loop_axis() -> None:
    j = cp.sym("j")
    A = cp.placeholder((4, j), "float32", "A")
    B = cp.compute((4, j), lambda i, jj: A[i, jj] + 1, "B")
    with pytest.raises(LoweringError, match="symbolic dim 'j' has the same name as a loop axis name"):
        cp.lower("fn", [A, B])


def test_symbolic_dim_named_like_a_tensor() -> None:
    A_dim = cp.sym("A")
    A = cp.placeholder((A_dim,), "float32", "A")
    B = cp.compute((A_dim,), lambda i: A[i] + 1, "B")
    with pytest.raises(LoweringError, match="symbolic dim 'A' has the same name as a tensor name"):
        cp.lower("fn", [A, B])


def test_symbolic_dim_named_like_a_reduce_axis() -> None:
    r_dim = cp.sym("r")
    A = cp.placeholder((4, r_dim), "float32", "A")
    r = cp.reduce_axis(r_dim, "r")
    B = cp.compute((4,), lambda i: cp.reduce_sum(A[i, r], r), "B")
    with pytest.raises(LoweringError, match="symbolic dim 'r' has the same name as a reduce axis name"):
        cp.lower("fn", [A, B])


@pytest.mark.parametrize("bad", [None, "A", 3])
def test_bad_tensor_list(bad: object) -> None:
    with pytest.raises(TypeError, match="lower: "):
        cp.lower("fn", bad)  # type: ignore[arg-type]


def test_non_tensor_in_list() -> None:
    A = cp.placeholder((4,), "float32", "A")
    with pytest.raises(TypeError, match="every argument must be a placeholder"):
        cp.lower("fn", [A, A.tensor])  # type: ignore[list-item]


def test_single_tensor_instead_of_list() -> None:
    A = cp.placeholder((4,), "float32", "A")
    with pytest.raises(TypeError, match="must be a list"):
        cp.lower("fn", A)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["", "2fn", "f n", None])
def test_bad_function_name(name: object) -> None:
    A = cp.placeholder((4,), "float32", "A")
    B = cp.compute((4,), lambda i: A[i] + 1, "B")
    with pytest.raises(ValueError, match="function name must be an identifier"):
        cp.lower(name, [A, B])  # type: ignore[arg-type]


def test_errors_are_cinn_errors() -> None:
    assert issubclass(LoweringError, CinnError)
