"""Kernel argument validation (cinn_py.runtime.args) through an x86 kernel: every error."""

from __future__ import annotations

import numpy as np
import pytest

from cinn_py import ir
from cinn_py.ir import dtype as dt
from cinn_py.runtime.args import ArgValidator, eval_int_expr
from codegen.llvm import build_x86
from tests.codegen.llvm.llvm_helpers import func, loop, sym, tensor


@pytest.fixture(scope="module")
def kernel():  # type: ignore[no-untyped-def]
    """Y[S, 4] = X[S, 4] + W[4]; Z[2*S] = 2 * X[S, 0] (symbolic dim S >= 1)."""
    ir.reset_name_ids()
    S = sym("S")
    i, j = ir.Var("i", dt.int64), ir.Var("j", dt.int64)
    X, W = tensor("X", (S, 4)), tensor("W", (4,))
    Y, Z = tensor("Y", (S, 4)), tensor("Z", (S * ir.const(2, dt.int64),))
    two = ir.const(2, dt.int64)
    body = ir.Block((loop(i, S, loop(j, 4, ir.Store(Y, ir.Load(X, (i, j)) + ir.Load(W, (j,)), (i, j)))),
                     loop(i, S * two, ir.Store(Z, ir.Load(X, (i / two, ir.const(0, dt.int64))) * 2.0, (i,)))))
    return build_x86(func("fn", [X, W], [Y, Z], body, syms=[S]))


X3 = np.ones((3, 4), np.float32)
W = np.arange(4, dtype=np.float32)


def test_valid_call_returns_tuple_and_out_is_written(kernel) -> None:  # type: ignore[no-untyped-def]
    y, z = kernel(X3, W)
    np.testing.assert_array_equal(y, X3 + W)
    assert z.shape == (6,) and y.ctypes.data % 64 == 0
    out = (np.empty((3, 4), np.float32), np.empty(6, np.float32))
    assert kernel(X3, W, out=out)[0] is out[0]
    np.testing.assert_array_equal(out[1], 2 * np.ones(6))


@pytest.mark.parametrize(("args", "error", "pattern"), [
    ((X3,), TypeError, r"expected 2 input\(s\) \(X, W\), got 1"),
    ((X3, W, W), TypeError, r"expected 2 input\(s\)"),
    (([[1.0] * 4] * 3, W), TypeError,
     r"input 0 \('X'\): expected a numpy array or a DLPack CPU tensor, got builtins.list"),
    ((X3.astype(np.float64), W), TypeError, r"input 0 \('X'\): expected dtype float32, got float64"),
    ((X3, W.reshape(1, 4)), ValueError, r"input 1 \('W'\): expected rank 1 \(shape \[4\]\), got rank 2"),
    ((X3, np.ones(5, np.float32)), ValueError, r"input 1 \('W'\): dim 0 must be 4 .* got 5"),
    ((np.ones((3, 8), np.float32)[:, ::2], W), ValueError, r"input 0 \('X'\): expected a C-contiguous array"),
    ((np.ones((0, 4), np.float32), W), ValueError, r"symbolic dim 'S' = 0 is below its lower bound 1"),
])
def test_bad_inputs_raise_clear_errors(kernel, args, error, pattern) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(error, match=pattern):
        kernel(*args)


@pytest.mark.parametrize(("out", "error", "pattern"), [
    (np.empty((3, 4), np.float32), TypeError, r"out= expects 2 array\(s\) \(Y, Z\), got 1"),
    ((np.empty((3, 4), np.float32), np.empty(5, np.float32)), ValueError,
     r"output 1 \('Z'\): expected shape \(6,\), got \(5,\)"),
    ((np.empty((3, 4), np.float64), np.empty(6, np.float32)), TypeError,
     r"output 0 \('Y'\): expected dtype float32"),
    ("alias", ValueError, r"output 0 \('Y'\) shares memory with input 0 \('X'\)"),
])
def test_bad_outputs_raise_clear_errors(kernel, out, error, pattern) -> None:  # type: ignore[no-untyped-def]
    x = X3.copy()
    if isinstance(out, str):
        out = (x, np.empty(6, np.float32))
    with pytest.raises(error, match=pattern):
        kernel(x, W, out=out)
    np.testing.assert_array_equal(x, X3)  # nothing ran


