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
from cinn_py.autodiff import NON_DIFFERENTIABLE, grad
from cinn_py.autodiff.core import inline
from cinn_py.frontend import NetBuilder
from cinn_py.frontend.ops.base import REGISTRY
from cinn_py.frontend.ops.testing import Input
from cinn_py.frontend.program import Program, Variable
from cinn_py.ir import Var
from cinn_py.tools.op_harness import build_case, make_arrays

RULES_PENDING: dict[str, str] = {
    "im2col": "made only by the x86 conv_to_gemm rewrite in the optimize step, after autodiff has run on "
              "conv2d (whose rule covers it); its own rule (col2im) has not landed",
    "flash_attention_grad": "second-order attention gradients (a rule of the backward kernel) have not "
                            "landed",
}
"""Differentiable ops whose rule has not landed yet, each with the reason (keep it short)."""


def test_every_op_is_differentiable_or_declared_not() -> None:
    """A new op must come with its gradient rule (`define_grad` in cinn_py/autodiff/rules_*.py), be
    composite (differentiated through its decomposition), or be declared non-differentiable with
    its reason (`define_no_grad(..., why=...)`)."""
    missing = [name for name, op in sorted(REGISTRY.items())
               if op.grad is None and not op.composite and name not in RULES_PENDING]
    assert not missing, (f"ops without a gradient rule: {missing}; add one with define_grad in "
                         "cinn_py/autodiff/rules_*.py (checked here by finite differences), or, for an op "
                         "whose result is integer, bool or piecewise constant, declare it with "
                         "define_no_grad(..., why=...)")
    for name, why in NON_DIFFERENTIABLE.items():
        assert (why and REGISTRY[name].grad
                is not None), f"{name}: declared non-differentiable without a reason"


def _differentiable_ops() -> list[str]:
    ops = []
    for name, op in sorted(REGISTRY.items()):
        if name in NON_DIFFERENTIABLE or op.test is None or not (op.grad is not None or op.composite):
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


def _derived(v: Variable) -> bool:
    return any(not isinstance(d, (int, Var)) for d in v.shape)


def _bare_outputs(program: Program) -> Program:
    """`program` with each floating-point output of a derived symbolic dim (`S0 - 1`: its cotangent
    cannot be an input, AutodiffError) replaced by the sum of its squares, whose cotangent
    (2 * out * w) still varies per element."""
    if not any(_derived(v) for v in program.outputs):
        return program
    nb = NetBuilder(f"{program.name}_squares")
    outs = inline(nb, program, [nb.create_input(v.dtype, list(v.shape), v.name) for v in program.inputs])
    return nb.build([nb.reduce_sum(nb.multiply(o, o), list(range(o.ndim))) if _derived(o) and o.dtype.is_float
                     else o for o in outs])


def _float64(inp: Input) -> Input:
    """The input in float64, without planted NaN/inf (finite differences are undefined there)."""
    dtype = "float64" if inp.dtype in ("float32", "float16") else inp.dtype
    return Input(**{**inp.__dict__, "dtype": dtype, "specials": False})


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
    case = type(case)(tuple(_float64(a) if isinstance(a, Input) else a for a in case.args), case.kwargs,
                      case.method)
    program, inputs = build_case(op, dtype, case)
    symbols = {s: 3 for inp in inputs for s in inp.shape if isinstance(s, str)}
    arrays = make_arrays(inputs, dtype, symbols, seed=7)
    program = _bare_outputs(program)
    wrt = [v for v in program.inputs if v.dtype.is_float]
    if not wrt or not any(v.dtype.is_float for v in program.outputs):
        pytest.skip("no floating-point input or output: nothing to differentiate")
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
    backward = grad(program, wrt=wrt)  # composite ops too: every op of their decompositions has a rule
    got = backward.run_numpy(*arrays, *weights)
    got = got if isinstance(got, tuple) else (got,)
    for v, g in zip(wrt, got):
        k = list(program.inputs).index(v)
        want = _numeric_grad(program, arrays, weights, k, eps=1e-6 if exact else step)
        tol = 1e-5 if exact else 1e-2
        np.testing.assert_allclose(g, want, rtol=tol, atol=tol, err_msg=f"d/d{v.name} of {op}")
