"""The seed walk-through (tests/schedules/test_seed_walkthrough.py) as CUDA C.

Two variants of the scheduled seed: with `C_rf` and `C` in registers (`set_buffer(.., "local")`:
each thread keeps one partial sum per iteration of the serial `sp_5` loop, privatised to
`float C_rf_temp_buffer[1]`), and with both left in global memory (host-allocated temp spaces
appended to the kernel arguments). Both are golden CUDA C, compile with NVRTC, and launch on a GPU
(`cuda` marker) matching numpy for several bindings of the symbolic S1, S2.
"""

from __future__ import annotations

import numpy as np
import pytest

import cinn_py as cp
from cinn_py.ir import For, LoweredFunc, reset_name_ids
from codegen.cuda import generate_cuda
from schedules.analysis.loops import enclosing_loops, find_block
from schedules.primitives.align import align_iter_space
from schedules.primitives.compute_at import simple_compute_at
from schedules.primitives.compute_inline import compute_inline
from schedules.primitives.for_type import bind
from schedules.primitives.reduction import factorize_reduction
from schedules.primitives.split import split
from schedules.primitives.storage import set_buffer
from cinn_py.tools.demo import seed_program as seed_func, seed_reference
from tests.codegen.cuda.test_cuda_codegen import kernel_text

SHAPES = [(1, 1), (3, 5), (4, 7)]
_SP = "((((sp_5 * 512ll) + ((int)blockIdx.x * 32ll)) + (int)threadIdx.y) < (S1 * S2))"
_X = ("((((sp_5 * 524288ll) + ((int)blockIdx.x * 32768ll)) + ((int)threadIdx.y * 1024ll)) + "
      "((int)threadIdx.x * 32ll))")


def _loops(f: LoweredFunc, name: str) -> list[For]:
    return enclosing_loops(f, find_block(f, name))


def schedule_seed(f: LoweredFunc) -> LoweredFunc:
    """The schedule of tests/schedules/test_seed_walkthrough.py and docs/tutorial.md."""
    f = align_iter_space(f)
    for name in "ABCDEF":
        f, _ = split(f, _loops(f, name)[0], [-1, 16, 32])
        if len(_loops(f, name)) == 4:
            f, _ = split(f, _loops(f, name)[3], [-1, 32])
    for name in "ABDE":
        f = compute_inline(f, find_block(f, name))
    f = bind(f, _loops(f, "C")[3], "threadIdx.x")
    f, _ = factorize_reduction(f, _loops(f, "C")[3], 2)
    f = simple_compute_at(f, find_block(f, "F"), _loops(f, "C")[2])
    f = bind(f, _loops(f, "C")[1], "blockIdx.x")
    f = bind(f, _loops(f, "C")[2], "threadIdx.y")
    return bind(f, _loops(f, "F")[3], "threadIdx.x")


def scheduled_seed(scope: str | None) -> LoweredFunc:
    """The walk-through schedule; `scope` moves C_rf and C to that memory (None: stay global)."""
    reset_name_ids()
    f = schedule_seed(seed_func())
    if scope is not None:
        for name in ("C_rf", "C"):
            f = set_buffer(f, find_block(f, name), scope)
    return f


def test_seed_local_golden(nvrtc_compile) -> None:
    code = generate_cuda(scheduled_seed("local"))
    assert code.source == kernel_text(
        "__global__ void __launch_bounds__(1024) fn(const float* __restrict__ X, float* __restrict__ F, "
        "int64_t S1, int64_t S2)\n"
        "{\n"
        "  float C_temp_buffer[1];\n"
        "  float C_rf_temp_buffer[1];\n"
        "  for (int64_t sp_5 = 0ll; sp_5 < (((S1 * S2) + 511ll) / 512ll); sp_5 += 1) {\n"
        f"    if ({_SP}) {{\n"
        "      C_temp_buffer[0ll] = 0.00000000f;\n"
        "      C_rf_temp_buffer[0ll] = 0.00000000f;\n"
        "      for (int64_t rb_4 = 0ll; rb_4 < 32ll; rb_4 += 1) {\n"
        "        C_rf_temp_buffer[0ll] = (C_rf_temp_buffer[0ll] + "
        f"((X[({_X} + rb_4)] * 2.00000000f) + 1.00000000f));\n"
        "      }\n"
        "      C_temp_buffer[0ll] = cinn_warp_reduce_sum_fp32(C_rf_temp_buffer[0ll]);\n"
        "    }\n"
        f"    if ({_SP}) {{\n"
        "      for (int64_t rb_8 = 0ll; rb_8 < 32ll; rb_8 += 1) {\n"
        f"        F[({_X} + rb_8)] = ((C_temp_buffer[0ll] * 2.00000000f) + 1.00000000f);\n"
        "      }\n"
        "    }\n"
        "  }\n"
        "}\n")
    assert code.temp_spaces == ()
    assert code.launch.launch_dims({"S1": 3, "S2": 5}) == ((16, 1, 1), (32, 32, 1), 0)
    nvrtc_compile(code.source)


def test_seed_global_temporaries(nvrtc_compile) -> None:
    code = generate_cuda(scheduled_seed(None))
    signature = code.source.split("\n")[4]
    assert signature == ("__global__ void __launch_bounds__(1024) fn(const float* __restrict__ X, "
                         "float* __restrict__ F, int64_t S1, int64_t S2, float* __restrict__ C, "
                         "float* __restrict__ C_rf)")
    # Row-major over [S1, S2, 32]: the (sp / S2, sp % S2) pair folds back to sp.
    assert ("C_rf[((((sp_5 * 16384ll) + ((int)blockIdx.x * 1024ll)) + ((int)threadIdx.y * 32ll)) + "
            "(int)threadIdx.x)] = 0.00000000f;") in code.source
    c, c_rf = code.temp_spaces
    assert [(t.name, t.zero_init) for t in code.temp_spaces] == [("C", False), ("C_rf", False)]
    assert c.nbytes({"S1": 3, "S2": 5}) == 3 * 5 * 4 and c_rf.nbytes({"S1": 3, "S2": 5}) == 3 * 5 * 32 * 4
    nvrtc_compile(code.source)


def test_driver_codegen_matches_generate_cuda() -> None:
    f = scheduled_seed("local")
    assert cp.codegen(f, target="cuda").source == generate_cuda(f).source


@pytest.mark.cuda
@pytest.mark.parametrize("scope", ["local", None])
@pytest.mark.parametrize("s1, s2", SHAPES)
def test_seed_launch_matches_numpy(scope: str | None, s1: int, s2: int) -> None:
    kernel = cp.build(scheduled_seed(scope), target="cuda")
    x = np.random.default_rng(s1 * 10 + s2).random((s1, s2, 1024), dtype=np.float32)
    np.testing.assert_allclose(kernel(x), seed_reference(x), rtol=1e-5)
