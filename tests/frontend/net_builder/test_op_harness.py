"""The differential op harness (cinn_py/tools/op_harness.py): every registered op that declares
test cases (`OpDef.test`) runs compiled for x86 against its numpy reference for each case and
dtype, and its CUDA kernels compile with NVRTC (one case per op and dtype). CI runs every case
of an op's first dtype and a third of the others; CINN_OP_HARNESS_FULL=1 runs them all. The CUDA
kernels of each op's first dtype (and bfloat16 for the float32-accumulating ops) also run in the
CPU emulator against numpy (all dtypes with CINN_OP_HARNESS_FULL=1).

Tiers (the default run has to fit its time budget; `.ci/run` adds the `slow` tier, so CI still runs
every item above): the default run takes every case of an op's first dtype and the last case of
each other dtype on x86; the NVRTC compile of each op's first dtype and of bfloat16 (the storage
dtype whose kernels convert to float32 and back: the likeliest to break); in the emulator every op
that is not elementwise, a few elementwise ops (one per kind of generated code: float math,
integer and bit operations, comparisons, casts, random numbers) and the bfloat16 set. The rest is
marked `slow`: more cases of the same code paths. An elementwise op outside that emulated set runs its
first, last and first symbolic case on x86 in the default run (its other cases vary the operand shapes,
which the shared elementwise lowering handles alike for every op), and its bfloat16 kernel is
NVRTC-compiled in the slow tier (one conversion path for all of them)."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any

import pytest

from cinn_py.frontend.ops import REGISTRY
from cinn_py.frontend.ops.base import OpPatternKind
from cinn_py.tools import op_harness
from cinn_py.tools.fuzz import nvrtc_available

ITEMS = list(op_harness.harness_items(full=os.environ.get("CINN_OP_HARNESS_FULL") == "1"))
# ops without cases: none but those only passes build (they have no NetBuilder method)
UNTESTED = sorted(name for name, op in REGISTRY.items() if op.test is None and op.signature is not None)


# elementwise ops emulated in the default tier: float math (libm-backed and fast intrinsics), integer,
# bit and shift operations, comparisons and NaN tests, casts, selects and the random ops
ELEMENTWISE_EMULATED = {"add", "divide", "exp", "erf", "pow", "atan2", "gelu", "rsqrt", "round", "mod",
                        "floor_divide", "bitwise_xor", "left_shift", "popc", "less_than", "is_nan", "cast",
                        "select", "uniform_random"}
# bfloat16 (storage) ops whose kernels compute or accumulate in float32: emulated in CI too
BF16_EMULATED = {"reduce_sum", "reduce_mean", "reduce_max", "matmul", "softmax", "layer_norm",
                 "rms_norm", "cast",
                 "select", "greater_than", "cumsum", "exp"}


def test_every_op_with_a_method_declares_cases() -> None:
    assert UNTESTED == [], f"ops with a NetBuilder method but no harness cases: {UNTESTED}"


def _last_case(op: str, dtype: str) -> int:
    test = REGISTRY[op].test
    assert test is not None
    return len(test.cases(dtype)) - 1


def _x86_in_default_tier(op: str, dtype: str, index: int) -> bool:
    test = REGISTRY[op].test
    assert test is not None
    if dtype != test.dtypes[0]:
        return index == _last_case(op, dtype)
    if REGISTRY[op].pattern != OpPatternKind.kElementWise or op in ELEMENTWISE_EMULATED:
        return True
    # An elementwise op's cases vary the operands' shapes (broadcasting, symbolic dims), which the
    # shared elementwise lowering handles alike for every op: the ops of ELEMENTWISE_EMULATED (one
    # per kind of generated code) run them all; the others their first, last and first symbolic case.
    return index in (0, _last_case(op, dtype), _first_symbolic_case(op, dtype))


@functools.cache
def _first_symbolic_case(op: str, dtype: str) -> int:
    return op_harness.cuda_case(op, dtype)


def _tiered(items: list[tuple[str, ...]], in_default_tier: Callable[..., bool]) -> list[Any]:
    """`items` as pytest params, those outside the default tier marked `slow`."""
    return [pytest.param(*item, id="-".join(map(str, item)),
                         marks=() if in_default_tier(*item) else pytest.mark.slow)
            for item in items]


@pytest.mark.parametrize(("op", "dtype", "index"), _tiered(ITEMS, _x86_in_default_tier))
def test_x86_matches_numpy(op: str, dtype: str, index: int) -> None:
    op_harness.run_x86(op, dtype, index)


CUDA_ITEMS = sorted({(o, d) for o, d, _ in ITEMS if REGISTRY[o].test.cuda})  # type: ignore[union-attr]


@pytest.mark.skipif(not nvrtc_available(), reason="NVRTC (cuda-bindings) is not installed")
def _nvrtc_in_default_tier(op: str, dtype: str) -> bool:
    test = REGISTRY[op].test
    assert test is not None
    if dtype == test.dtypes[0]:
        return True
    # bfloat16 elementwise kernels share one conversion path (load as float, compute, round back):
    # the emulated ops stand for it; other ops' bfloat16 kernels (reductions, layouts) all compile.
    return dtype == "bfloat16" and (REGISTRY[op].pattern != OpPatternKind.kElementWise
                                    or op in ELEMENTWISE_EMULATED or op in BF16_EMULATED)


@pytest.mark.parametrize(("op", "dtype"), _tiered(CUDA_ITEMS, _nvrtc_in_default_tier))
def test_cuda_compiles(op: str, dtype: str) -> None:
    assert op_harness.compile_cuda(op, dtype, op_harness.cuda_case(op, dtype)) >= 1


FULL = os.environ.get("CINN_OP_HARNESS_FULL") == "1"
EMULATED_ITEMS = [(o, d) for o, d in CUDA_ITEMS  # type: ignore[union-attr]
                  if FULL or d == REGISTRY[o].test.dtypes[0] or (d == "bfloat16" and o in BF16_EMULATED)]


def _emulated_in_default_tier(op: str, dtype: str) -> bool:
    return (REGISTRY[op].pattern != OpPatternKind.kElementWise or op in ELEMENTWISE_EMULATED
            or (dtype == "bfloat16" and op in BF16_EMULATED))


@pytest.mark.cuda_emulated
@pytest.mark.parametrize(("op", "dtype"), _tiered(EMULATED_ITEMS, _emulated_in_default_tier))
def test_cuda_emulated_matches_numpy(op: str, dtype: str) -> None:
    op_harness.run_cuda_emulated(op, dtype, op_harness.cuda_case(op, dtype))
