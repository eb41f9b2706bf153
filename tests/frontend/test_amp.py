"""auto_mixed_precision: which ops run in float16, the program signature kept, numerics of a
BERT-style block vs float32, float32 accumulation of float16 reductions in the generated x86
LLVM IR and CUDA C, and the loss scaler."""

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


def test_allow_list_runs_low_deny_list_float32_signature_kept() -> None:
    amp = auto_mixed_precision(_block())
    dtypes = {op.type: op.output.dtype.scalar_name() for op in amp.ops if op.type != "cast"}
    assert dtypes["matmul"] == "float16" and dtypes["add"] == "float16" and dtypes["gelu"] == "float16"
    assert dtypes["softmax"] == "float32" and dtypes["layer_norm"] == "float32"
    assert [v.type for v in amp.inputs] == [v.type for v in _block().inputs]
    assert [v.type for v in amp.outputs] == [v.type for v in _block().outputs]
    # one cast per value and dtype (h feeds two matmuls and is cast down once)
    casts = [(op.inputs[0].name, op.output.dtype) for op in amp.ops if op.type == "cast"]
    assert len(casts) == len(set(casts))


def test_amp_block_matches_float32_within_half_precision() -> None:
    program = _block()
    rng = np.random.default_rng(0)
    args = [rng.uniform(-1, 1, s).astype(np.float32) for s in ((4, 16), (16, 16), (16,))]
    want = program.run_numpy(*args)
    got = compile_program(auto_mixed_precision(program), "x86")(*args)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=3e-2, atol=3e-2)
    assert not np.array_equal(got, want)  # it did run in float16


def test_float16_reduction_accumulates_in_float32_in_generated_code() -> None:
    nb = NetBuilder("r")
    x = nb.create_input("float16", [64, 256], "X")
    program = nb.build([nb.reduce_sum(x, [1])])
    texts = {t: next(o.value.text for o in trace(program, t, schedule="auto", until="codegen")
                     if o.step == "codegen") for t in ("x86", "cuda")}
    assert re.search(r"fpext <\d+ x half> .* to <\d+ x float>", texts["x86"])
    assert re.search(r"fadd <\d+ x float>", texts["x86"]) and not re.search(r"fadd <\d+ x half>|fadd half",
                                                                               texts["x86"])
    assert re.search(r"float reduce_sum_0__acc\w*\[", texts["cuda"])
    assert "__float2half(reduce_sum_0__acc" in texts["cuda"]


def test_lists_and_dtype_errors() -> None:
    with pytest.raises(FrontendError, match="both the allow and deny"):
        AmpLists(allow=frozenset({"matmul"}), deny=frozenset({"matmul"}))
    with pytest.raises(FrontendError, match="bfloat16"):
        auto_mixed_precision(_block(), "bfloat16")
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
