"""The CUDA emulator: every golden kernel of test_cuda_codegen runs on the CPU (the exact source NVRTC
compiles) and matches the IR interpreter / numpy; warp and block reductions, shared memory with
barriers, symbolic dims, temp spaces, buckets, fp16/bf16, checked builds, auto-scheduled kernels;
a broken barrier is reported as a data race, a divergent barrier as a deadlock."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import cinn_py as cp
from cinn_py.diagnostics import OutOfBoundsAccessError
from cinn_py.ir import LoweredFunc
from codegen.cuda import build_cuda, generate_cuda
from codegen.cuda.emulator import DataRaceError, EmulatedCudaKernel, EmulationError
from codegen.cuda.generate import GeneratedCode
from codegen.cuda.launch import eval_int
from schedules import IRSchedule
from tests.codegen.cuda import test_cuda_codegen as goldens
from tests.codegen.cuda.gpu_programs import drop_reduce_init, symbolic_with_temp

pytestmark = pytest.mark.cuda_emulated


def _inputs(func: LoweredFunc, symbols: dict[str, int], seed: int = 0) -> list[np.ndarray]:
    from cinn_py.runtime.args import storage_dtype  # noqa: PLC0415

    rng = np.random.default_rng(seed)
    arrays = []
    for t in func.inputs:
        shape = tuple(eval_int(d, symbols) for d in t.shape)
        dtype = storage_dtype(t.dtype)
        if t.dtype.kind == "bfloat":
            arrays.append(_bf16(rng.uniform(0.5, 1.5, shape).astype(np.float32)))
        elif dtype.kind == "f":
            arrays.append(rng.uniform(0.5, 1.5, shape).astype(dtype))
        elif dtype.kind == "b":
            arrays.append(rng.random(shape) > 0.5)
        else:
            arrays.append(rng.integers(1, 3, shape).astype(dtype))
    return arrays


def _bf16(x: np.ndarray) -> np.ndarray:
    return (x.view(np.uint32) >> 16).astype(np.uint16)


def _as_float(x: np.ndarray, func: LoweredFunc) -> np.ndarray:
    if func.outputs[0].dtype.kind == "bfloat" and x.dtype == np.uint16:
        return (x.astype(np.uint32) << 16).view(np.float32)
    return x.astype(np.float64)


def _check_against_interpreter(func: LoweredFunc, symbols: dict[str, int] | None = None, rtol: float = 1e-5,
                               **options) -> np.ndarray:
    symbols = symbols or {}
    kernel = build_cuda(func, emulate=True, **options)
    assert isinstance(kernel, EmulatedCudaKernel)
    args = _inputs(func, symbols)
    got = kernel(*args)
    want = cp.run_ir(func, {t.name: a for t, a in zip(func.inputs, args)}, symbols)[func.outputs[0].name]
    np.testing.assert_allclose(_as_float(got, func), _as_float(want, func), rtol=rtol, atol=rtol)
    return got


GOLDENS: dict[str, Callable[[], LoweredFunc]] = {
    "elementwise": lambda: goldens.elementwise().func,
    "block_reduce": lambda: goldens.row_reduce(256).func,
    "warp_reduce": lambda: goldens.row_reduce(32).func,
    "serial_outer_reduce": lambda: goldens.row_reduce(512, split=128).func,
    "warp_reduce_16_lanes_max_fp16": lambda: goldens.row_reduce(16, "float16", cp.reduce_max).func,
    "warp_reduce_bf16": lambda: goldens.row_reduce(16, "bfloat16", cp.reduce_sum).func,
    "warp_reduce_min_fp64": lambda: goldens.row_reduce(16, "float64", cp.reduce_min).func,
    "warp_reduce_prod_int32": lambda: goldens.row_reduce(16, "int32", cp.reduce_prod).func,
    "warp_reduce_int64": lambda: goldens.row_reduce(16, "int64", cp.reduce_sum).func,
    "block_reduce_fp16": lambda: goldens.row_reduce(128, "float16", cp.reduce_sum).func,
    # int64_t is `long long` in the kernel, as under NVRTC (the host's `long` did not convert to
    # the helper's `long long*` scratch parameter: op harness reduce_* int64)
    "block_reduce_int64": lambda: goldens.row_reduce(64, "int64", cp.reduce_max).func,
    "shared_memory": lambda: goldens.shared_transpose().func,
    "vectorized_float4": lambda: goldens.vectorized().func,
    "vectorized_half2": lambda: goldens.vectorized(2048, 2, "float16").func,
}


@pytest.mark.parametrize("name", sorted(GOLDENS))
def test_golden_kernels_match_the_interpreter(name: str) -> None:
    """...and the kernels that use shared memory are free of shared-memory races (ThreadSanitizer)."""
    func = GOLDENS[name]()
    half = any(t.dtype.bits == 16 for t in func.inputs)
    uses_shared = "__shared__" in generate_cuda(func).source
    _check_against_interpreter(func, rtol=1e-2 if half else 1e-5, race_check=uses_shared)


def test_symbolic_fp16_fast_math_at_several_sizes() -> None:
    func = goldens.symbolic_fp16().func
    kernel = build_cuda(func, fast_math=True, emulate=True)
    for rows in (1, 5, 9):
        x = np.random.default_rng(rows).uniform(-1, 1, (rows, 64)).astype(np.float16)
        want = (np.exp(x.astype(np.float32)) * 2).astype(np.float16)
        np.testing.assert_allclose(kernel(x).astype(np.float32), want.astype(np.float32), rtol=2e-3)


def test_bool_any_block_reduce() -> None:
    A = cp.placeholder((8, 64), "float32", "A")
    k = cp.reduce_axis(64, "k")
    B = cp.compute((8,), lambda i: cp.reduce_any(A[i, k] > 0.0, k), "B")
    s = IRSchedule(cp.lower("any_fn", [A, B]))
    loops = s.get_loops("B")
    s.bind(loops[0], "blockIdx.x")
    s.bind(loops[1], "threadIdx.x")
    a = -np.ones((8, 64), np.float32)
    a[3, 17] = a[6, 63] = 1.0
    np.testing.assert_array_equal(build_cuda(s.func, emulate=True)(a), (a > 0).any(axis=1))


def test_temp_spaces_symbolic_and_zero_filled() -> None:
    kernel = build_cuda(symbolic_with_temp(), emulate=True)
    for rows in (1, 3, 70):
        a = np.random.default_rng(rows).standard_normal((rows, 64)).astype(np.float32)
        np.testing.assert_allclose(kernel(a), a.sum(axis=1) * 2, rtol=1e-5, atol=1e-5)
    # Without the init blocks the kernel accumulates into B: it reads the zero-filled temp space.
    uninit = build_cuda(drop_reduce_init(symbolic_with_temp()), emulate=True)
    a = np.random.default_rng(0).standard_normal((5, 64)).astype(np.float32)
    np.testing.assert_allclose(uninit(a), a.sum(axis=1) * 2, rtol=1e-5, atol=1e-5)


def test_out_argument_and_repeat_calls() -> None:
    kernel = build_cuda(goldens.elementwise().func, emulate=True)
    a = np.linspace(-1, 1, 1000, dtype=np.float32)
    out = np.empty(1000, np.float32)
    assert kernel(a, out=out) is out
    np.testing.assert_allclose(out, np.exp(a) * 2, rtol=1e-6)
    np.testing.assert_allclose(kernel(a), out)


def test_checked_build_reports_the_failed_check() -> None:
    from tests.reliability.test_out_of_bounds import _gather  # noqa: PLC0415

    kernel = cp.build(_gather(), "cuda", checked=True, schedule="auto", emulate=True)
    x = np.arange(4, dtype=np.float32)
    with pytest.raises(OutOfBoundsAccessError, match=r"kernel 'gather' \(checked build\).*the index was -3"):
        kernel(x, np.array([0, -3, 1, 0], np.int32))
    np.testing.assert_array_equal(kernel(x, np.array([1, 1, 1, 1], np.int32)), [1, 1, 1, 1])


def test_auto_scheduled_buckets_softmax_rows() -> None:
    S0 = cp.sym("S0")
    X = cp.placeholder((S0, 300), "float32", "X")
    k = cp.reduce_axis(300, "k")
    M = cp.compute((S0,), lambda i: cp.reduce_max(X[i, k], k), "M")
    E = cp.compute((S0, 300), lambda i, j: cp.exp(X[i, j] - M[i]), "E")
    k2 = cp.reduce_axis(300, "k2")
    Z = cp.compute((S0,), lambda i: cp.reduce_sum(E[i, k2], k2), "Z")
    Y = cp.compute((S0, 300), lambda i, j: E[i, j] / Z[i], "Y")
    dispatch = cp.build(cp.lower("softmax", [X, Y]), "cuda", schedule="auto", emulate=True)
    for rows in (1, 7):
        x = np.random.default_rng(rows).standard_normal((rows, 300)).astype(np.float32)
        e = np.exp(x - x.max(axis=1, keepdims=True))
        np.testing.assert_allclose(dispatch(x), e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)


def test_environment_variable_selects_the_emulator(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CINN_PY_CUDA", "emulate")
    assert isinstance(cp.build(goldens.elementwise().func, "cuda"), EmulatedCudaKernel)
    monkeypatch.setenv("CINN_PY_CUDA", "tpu")
    with pytest.raises(ValueError, match="CINN_PY_CUDA='tpu'"):
        cp.build(goldens.elementwise().func, "cuda")


# -- failures the emulator must report ----------------------------------------------------------------
def _broken(code: GeneratedCode, old: str, new: str) -> GeneratedCode:
    assert old in code.source
    return dataclasses.replace(code, source=code.source.replace(old, new))


def test_removed_barrier_is_a_data_race() -> None:
    func = goldens.shared_transpose().func
    code = generate_cuda(func)
    a = np.random.default_rng(0).standard_normal((4, 256)).astype(np.float32)
    np.testing.assert_allclose(EmulatedCudaKernel(code, func, race_check=True)(a), (a * 2)[:, ::-1] + 1)
    broken = EmulatedCudaKernel(_broken(code, "__syncthreads();", ""), func, race_check=True)
    with pytest.raises(DataRaceError, match=r"(?s)data race on shared buffer 'B_temp_buffer'.*"
                                            r"write of 4 bytes at line 8: B_temp_buffer\[.*read of 4 bytes "
                                            r"at line 10"):
        broken(a)


def _reversed_rows_through_global(rows: int, cols: int) -> LoweredFunc:
    """C[i, j] = B[i, cols - 1 - j] + 1 with B = 2 * A a global temporary: one block per row, the
    threads reading what other threads of the block wrote, after a barrier."""
    A = cp.placeholder((rows, cols), "float32", "A")
    B = cp.compute((rows, cols), lambda i, j: A[i, j] * 2.0, "B")
    C = cp.compute((rows, cols), lambda i, j: B[i, cols - 1 - j] + 1.0, "C")
    s = IRSchedule(cp.lower("rev_global", [A, C]))
    for name in ("B", "C"):
        loops = s.get_loops(name)
        s.bind(loops[0], "blockIdx.x")
        s.bind(loops[1], "threadIdx.x")
    s.sync_threads(s.get_loops("B")[0], after=True)
    return s.func


def test_removed_barrier_on_global_memory_is_a_data_race() -> None:
    """The same broken barrier as above with the intermediate in global memory (a temp space)."""
    func = _reversed_rows_through_global(3, 96)
    code = generate_cuda(func)
    assert "__shared__" not in code.source
    a = np.random.default_rng(3).standard_normal((3, 96)).astype(np.float32)
    np.testing.assert_allclose(EmulatedCudaKernel(code, func, race_check=True)(a), (a * 2)[:, ::-1] + 1)
    broken = EmulatedCudaKernel(_broken(code, "__syncthreads();", ""), func, race_check=True)
    race = (r"(?s)data race on global buffer '\w+' at byte offset \d+.*"
            r"write of 4 bytes at line \d+: \w+\[.*read of 4 bytes at line \d+")
    with pytest.raises(DataRaceError, match=race):
        broken(a)


def test_block_uniform_global_stores_are_not_races() -> None:
    """Every thread stores the block-reduced value to B[blockIdx.x] and the next serial step reads
    it back: the generated pattern (same value, the element each thread wrote) passes."""
    func = goldens.row_reduce(256).func
    a = np.random.default_rng(4).standard_normal((32, 256)).astype(np.float32)
    np.testing.assert_allclose(EmulatedCudaKernel(generate_cuda(func), func, race_check=True)(a),
                               a.sum(axis=1),
                               rtol=1e-4, atol=1e-4)


def test_scratch_reused_while_others_read_the_block_reduce_result_is_a_data_race() -> None:
    """Every thread returns `shm[row * 32]` after the block reduce's last barrier; a thread that
    overwrites the scratch right after the call (no barrier) races with the slower readers."""
    func = goldens.row_reduce(256).func
    code = generate_cuda(func)
    a = np.random.default_rng(1).standard_normal((32, 256)).astype(np.float32)
    np.testing.assert_allclose(EmulatedCudaKernel(code, func, race_check=True)(a), a.sum(axis=1), rtol=1e-4,
                               atol=1e-4)
    call = next(line for line in code.source.splitlines() if "cinn_block_reduce_sum_fp32(" in line)
    racy = _broken(code, call, call + "\n  if ((int)threadIdx.x == 0) { shm32__fp32_reduce[0] = 0.0f; }")
    with pytest.raises(DataRaceError, match=r"(?s)shared buffer 'shm32__fp32_reduce'.*"
                                            r"cinn_cuda_runtime.cuh:\d+ \(in a runtime helper called at line "
                                            r"9: .*line 10: if \(\(int\)threadIdx"):
        EmulatedCudaKernel(racy, func, race_check=True)(a)


def test_divergent_barrier_is_a_deadlock() -> None:
    func = goldens.shared_transpose().func
    code = _broken(generate_cuda(func), "__syncthreads();",
                   "if ((int)threadIdx.x < 100) { __syncthreads(); }")
    with pytest.raises(EmulationError,
                       match=r"deadlock in block \(0,0,0\).*100 threads wait at __syncthreads\(\)"
                                             r".*156 exited"):
        EmulatedCudaKernel(code, func)(np.zeros((4, 256), np.float32))


def test_trap_fails_the_launch() -> None:
    func = goldens.elementwise().func
    code = _broken(generate_cuda(func), ")\n{\n",
                   ")\n{\n  if ((int)blockIdx.x == 2 && (int)threadIdx.x == 7) __trap();\n")
    with pytest.raises(EmulationError, match=r"__trap\(\) in thread \(7,0,0\) of block \(2,0,0\)"):
        EmulatedCudaKernel(code, func)(np.zeros(1000, np.float32))


def test_race_check_needs_the_emulator() -> None:
    with pytest.raises(ValueError, match="race_check"):
        build_cuda(goldens.elementwise().func, emulate=False, race_check=True)


def _reversed_rows_through_dynamic_shared() -> LoweredFunc:
    """Rows of symbolic length staged through a symbolic-size (dynamic, `extern __shared__`) buffer."""
    S0 = cp.sym("S0")
    A = cp.placeholder((4, S0), "float32", "A")
    B = cp.compute((4, S0), lambda i, j: A[i, j] * 2.0, "B")
    C = cp.compute((4, S0), lambda i, j: B[i, S0 - 1 - j] + 1.0, "C")
    s = IRSchedule(cp.lower("rev", [A, C]))
    for name in ("B", "C"):
        loops = s.get_loops(name)
        s.bind(loops[0], "blockIdx.x")
        _, inner = s.split(loops[1], [-1, 64])
        s.bind(inner, "threadIdx.x")
    s.set_buffer("B", "shared")
    s.sync_threads(s.get_loops("B")[0], after=True)
    return s.func


def test_dynamic_shared_memory_with_symbolic_size() -> None:
    func = _reversed_rows_through_dynamic_shared()
    kernel = build_cuda(func, emulate=True, race_check=True)
    assert "extern __shared__" in kernel.source
    for n in (1, 64, 100):
        a = np.random.default_rng(n).standard_normal((4, n)).astype(np.float32)
        np.testing.assert_allclose(kernel(a), (a * 2)[:, ::-1] + 1)
        # one float per column of the block's row
        assert kernel.code.launch.launch_dims({"S0": n})[2] >= n * 4
    broken = EmulatedCudaKernel(_broken(kernel.code, "__syncthreads();", ""), func, race_check=True)
    with pytest.raises(DataRaceError, match="data race on shared buffer 'B_temp_buffer'"):
        broken(np.ones((4, 100), np.float32))


def test_materialised_kernels_are_removed_when_the_process_exits(tmp_path: Path) -> None:
    # Each process writes its built kernels to one private folder; it must not outlive the process.
    script = (
        "import numpy as np, cinn_py as cp\n"
        "from codegen.cuda.emulator import compile as emu\n"
        "X = cp.placeholder((4, 8), 'float32', 'X')\n"
        "Y = cp.compute((4, 8), lambda i, j: X[i, j] * 2.0, name='Y')\n"
        "fn = cp.build(cp.lower('twice', [X, Y]), 'cuda', schedule='auto', emulate=True)\n"
        "assert (fn(np.ones((4, 8), np.float32)) == 2).all()\n"
        "print(emu._process_folder())\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False,
                          cwd=Path(__file__).resolve().parents[3])
    assert done.returncode == 0, done.stderr
    folder = Path(done.stdout.strip().splitlines()[-1])
    assert folder.name.startswith("cinn-emu-")
    assert not folder.exists()
