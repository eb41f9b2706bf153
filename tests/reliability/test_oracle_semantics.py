"""`Program.run_numpy` (the oracle) computes what compiled kernels compute on special values
(issue 23 item 8): CINN's max/min NaN rule (relu, clip, pooling, max/min reductions included) and
integer division/remainder by zero giving 0 (docs/semantics.md)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from cinn_py.frontend import NetBuilder
from cinn_py.pipeline import compile_program

SPECIAL = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0], np.float32)


def _with_specials(shape: tuple[int, ...], seed: int, nan: bool = True) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.uniform(-3, 3, shape).astype(np.float32)
    mask = rng.random(shape) < 0.3
    x[mask] = rng.choice(SPECIAL if nan else SPECIAL[1:], int(mask.sum()))
    return x


def _agree(name: str, build: Callable[..., Any], arrays: list[np.ndarray], schedule: str | None) -> None:
    nb = NetBuilder(name)
    ins = [nb.create_input(str(a.dtype), list(a.shape), f"x{k}") for k, a in enumerate(arrays)]
    program = nb.build([build(nb, *ins)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the oracle must not lean on numpy's divide-by-zero warnings
        expected = program.run_numpy(*arrays)
    got = compile_program(program, "x86", schedule=schedule)(*arrays)
    np.testing.assert_array_equal(got, expected, err_msg=f"{name} ({schedule}): compiled vs run_numpy")


FLOAT_CASES: dict[str, tuple[Callable[..., Any], int]] = {
    "maximum": (lambda nb, a, b: nb.max(a, b), 2),
    "minimum": (lambda nb, a, b: nb.min(a, b), 2),
    "relu": (lambda nb, a: nb.relu(a), 1),
    "relu6": (lambda nb, a: nb.relu6(a), 1),
    "clip": (lambda nb, a: nb.clip(a, -0.5, 0.5), 1),
    "reduce_max_rows": (lambda nb, a: nb.reduce_max(a, [1]), 1),
    "reduce_min_cols": (lambda nb, a: nb.reduce_min(a, [0]), 1),
    "reduce_max_all": (lambda nb, a: nb.reduce_max(a, []), 1),
}


@pytest.mark.parametrize("schedule", [None, "auto"])
@pytest.mark.parametrize("case", sorted(FLOAT_CASES))
def test_nan_and_infinities_agree(case: str, schedule: str | None) -> None:
    build, arity = FLOAT_CASES[case]
    arrays = [_with_specials((6, 5), seed) for seed in range(arity)]
    _agree(case, build, arrays, schedule)


@pytest.mark.parametrize("case", ["reduce_max_rows", "reduce_min_cols", "reduce_max_all"])
def test_vectorised_reductions_agree_on_infinities(case: str) -> None:
    # a vectorised or parallel reduction folds partial results in another order, so only a NaN
    # (which the rule drops unless it comes last) can make it differ from the serial fold
    build, _ = FLOAT_CASES[case]
    _agree(case, build, [_with_specials((64, 64), 5, nan=False)], "auto")


def test_max_pool_with_nan_agrees() -> None:
    x = _with_specials((1, 2, 6, 6), 3)
    _agree("pool", lambda nb, a: nb.pool2d(a, "max", [2, 2], [2, 2], [0, 0]), [x], None)


@pytest.mark.parametrize("op", ["divide", "floor_divide", "mod", "remainder"])
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_integer_division_by_zero_agrees(op: str, dtype: str) -> None:
    a = np.array([7, -7, 3, 0, -1, 5], dtype)
    b = np.array([0, 2, 0, 0, -3, 0], dtype)
    nb_op = {"divide": "divide", "floor_divide": "floor_divide", "mod": "mod", "remainder": "remainder"}[op]
    _agree(op, lambda nb, x, y: getattr(nb, nb_op)(x, y), [a, b], None)