def test_outputs_aliasing_each_other_and_read_only_outputs(kernel) -> None:  # type: ignore[no-untyped-def]
    buf = np.empty(64, np.float32)
    with pytest.raises(ValueError, match=r"output 1 \('Z'\) shares memory with output 0 \('Y'\)"):
        kernel(X3, W, out=(buf[:12].reshape(3, 4), buf[6:12]))
    ro = np.empty((3, 4), np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        kernel(X3, W, out=(ro, np.empty(6, np.float32)))


def test_symbolic_dims_must_agree_across_inputs() -> None:
    S = sym("S")
    i = ir.Var("i", dt.int64)
    A, B, C = tensor("A", (S,)), tensor("B", (S,)), tensor("C", (S,))
    f = func("agree", [A, B], [C],
             loop(i, S, ir.Store(C, ir.Load(A, (i,)) + ir.Load(B, (i,)), (i,))), syms=[S])
    k = build_x86(f)
    with pytest.raises(ValueError,
                       match=r"input 1 \('B'\) dim 0: symbolic dim 'S' is 5 here but 4 in .*input 0"):
        k(np.ones(4, np.float32), np.ones(5, np.float32))


def test_dims_that_are_expressions_of_symbols() -> None:
    S = sym("S")
    two = ir.const(2, dt.int64)
    A, B = tensor("A", (S * two,)), tensor("B", (S,))
    validator = ArgValidator(func("expr", [A], [B], ir.Block(()), syms=[S]))
    assert validator.validate((np.ones(8, np.float32),)).symbols == {"S": 4}
    with pytest.raises(ValueError, match="cannot be inferred"):
        validator.validate((np.ones(7, np.float32),))
    C = tensor("C", (S,))
    D = tensor("D", (S + ir.const(1, dt.int64),))
    validator = ArgValidator(func("expr2", [C, D], [B], ir.Block(()), syms=[S]))
    with pytest.raises(ValueError, match=r"input 1 \('D'\) dim 0: expected \(S \+ 1ll\) = 4 with S=3"):
        validator.validate((np.ones(3, np.float32), np.ones(5, np.float32)))


def test_dlpack_cpu_tensor_accepted_and_c_semantics_of_shape_eval(kernel) -> None:  # type: ignore[no-untyped-def]
    class Wrapped:  # minimal DLPack producer around a numpy array
        def __init__(self, a: np.ndarray) -> None:
            self.a = a

        def __dlpack__(self, **kw):  # type: ignore[no-untyped-def]
            return self.a.__dlpack__(**kw)

        def __dlpack_device__(self):  # type: ignore[no-untyped-def]
            return self.a.__dlpack_device__()

    y, _ = kernel(Wrapped(X3), W)
    np.testing.assert_array_equal(y, X3 + W)
    assert eval_int_expr(ir.Div(ir.const(-7, dt.int64), ir.const(2, dt.int64)), {}) == -3
    assert eval_int_expr(ir.Mod(ir.const(-7, dt.int64), ir.const(2, dt.int64)), {}) == -1


def test_bfloat16_arguments_as_uint16_bits() -> None:
    i = ir.Var("i")
    A, B = tensor("A", (4,), dt.bfloat16), tensor("B", (4,), dt.bfloat16)
    k = build_x86(func("bf", [A], [B], loop(i, 4, ir.Store(B, ir.Load(A, (i,)), (i,)))))
    with pytest.raises(TypeError,
                       match=r"expected dtype bfloat16 \(bfloat16 is passed as its uint16 bit pattern"):
        k(np.ones(4, np.float32))
    bits = np.array([0x3F80, 0x4000, 0, 0xBF80], np.uint16)
    np.testing.assert_array_equal(k(bits), bits)
