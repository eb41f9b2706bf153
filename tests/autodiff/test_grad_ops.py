"""Every op's gradient rule against central finite differences in float64, on the op harness'
cases (their shapes, broadcasts, attributes and value ranges; symbolic dims bound to 3).

The backward program is evaluated with the ops' numpy references (`Program.run_numpy`); the
compiled pipeline runs backward programs in test_grad_compiled.py.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from cinn_py import autodiff  # noqa: F401  (attaches the rules)
from cinn_py.autodiff import AutodiffError, grad
from cinn_py.frontend.ops.base import REGISTRY
from cinn_py.frontend.ops.testing import Input
from cinn_py.ir import Var
from cinn_py.tools.op_harness import build_case, make_arrays

NO_GRADIENT = {"floor", "ceil", "round", "trunc", "sign", "floor_divide", "mod", "remainder", "fill_constant",
               "equal", "not_equal", "less_than", "less_equal", "greater_than", "greater_equal", "is_nan", "is_inf",
               "is_finite", "arange", "uniform_random", "gaussian_random"}


def _differentiable_ops() -> list[str]:
    ops = []
    for name, op in sorted(REGISTRY.items()):
        if name in NO_GRADIENT or op.test is None or not (op.grad is not None or op.composite):
            continue
        ops.append(name)
    return ops


def _cases() -> list[Any]:
    items = []
    for name in _differentiable_ops():
        test = REGISTRY[name].test
        assert test is not None
        dtype = "float64" if "float64" in test.dtypes or "float32" in test.dtypes else None
        if dtype is None:
            continue
        for k, case in enumerate(test.cases(dtype)):
            items.append(pytest.param(name, dtype, k, id=f"{name}-{k}-{case.label()}"))
    return items


def _float64(inp: Input) -> Input:
    return inp if inp.dtype not in ("float32", "float16") else Input(**{**inp.__dict__, "dtype": "float64"})


def _numeric_grad(program: Any, arrays: list[np.ndarray], weights: list[np.ndarray], k: int,
                  eps: float = 1e-6) -> np.ndarray:
    def loss(xs: list[np.ndarray]) -> float:
        outs = program.run_numpy(*xs)
        outs = outs if isinstance(outs, tuple) else (outs,)
        outs = tuple(o for o, v in zip(outs, program.outputs) if v.dtype.is_float)  # bfloat16 included
        return float(sum(np.sum(o.astype(np.float64) * w.astype(np.float64)) for o, w in zip(outs, weights)))

    g = np.zeros_like(arrays[k])
    flat = g.reshape(-1)
    for i in range(arrays[k].size):
        plus = [a.copy() for a in arrays]
        minus = [a.copy() for a in arrays]
        plus[k].reshape(-1)[i] += eps
        minus[k].reshape(-1)[i] -= eps
        flat[i] = (loss(plus) - loss(minus)) / (2 * eps)
    return g


@pytest.mark.parametrize(("op", "dtype", "index"), _cases())
def test_gradient_matches_finite_differences(op: str, dtype: str, index: int) -> None:
    test = REGISTRY[op].test
    assert test is not None
    case = test.cases(dtype)[index]
    case = type(case)(tuple(_float64(a) if isinstance(a, Input) else a for a in case.args), case.kwargs, case.method)
    program, inputs = build_case(op, dtype, case)
    symbols = {s: 3 for inp in inputs for s in inp.shape if isinstance(s, str)}
    arrays = make_arrays(inputs, dtype, symbols, seed=7)
    wrt = [v for v in program.inputs if v.dtype.is_float]
    if not wrt or not any(v.dtype.is_float for v in program.outputs):
        pytest.skip("no floating-point input or output: nothing to differentiate")
    if any(not isinstance(d, (int, Var)) for v in program.outputs for d in v.shape):
        pytest.skip("an output has a derived symbolic dim (its cotangent cannot be an input; AutodiffError)")
    rng = np.random.default_rng(11)
    outs = program.run_numpy(*arrays)
    outs = outs if isinstance(outs, tuple) else (outs,)
    outs = tuple(o for o, v in zip(outs, program.outputs) if v.dtype.is_float)
    weights = [rng.uniform(-1.0, 1.0, size=np.shape(o)).astype(o.dtype) for o in outs]
    exact = all(o.dtype == np.float64 for o in outs)  # else (cast) a wide step: the op is linear there
    # ... for bfloat16 outputs (8 bits) twice the inputs' magnitude: the rounding error of the
    # difference (an ulp of |x| + step, about (|x| + step) / 2^8) over 2 * step stays below 1e-2
    step = 0.25
    if any(v.dtype.scalar_name() == "bfloat16" for v in program.outputs):
        step = 2.0 * max([1.0] + [float(np.abs(a).max()) for a in arrays if a.dtype.kind == "f" and a.size])
    try:
        backward = grad(program, wrt=wrt)
    except AutodiffError as e:
        if "no gradient rule yet" in str(e):  # a declared limitation of a rule (it names the case)
            pytest.skip(str(e))
        if not REGISTRY[op].composite or REGISTRY[op].grad is not None:
            raise
        pytest.skip(f"composite op whose decomposition has an op without a gradient rule: {e}")
    got = backward.run_numpy(*arrays, *weights)
    got = got if isinstance(got, tuple) else (got,)
    for v, g in zip(wrt, got):
        k = list(program.inputs).index(v)
        want = _numeric_grad(program, arrays, weights, k, eps=1e-6 if exact else step)
        tol = 1e-5 if exact else 1e-2
        np.testing.assert_allclose(g, want, rtol=tol, atol=tol, err_msg=f"d/d{v.name} of {op}")
