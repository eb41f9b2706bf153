"""The single-kernel softmax / LayerNorm / RMSNorm schedules of cinn_py.tools.bench_cuda.

Each schedule interprets equal to numpy (run_ir), generates one kernel with its row statistics
in registers (no global temporaries), and compiles with NVRTC; on a GPU it also launches.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import cinn_py as cp
from cinn_py.tools.bench_cuda import layernorm_schedule, rmsnorm_schedule, softmax_schedule
from codegen.cuda import generate_cuda

ROWS, COLS, THREADS = 4, 512, 128


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _layernorm(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5) * w + b


def _rmsnorm(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    return x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-6) * w


CASES: dict[str, tuple[Callable[..., object], Callable[..., np.ndarray], tuple[str, ...]]] = {
    "softmax": (softmax_schedule, _softmax, ("M", "M_rf", "S", "S_rf")),
    "layernorm": (layernorm_schedule, _layernorm, ("Sum", "Sum_rf", "Sq", "Sq_rf")),
    "rmsnorm": (rmsnorm_schedule, _rmsnorm, ("Sq", "Sq_rf")),
}


def _inputs(func, rng: np.random.Generator) -> list[np.ndarray]:
    return [rng.standard_normal(tuple(int(d.value) for d in t.shape)).astype(np.float32) for t in func.inputs]


@pytest.mark.parametrize("name", sorted(CASES))
def test_schedule_matches_numpy_and_compiles(name: str, nvrtc_compile) -> None:
    schedule, reference, registers = CASES[name]
    func = schedule(ROWS, COLS, THREADS).func
    args = _inputs(func, np.random.default_rng(0))
    got = cp.run_ir(func, {t.name: a for t, a in zip(func.inputs, args)})["Y"]
    np.testing.assert_allclose(got, reference(*args), rtol=1e-4, atol=1e-5)
    code = generate_cuda(func, fast_math=True)
    assert code.temp_spaces == () and code.launch.launch_dims() == ((ROWS, 1, 1), (THREADS, 1, 1), 0)
    for reg in registers:
        assert f"  float {reg}_temp_buffer[1];\n" in code.source
    assert code.source.count("cinn_block_reduce_") == len(registers) // 2
    nvrtc_compile(code.source, options=code.options)


@pytest.mark.cuda
@pytest.mark.parametrize("name", sorted(CASES))
def test_schedule_launch_matches_numpy(name: str) -> None:
    schedule, reference, _ = CASES[name]
    func = schedule(64, 1024, 256).func
    args = _inputs(func, np.random.default_rng(1))
    kernel = cp.build(func, target="cuda", fast_math=True)
    np.testing.assert_allclose(kernel(*args), reference(*args), rtol=1e-3, atol=1e-4)
