"""auto_mixed_precision: which ops run in float16/bfloat16, the program signature kept, numerics
of a BERT-style block vs float32, float32 accumulation of float16/bfloat16 reductions and matmuls
in the generated x86 LLVM IR and CUDA C, and the loss scaler."""

from __future__ import annotations

import re

import numpy as np
import pytest

from cinn_py.frontend import NetBuilder
from cinn_py.frontend.amp import AmpLists, LossScaler, auto_mixed_precision
from cinn_py.frontend.ops.base import FrontendError
from cinn_py.frontend.program import Program
from cinn_py.pipeline import compile_program, trace


def _block() -> Program:
    nb = NetBuilder("blk")
    x = nb.create_input("float32", [4, 16], "X")
    w = nb.create_input("float32", [16, 16], "W")
    b = nb.create_input("float32", [16], "B")
    h = nb.gelu(nb.add(nb.matmul(x, w), b))
    p = nb.softmax(nb.matmul(h, h, transpose_y=True), [-1])
    return nb.build([nb.layer_norm(nb.matmul(p, h), begin_norm_axis=1)])


@pytest.mark.parametrize("low", ["float16", "bfloat16"])
def test_allow_list_runs_low_deny_list_float32_signature_kept(low: str) -> None:
    amp = auto_mixed_precision(_block(), low)
    dtypes = {op.type: op.output.dtype.scalar_name() for op in amp.ops if op.type != "cast"}
    assert dtypes["matmul"] == low and dtypes["add"] == low and dtypes["gelu"] == low
    assert dtypes["softmax"] == "float32" and dtypes["layer_norm"] == "float32"
    assert [v.type for v in amp.inputs] == [v.type for v in _block().inputs]
    assert [v.type for v in amp.outputs] == [v.type for v in _block().outputs]
    # one cast per value and dtype (h feeds two matmuls and is cast down once)
    casts = [(op.inputs[0].name, op.output.dtype) for op in amp.ops if op.type == "cast"]
    assert len(casts) == len(set(casts))


@pytest.mark.parametrize(("low", "tol"), [("float16", 3e-2), ("bfloat16", 1e-1)])
def test_amp_block_matches_float32_within_low_precision(low: str, tol: float) -> None:
    """bfloat16 keeps 8 mantissa bits (float16: 11): the tolerance vs float32 is wider."""
    program = _block()
    rng = np.random.default_rng(0)
    args = [rng.uniform(-1, 1, s).astype(np.float32) for s in ((4, 16), (16, 16), (16,))]
    want = program.run_numpy(*args)
    amp = auto_mixed_precision(program, low)
    got = compile_program(amp, "x86")(*args)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    assert not np.array_equal(got, want)  # it did run in low precision
    # and agrees with the AMP program's own reference (each op exact, rounded to its dtype)
    np.testing.assert_allclose(got, amp.run_numpy(*args), rtol=2e-2, atol=2e-2)


# per low dtype: the widening load, the rounding store (x86 LLVM IR), the rounding store (CUDA C)
X86_WIDEN = {"float16": r"fpext (<\d+ x )?half>? .* to (<\d+ x )?float",
             "bfloat16": r"zext (<\d+ x )?i16>? .* to (<\d+ x )?i32>?\n"
                         r".*shl nuw (<\d+ x )?i32>? .*, (splat \(i32 16\)|16)"}
X86_ROUND = {"float16": r"fptrunc (<\d+ x )?float>? .* to (<\d+ x )?half",
             # round to nearest even: + 0x7fff + the lowest kept bit, then keep the high 16 bits
             "bfloat16": r"add (<\d+ x )?i32>? .*, (splat \(i32 32767\)|32767)\n"}
CUDA_ROUND = {"float16": "__float2half", "bfloat16": "__float2bfloat16"}


def _codegen_texts(program: Program) -> dict[str, list[str]]:
    return {t: [o.value.text for o in trace(program, t, schedule="auto", until="codegen") if o.step
                == "codegen"]
            for t in ("x86", "cuda")}


