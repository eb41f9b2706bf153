"""The differential op harness (cinn_py/tools/op_harness.py): every registered op that declares
test cases (`OpDef.test`) runs compiled for x86 against its numpy reference for each case and
dtype, and its CUDA kernels compile with NVRTC (one case per op and dtype). CI runs every case
of an op's first dtype and a third of the others; CINN_OP_HARNESS_FULL=1 runs them all. The CUDA
kernels of each op's first dtype (and bfloat16 for the float32-accumulating ops) also run in the
CPU emulator against numpy (all dtypes with CINN_OP_HARNESS_FULL=1)."""

from __future__ import annotations

import os

import pytest

from cinn_py.frontend.ops import REGISTRY
from cinn_py.tools import op_harness
from cinn_py.tools.fuzz import nvrtc_available

ITEMS = list(op_harness.harness_items(full=os.environ.get("CINN_OP_HARNESS_FULL") == "1"))
# ops without cases: none but those only passes build (they have no NetBuilder method)
UNTESTED = sorted(name for name, op in REGISTRY.items() if op.test is None and op.signature is not None)


def test_every_op_with_a_method_declares_cases() -> None:
    assert UNTESTED == [], f"ops with a NetBuilder method but no harness cases: {UNTESTED}"


@pytest.mark.parametrize(("op", "dtype", "index"), ITEMS, ids=[f"{o}-{d}-{k}" for o, d, k in ITEMS])
def test_x86_matches_numpy(op: str, dtype: str, index: int) -> None:
    op_harness.run_x86(op, dtype, index)


CUDA_ITEMS = sorted({(o, d) for o, d, _ in ITEMS if REGISTRY[o].test.cuda})  # type: ignore[union-attr]


@pytest.mark.skipif(not nvrtc_available(), reason="NVRTC (cuda-bindings) is not installed")
@pytest.mark.parametrize(("op", "dtype"), CUDA_ITEMS, ids=[f"{o}-{d}" for o, d in CUDA_ITEMS])
def test_cuda_compiles(op: str, dtype: str) -> None:
    assert op_harness.compile_cuda(op, dtype, op_harness.cuda_case(op, dtype)) >= 1


FULL = os.environ.get("CINN_OP_HARNESS_FULL") == "1"
# bfloat16 (storage) ops whose kernels compute or accumulate in float32: emulated in CI too
BF16_EMULATED = {"reduce_sum", "reduce_mean", "reduce_max", "matmul", "softmax", "layer_norm",
                 "rms_norm", "cast",
                 "select", "greater_than", "cumsum", "exp"}
EMULATED_ITEMS = [(o, d) for o, d in CUDA_ITEMS  # type: ignore[union-attr]
                  if FULL or d == REGISTRY[o].test.dtypes[0] or (d == "bfloat16" and o in BF16_EMULATED)]


@pytest.mark.cuda_emulated
@pytest.mark.parametrize(("op", "dtype"), EMULATED_ITEMS, ids=[f"{o}-{d}" for o, d in EMULATED_ITEMS])
def test_cuda_emulated_matches_numpy(op: str, dtype: str) -> None:
    op_harness.run_cuda_emulated(op, dtype, op_harness.cuda_case(op, dtype))
