"""The x86 schedule of the fused attention kernels (schedules/tactics/attention.py): every loop
role becomes its loop kind, exp/log go through the vectorised polynomial versions, and the
scheduled kernel computes what the unscheduled one does."""

from __future__ import annotations

import numpy as np
import pytest

from cinn_py import compile_program
from cinn_py.frontend import NetBuilder
from cinn_py.interp import run_ir
from cinn_py.ir import ScheduleBlockRealize, walk
from cinn_py.pipeline import codegen, program_steps
from cinn_py.tools.testing.cuda import run_cuda_emulated
from schedules.tactics import auto_schedule


def _kernel(causal: bool, grad: bool = False) -> tuple:
    nb = NetBuilder("att")
    q = nb.create_input("float32", [1, 2, 20, 16], "Q")
    k = nb.create_input("float32", [1, 2, 40, 16], "K")
    v = nb.create_input("float32", [1, 2, 40, 16], "V")
    packed = nb.flash_attention(q, k, v, causal=causal)
    if grad:
        nb.flash_attention_grad(q, k, v, packed, packed, causal=causal)
    program = nb.build()
    return program, program_steps(program)[1][-1]


def test_roles_become_loop_kinds_and_results_stay() -> None:
    program, func = _kernel(causal=True)
    sch = auto_schedule(func, "x86")
    assert sch.report.strategy == "x86-attention"
    assert sch.report.notes == ["attention kernel: 2 parallel, 4 unrolled, 11 vectorised loops"]
    rng = np.random.default_rng(0)
    ins = [rng.standard_normal([int(d) for d in t.shape]).astype(np.float32) for t in func.inputs]
    named = {t.name: a for t, a in zip(func.inputs, ins)}
    (before,) = run_ir(func, named).values()
    (after,) = run_ir(sch.func, named).values()
    np.testing.assert_allclose(after, before, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(compile_program(program, "x86", schedule="auto")(*ins), before,
                               rtol=1e-5, atol=1e-6)


def test_softmax_exp_is_vectorised_not_a_libm_call() -> None:
    _, func = _kernel(causal=False)
    text = codegen(func, "x86", schedule="auto").text
    assert "@expf" not in text and "llvm.exp." not in text
    assert "<16 x float>" in text


def test_backward_kernel_roles_and_unique_block_names() -> None:
    _, func = _kernel(causal=True, grad=True)
    for kernel in (func, _kernel(causal=False)[1]):  # primitives find blocks by name
        names = [n.schedule_block.name for n in walk(kernel.body) if isinstance(n, ScheduleBlockRealize)]
        assert len(names) == len(set(names)), sorted(names)
    notes = auto_schedule(func, "x86").report.notes
    # 4 prologue nests + main
    assert notes == ["attention kernel: 5 parallel, 10 unrolled, 18 vectorised loops"]


@pytest.mark.cuda_emulated
def test_cuda_schedule_runs_race_free_in_the_emulator() -> None:
    """Heads on threadIdx.x, barriers between the nests: the backward with grouped-query heads,
    a bool mask and partial tiles matches numpy under the emulator's race checks."""
    nb = NetBuilder("att_cuda")
    q = nb.create_input("float32", [1, 4, 9, 8], "Q")
    k = nb.create_input("float32", [1, 2, 11, 8], "K")
    v = nb.create_input("float32", [1, 2, 11, 8], "V")
    mask = nb.create_input("bool", [9, 11], "M")
    packed = nb.flash_attention(q, k, v, mask, causal=True)
    dpacked = nb.create_input("float32", [int(packed.shape[0])], "DP")
    program = nb.build([packed, nb.flash_attention_grad(q, k, v, packed, dpacked, mask, causal=True)])
    rng = np.random.default_rng(1)
    ins = [rng.standard_normal(s).astype(np.float32) for s in ([1, 4, 9, 8], [1, 2, 11, 8], [1, 2, 11, 8])]
    ins += [rng.random((9, 11)) > 0.2, rng.standard_normal(int(packed.shape[0])).astype(np.float32)]
    got = run_cuda_emulated(program, *ins, race_check=True)
    for g, w in zip(got, program.run_numpy(*ins)):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)
    func = program_steps(program)[1][-1]
    assert auto_schedule(func, "cuda").report.strategy == "cuda-attention"