@pytest.mark.parametrize("low", ["float16", "bfloat16"])
def test_low_precision_reduction_and_matmul_accumulate_in_float32_in_generated_code(low: str) -> None:
    nb = NetBuilder("r")
    x = nb.create_input(low, [64, 256], "X")
    w = nb.create_input(low, [256, 32], "W")
    texts = _codegen_texts(nb.build([nb.reduce_sum(x, [1]), nb.matmul(x, w)]))
    (x86_sum, x86_mm), (cuda_sum, cuda_mm) = texts["x86"], texts["cuda"]
    for text in (x86_sum, x86_mm):
        assert re.search(X86_WIDEN[low], text) and re.search(X86_ROUND[low], text)
        assert not re.search(r"(fadd|fmul) (<\d+ x )?half|fmuladd\.(v\d+)?f16", text)
    assert re.search(r"fadd (<\d+ x )?float", x86_sum)
    # the matmul tactic's register tile: float32 multiply-adds on vectors of widened operands
    assert re.search(r"fmuladd\.v\d+f32", x86_mm)
    assert re.search(r"float reduce_sum_0__acc\w*\[", cuda_sum)
    assert f"{CUDA_ROUND[low]}(reduce_sum_0__acc" in cuda_sum
    assert re.search(r"float matmul_1__acc\w*\[", cuda_mm)
    assert f"{CUDA_ROUND[low]}(matmul_1__acc" in cuda_mm


def test_bfloat16_amp_softmax_accumulates_in_float32() -> None:
    """softmax is deny-listed: after bf16 AMP it reads a float32 cast of the bf16 matmul, and no
    kernel keeps a bfloat16 accumulator."""
    nb = NetBuilder("attn")
    q = nb.create_input("float32", [8, 64], "Q")
    k = nb.create_input("float32", [8, 64], "K")
    program = auto_mixed_precision(nb.build([nb.softmax(nb.matmul(q, k, transpose_y=True), [-1])]),
                                   "bfloat16")
    producers = {op.output.name: op for op in program.ops}
    soft = next(op for op in program.ops if op.type == "softmax")
    cast = producers[soft.inputs[0].name]
    assert cast.type == "cast" and cast.inputs[0].dtype.scalar_name() == "bfloat16"
    assert soft.output.dtype.scalar_name() == "float32"
    cuda = "\n".join(_codegen_texts(program)["cuda"])
    assert "__float2bfloat16(" in cuda and "__bfloat162float(" in cuda
    assert re.search(r"float \w*acc\w*\[", cuda) and not re.search(r"__nv_bfloat16 \w*acc", cuda)


def test_lists_and_dtype_errors() -> None:
    with pytest.raises(FrontendError, match="both the allow and deny"):
        AmpLists(allow=frozenset({"matmul"}), deny=frozenset({"matmul"}))
    with pytest.raises(FrontendError,
                       match=r"argument 'dtype': expected one of \['float16', 'bfloat16'\], got float64"):
        auto_mixed_precision(_block(), "float64")
    custom = auto_mixed_precision(_block(), lists=AmpLists(allow=frozenset({"add"})))
    first, *rest = [op for op in custom.ops if op.type == "matmul"]
    assert first.output.dtype.scalar_name() == "float32"  # not allowed: follows its float32 operands
    # h @ h^T follows gelu's float16; softmax (denied) @ h follows the float32 softmax
    assert [op.output.dtype.scalar_name() for op in rest] == ["float16", "float32"]


def test_loss_scaler_skips_overflow_and_grows() -> None:
    s = LossScaler(scale=1024.0, growth_interval=2)
    assert float(s.scale_loss(np.float16(2.0))) == 2048.0
    grads, finite = s.unscale([np.array([1024.0, np.inf], np.float16)])
    assert not finite
    s.update(finite)
    assert s.scale == 512.0
    grads, finite = s.unscale([np.array([512.0], np.float16)])
    assert finite and grads[0].dtype == np.float32 and grads[0][0] == 1.0
    s.update(True)
    s.update(True)
    assert s.scale == 1024.0
