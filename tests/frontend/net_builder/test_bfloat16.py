"""bfloat16 in NetBuilder: values are numpy arrays of `ml_dtypes.bfloat16`; kernels store bf16 and
compute in float32, rounding to nearest even on store (x86 LLVM and the CUDA emulator); the numpy
reference computes each op in float32 and rounds; ops that cannot take bf16 say so."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import cinn_py as cp
from cinn_py.frontend import NetBuilder
from cinn_py.frontend.graph_passes import optimize
from cinn_py.frontend.ops.base import FrontendError
from cinn_py.pipeline import compile_program, run_interpreted
from cinn_py.tools.testing.cuda import cuda_emulation

BF16 = np.dtype(ml_dtypes.bfloat16)

# float32 values exactly between two bfloat16 values (ties) and just off them: 1 + 2^-8 lies between
# 1 and 1 + 2^-7 (ties to the even 1.0); 1 + 3 * 2^-8 between 1 + 2^-7 and 1 + 2^-6 (to the even 1 + 2^-6)
TIES = np.array([1 + 2**-8, 1 + 3 * 2**-8, -(1 + 2**-8), 1 + 2**-8 + 2**-20, 3.0e38, -0.0, np.inf, np.nan],
                np.float32)


def _cast_program() -> cp.frontend.Program:
    nb = NetBuilder("to_bf16")
    x = nb.create_input("float32", [TIES.size], "x")
    return nb.build([nb.cast(x, "bfloat16")])


@pytest.mark.parametrize("target", ["x86", "interp", pytest.param("cuda", marks=pytest.mark.cuda_emulated)])
def test_cast_to_bfloat16_rounds_to_nearest_even(target: str) -> None:
    program = _cast_program()
    if target == "interp":
        got = run_interpreted(program, [TIES])
    elif target == "cuda":
        with cuda_emulation():
            got = compile_program(program, "cuda", schedule="auto")(TIES)
    else:
        got = compile_program(program, "x86")(TIES)
    want = TIES.astype(BF16)  # ml_dtypes rounds to nearest even
    assert got.dtype == BF16
    assert want[:2].astype(np.float32).tolist() == [1.0, 1 + 2**-6]  # the ties went to even
    np.testing.assert_array_equal(got.view(np.uint16)[:-1], want.view(np.uint16)[:-1])
    assert np.isnan(got[-1].astype(np.float32))


def test_build_and_get_output_takes_and_returns_ml_dtypes_bfloat16() -> None:
    nb = NetBuilder("ln")
    x = nb.create_input("bfloat16", [3, 40], "x")
    y = nb.layer_norm(x, begin_norm_axis=1)
    s = nb.reduce_sum(x, [1])
    program = nb.build([y, s])
    data = np.random.default_rng(0).uniform(-2, 2, (3, 40)).astype(BF16)
    got_y, got_s = cp.build_and_get_output(program, "x86", [x], [data], [y, s])
    assert got_y.dtype == BF16 and got_s.dtype == BF16
    want_y, want_s = program.run_numpy(data)
    assert want_y.dtype == BF16
    # the reference computes in float32 and rounds once: within an ulp or two of bfloat16 (2^-8)
    np.testing.assert_allclose(got_y.astype(np.float32), want_y.astype(np.float32), rtol=2e-2, atol=2e-2)
    exact = data.astype(np.float64).sum(axis=1)
    np.testing.assert_allclose(got_s.astype(np.float64), exact, rtol=2**-8)  # float32 accumulation
    exe = cp.compile(program, "x86")
    np.testing.assert_array_equal(exe.run({"x": data})[s.name].view(np.uint16), got_s.view(np.uint16))
    # CINN's own op tests call the method form on the program: the same call
    (method_s,) = program.build_and_get_output(cp.DefaultHostTarget(), [x], [data], [s])
    np.testing.assert_array_equal(method_s.view(np.uint16), got_s.view(np.uint16))


@pytest.mark.parametrize("target", ["x86", pytest.param("cuda", marks=pytest.mark.cuda_emulated)])
def test_bfloat16_sum_accumulates_in_float32(target: str) -> None:
    """256 + 4095 * 1.0: a bfloat16 accumulator holding 256 stays there (257 rounds to the even 256,
    the ulp is 2), however the lanes split the sum; float32 reaches 4351, which rounds to 4352."""
    nb = NetBuilder("acc")
    x = nb.create_input("bfloat16", [4096], "x")
    program = nb.build([nb.reduce_sum(x, [0])])
    data = np.ones(4096, BF16)
    data[0] = 256.0
    if target == "cuda":
        with cuda_emulation():
            got = compile_program(program, "cuda", schedule="auto")(data)
    else:
        got = compile_program(program, "x86", schedule="auto")(data)
    assert float(got.astype(np.float32)) == 4352.0


def test_bfloat16_inputs_must_be_ml_dtypes_arrays() -> None:
    nb = NetBuilder("relu")
    x = nb.create_input("bfloat16", [4], "x")
    program = nb.build([nb.relu(x)])
    with pytest.raises(TypeError,
                       match=r"input 'x' must have dtype bfloat16 \(ml_dtypes.bfloat16, or uint16 bit "
                             r"patterns\), "
                                        r"got float32"):
        program.run_numpy(np.zeros(4, np.float32))
    assert nb.create_input(BF16, [2], "y").dtype.scalar_name() == "bfloat16"  # numpy dtype accepted


def test_bfloat16_bit_patterns_in_give_bit_patterns_out() -> None:
    """uint16 bit patterns (the kernels' storage; cinn_py.torch passes bf16 tensors so) are
    accepted, and a compiled program then returns bit patterns too."""
    nb = NetBuilder("bits")
    x = nb.create_input("bfloat16", [5], "x")
    program = nb.build([nb.scale(x, 2.0, 1.0)])
    values = np.array([0.5, -1.25, 3.0, 0.0, 1e-3], np.float32).astype(BF16)
    compiled = compile_program(program, "x86")
    as_bf16, as_bits = compiled(values), compiled(values.view(np.uint16))
    assert as_bf16.dtype == BF16 and as_bits.dtype == np.uint16
    np.testing.assert_array_equal(as_bits, as_bf16.view(np.uint16))
    np.testing.assert_array_equal(program.run_numpy(values.view(np.uint16)).view(np.uint16), as_bits)


@pytest.mark.parametrize(("build", "message"), [
    (lambda nb, x: nb.bitwise_and(x, x),
     r"bitwise_and: needs an integer or bool operand, got bfloat16 for argument 'x' \(expected one of "
     r"bool, int8, .*uint64\)"),
    (lambda nb, x: nb.left_shift(x, x),
     r"left_shift: needs an integer operand, got bfloat16 for argument 'x'"),
    (lambda nb, x: nb.popc(x), r"popc: needs an integer operand, got bfloat16 for argument 'x'"),
    (lambda nb, x: nb.reduce_any(x, [0]),
     r"reduce_any: needs a bool operand, got bfloat16 for argument 'x' \(expected one of bool\); compare it "
     r"first"),
    (lambda nb, x: nb.one_hot(x, nb.fill_constant([1], 1.0, "on", "bfloat16"),
                              nb.fill_constant([1], 0.0, "off", "bfloat16"), 3),
     r"one_hot: argument 'indices' must be an integer tensor, got bfloat16"),
])
def test_ops_without_bfloat16_name_op_argument_and_dtypes(build, message) -> None:  # type: ignore[no-untyped-def]
    nb = NetBuilder("bad")
    x = nb.create_input("bfloat16", [4], "x")
    with pytest.raises(FrontendError, match=message):
        build(nb, x)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_constant_folding_computes_like_the_kernels(dtype: str) -> None:
    """A folded reduction of a uniform constant accumulates in float32 (300 * bf16(0.01) is 3.0029,
    3.0 in bfloat16; a bfloat16 accumulator gives 3.21875); a folded elementwise op computes in
    float32 and rounds once."""
    nb = NetBuilder("fold")
    x = nb.create_input(dtype, [3], "x")
    total = nb.reduce_sum(nb.fill_constant([3, 300], 0.01, "d", dtype), [1])
    y = nb.add(nb.add(x, total), nb.exp(nb.fill_constant([3], 0.1, "c", dtype)))
    program = nb.build([y])
    folded = [op.type for op in optimize(program).ops]
    assert folded.count("fill_constant") == 2 and "reduce_sum" not in folded and "exp" not in folded
    data = np.ones(3, BF16 if dtype == "bfloat16" else np.float16)
    got = compile_program(program, "x86")(data)
    np.testing.assert_array_equal(got.astype(np.float32), program.run_numpy(data).astype(np.float32))
