"""run_ir argument handling: input names, dtype/rank/dim validation, symbolic dim binding."""

from __future__ import annotations

import numpy as np
import pytest

import cinn_py as cp
from cinn_py import ir
from cinn_py.interp import run_ir
from tests.interp.irb import func, loop, tensor, var


def _sym_add() -> ir.LoweredFunc:
    """C[i, j] = A[i, j] + B[j] with A: (N, M), B: (M,), C: (N, M)."""
    N, M = cp.sym("N"), cp.sym("M", lower=2)
    A = cp.placeholder((N, M), "float32", "A")
    B = cp.placeholder((M,), "float32", "B")
    C = cp.compute((N, M), lambda i, j: A[i, j] + B[j], "C")
    return cp.lower("sym_add", [A, B, C])


def test_symbols_bound_from_input_shapes() -> None:
    f = _sym_add()
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(run_ir(f, {"A": a, "_B": b})["C"], a + b)
    a2 = np.ones((5, 2), np.float32)
    assert run_ir(f, {"A": a2, "B": np.ones(2, np.float32)})["C"].shape == (5, 2)


def test_inconsistent_symbol_names_tensor_dim_and_values() -> None:
    f = _sym_add()
    with pytest.raises(ValueError,
                       match=r"dim 0 of input 'B' is 5 but symbol 'M' is 4 \(from dim 1 of input 'A'\)"):
        run_ir(f, {"A": np.ones((3, 4), np.float32), "B": np.ones(5, np.float32)})
    with pytest.raises(ValueError, match=r"'N' is 3 \(from symbols=\)"):
        run_ir(f, {"A": np.ones((4, 4), np.float32), "B": np.ones(4, np.float32)}, symbols={"N": 3})


def test_symbol_bounds_and_unknown_symbols() -> None:
    f = _sym_add()
    with pytest.raises(ValueError, match="'M' = 1 is below its lower bound"):
        run_ir(f, {"A": np.ones((3, 1), np.float32), "B": np.ones(1, np.float32)})
    with pytest.raises(ValueError, match=r"\['Q'\] are not symbolic dims"):
        run_ir(f, {"A": np.ones((3, 2), np.float32), "B": np.ones(2, np.float32)}, symbols={"Q": 1})


def test_expression_dims_checked_and_free_symbols_from_argument() -> None:
    # A: (S,), B: (2*S,) checked after binding; output (T,) where T is given only by `symbols`.
    S = ir.Var("S", ir.dtype.int64, lower_bound=ir.const(1, "int64"), is_symbolic_constant=True)
    T = ir.Var("T", ir.dtype.int64, lower_bound=ir.const(1, "int64"), is_symbolic_constant=True)
    A = ir.make_tensor("A", (S,), ir.dtype.float32)
    B = ir.make_tensor("B", (ir.const(2, "int64") * S,), ir.dtype.float32)
    C = ir.make_tensor("C", (T,), ir.dtype.float32)
    i = var("i", "int64")
    body = loop(i, T, ir.Store(C, ir.Load(A, (ir.Mod(i, S),)) + ir.Load(B, (ir.Mod(i, S) * 2,)), (i,)))
    f = func("expr_dims", [A, B], [C], body, scalars=[S, T])
    a, b = np.arange(3, dtype=np.float32), np.arange(6, dtype=np.float32)
    out = run_ir(f, {"A": a, "B": b}, symbols={"T": 7})["C"]
    np.testing.assert_array_equal(out, [a[k % 3] + b[2 * (k % 3)] for k in range(7)])
    with pytest.raises(ValueError, match=r"dim 0 of input 'B' is 5, expected 6"):
        run_ir(f, {"A": a, "B": b[:5]}, symbols={"T": 7})
    with pytest.raises(ValueError, match=r"\['T'\] .* not determined by any input shape"):
        run_ir(f, {"A": a, "B": b})


def test_input_validation_errors() -> None:
    A, B = tensor("A", (2, 3)), tensor("B", (2, 3))
    i, j = var("i"), var("j")
    f = func("copy", [A], [B], loop(i, 2, loop(j, 3, ir.Store(B, ir.Load(A, (i, j)), (i, j)))))
    good = np.zeros((2, 3), np.float32)
    with pytest.raises(TypeError, match="input 'A' has dtype float64, expected float32"):
        run_ir(f, {"A": good.astype(np.float64)})
    with pytest.raises(ValueError, match="input 'A' has rank 1"):
        run_ir(f, {"A": np.zeros(6, np.float32)})
    with pytest.raises(ValueError, match=r"dim 1 of input 'A' is 4, expected 3"):
        run_ir(f, {"A": np.zeros((2, 4), np.float32)})
    with pytest.raises(ValueError, match=r"'X' is not an input of function 'copy'; inputs are \['A'\]"):
        run_ir(f, {"X": good})
    with pytest.raises(ValueError, match=r"missing input\(s\) \['A'\]"):
        run_ir(f, {})
    with pytest.raises(TypeError, match="expects a LoweredFunc"):
        run_ir("copy", {"A": good})  # type: ignore[arg-type]


def test_inputs_are_not_modified_and_bf16_inputs() -> None:
    A = tensor("A", (4,), "bfloat16")
    i = var("i")
    f = func("inc", [A], [A], loop(i, 4, ir.Store(A, ir.Load(A, (i,)) + ir.const(1.0, "bfloat16"), (i,))))
    a = np.array([1.0, 2.0, 255.0, 0.5], np.float32)
    out = run_ir(f, {"A": a})["A"]
    assert out.tolist() == [2.0, 3.0, 256.0, 1.5] and a.tolist() == [1.0, 2.0, 255.0, 0.5]
    with pytest.raises(TypeError, match="bfloat16 and needs a float or uint16"):
        run_ir(f, {"A": np.ones(4, np.int32)})
