"""CUDA C golden text for scheduled kernels; every source also compiles with NVRTC."""

from __future__ import annotations

import pytest

import cinn_py as cp
from codegen.cuda import generate_cuda
from schedules import IRSchedule
from tests.codegen.cuda.gpu_programs import drop_reduce_init, symbolic_with_temp

HEADER = '#include "cinn_cuda_runtime.cuh"\n\nextern "C" {\n\n'
FOOTER = "\n}\n"


def elementwise(n: int = 1000) -> IRSchedule:
    A = cp.placeholder((n,), "float32", "A")
    B = cp.compute((n,), lambda i: cp.exp(A[i]) * 2.0, "B")
    s = IRSchedule(cp.lower("fn", [A, B]))
    outer, inner = s.split(s.get_loops("B")[0], [-1, 256])
    s.bind(outer, "blockIdx.x")
    s.bind(inner, "threadIdx.x")
    return s


def row_reduce(r: int, dtype: str = "float32", fn=cp.reduce_sum, split: int | None = None) -> IRSchedule:
    A = cp.placeholder((32, r), dtype, "A")
    k = cp.reduce_axis(r, "k")
    B = cp.compute((32,), lambda i: fn(A[i, k], k), "B")
    s = IRSchedule(cp.lower("fn", [A, B]))
    loops = s.get_loops("B")
    s.bind(loops[0], "blockIdx.x")
    if split is None:
        s.bind(loops[1], "threadIdx.x")
    else:
        _, inner = s.split(loops[1], [-1, split])
        s.bind(inner, "threadIdx.x")
    return s


def shared_transpose() -> IRSchedule:
    A = cp.placeholder((4, 256), "float32", "A")
    B = cp.compute((4, 256), lambda i, j: A[i, j] * 2.0, "B")
    C = cp.compute((4, 256), lambda i, j: B[i, 255 - j] + 1.0, "C")
    s = IRSchedule(cp.lower("fn", [A, C]))
    for name in ("B", "C"):
        loops = s.get_loops(name)
        s.bind(loops[0], "blockIdx.x")
        s.bind(loops[1], "threadIdx.x")
    s.set_buffer("B", "shared")
    s.sync_threads(s.get_loops("B")[0], after=True)
    return s


def symbolic_fp16() -> IRSchedule:
    S0 = cp.sym("S0")
    X = cp.placeholder((S0, 64), "float16", "X")
    Y = cp.compute((S0, 64), lambda i, j: cp.exp(X[i, j]) * 2.0, "Y")
    s = IRSchedule(cp.lower("sym", [X, Y]))
    fused = s.fuse(s.get_loops("Y"))
    outer, inner = s.split(fused, [-1, 256])
    s.bind(outer, "blockIdx.x")
    s.bind(inner, "threadIdx.x")
    return s


def vectorized(n: int = 4096, width: int = 4, dtype: str = "float32") -> IRSchedule:
    A = cp.placeholder((n,), dtype, "A")
    B = cp.compute((n,), lambda i: A[i] * 2.0, "B")
    s = IRSchedule(cp.lower("v", [A, B]))
    b, t, v = s.split(s.get_loops("B")[0], [-1, 256, width])
    s.bind(b, "blockIdx.x")
    s.bind(t, "threadIdx.x")
    s.vectorize(v, width)
    return s


def kernel_text(body: str) -> str:
    return HEADER + body + FOOTER


def test_elementwise_split_bind_golden(nvrtc_compile) -> None:
    code = generate_cuda(elementwise().func)
    assert code.source == kernel_text(
        "__global__ void __launch_bounds__(256) fn(const float* __restrict__ A, float* __restrict__ B)\n"
        "{\n"
        "  if (((((int)blockIdx.x * 256) + (int)threadIdx.x) < 1000)) {\n"
        "    B[(((int)blockIdx.x * 256) + (int)threadIdx.x)] = "
        "(expf(A[(((int)blockIdx.x * 256) + (int)threadIdx.x)]) * 2.00000000f);\n"
        "  }\n"
        "}\n")
    assert code.launch.launch_dims() == ((4, 1, 1), (256, 1, 1), 0)
    nvrtc_compile(code.source)
    assert code.cubin == nvrtc_compile(code.source).cubin


def test_divisible_elementwise_has_no_guard() -> None:
    code = generate_cuda(elementwise(1024).func)
    assert "if (" not in code.source


def test_block_reduce_golden(nvrtc_compile) -> None:
    code = generate_cuda(row_reduce(256).func)
    assert code.source == kernel_text(
        "__global__ void __launch_bounds__(256) fn(const float* __restrict__ A, float* __restrict__ B)\n"
        "{\n"
        "  __shared__ float shm32__fp32_reduce[32];\n"
        "  B[(int)blockIdx.x] = 0.00000000f;\n"
        "  B[(int)blockIdx.x] = cinn_block_reduce_sum_fp32(A[(((int)blockIdx.x * 256) + (int)threadIdx.x)], "
        "shm32__fp32_reduce, false);\n"
        "}\n")
    nvrtc_compile(code.source)


def test_warp_reduce_golden(nvrtc_compile) -> None:
    code = generate_cuda(row_reduce(32).func)
    assert code.source == kernel_text(
        "__global__ void __launch_bounds__(32) fn(const float* __restrict__ A, float* __restrict__ B)\n"
        "{\n"
        "  B[(int)blockIdx.x] = 0.00000000f;\n"
        "  B[(int)blockIdx.x] = cinn_warp_reduce_sum_fp32(A[(((int)blockIdx.x * 32) + (int)threadIdx.x)]);\n"
        "}\n")
    nvrtc_compile(code.source)


def test_serial_outer_reduce_combines_with_old_value(nvrtc_compile) -> None:
    code = generate_cuda(row_reduce(512, split=128).func)
    assert ("  for (int32_t k_0 = 0; k_0 < 4; k_0 += 1) {\n"
            "    float B_old = B[(int)blockIdx.x];\n"
            "    B[(int)blockIdx.x] = (B_old + cinn_block_reduce_sum_fp32(A[((((int)blockIdx.x * 512) + "
            "(k_0 * 128)) + (int)threadIdx.x)], shm32__fp32_reduce, false));\n"
            "  }\n") in code.source
    nvrtc_compile(code.source)


@pytest.mark.parametrize("dtype, fn, helper", [
    ("float16", cp.reduce_max, "cinn_warp_reduce_max_fp16"),
    ("bfloat16", cp.reduce_sum, "cinn_warp_reduce_sum_bf16"),
    ("float64", cp.reduce_min, "cinn_warp_reduce_min_fp64"),
    ("int32", cp.reduce_prod, "cinn_warp_reduce_prod_int32"),
    ("int64", cp.reduce_sum, "cinn_warp_reduce_sum_int64"),
])
def test_reduce_dtypes_compile(nvrtc_compile, dtype: str, fn, helper: str) -> None:
    code = generate_cuda(row_reduce(16, dtype, fn).func)
    assert f"{helper}(" in code.source
    nvrtc_compile(code.source)


def test_block_reduce_fp16_uses_float_scratch(nvrtc_compile) -> None:
    code = generate_cuda(row_reduce(128, "float16", cp.reduce_sum).func)
    assert "__shared__ float shm32__fp16_reduce[32];" in code.source
    assert "cinn_block_reduce_sum_fp16(A[" in code.source
    nvrtc_compile(code.source)


def test_bool_all_any_reduce_compiles(nvrtc_compile) -> None:
    A = cp.placeholder((8, 64), "float32", "A")
    k = cp.reduce_axis(64, "k")
    B = cp.compute((8,), lambda i: cp.reduce_any(A[i, k] > 0.0, k), "B")
    s = IRSchedule(cp.lower("any_fn", [A, B]))
    loops = s.get_loops("B")
    s.bind(loops[0], "blockIdx.x")
    s.bind(loops[1], "threadIdx.x")
    code = generate_cuda(s.func)
    assert "cinn_block_reduce_any_bool((A[" in code.source
    assert "__shared__ int32_t shm32__bool_reduce[32];" in code.source
    nvrtc_compile(code.source)


def test_shared_memory_golden(nvrtc_compile) -> None:
    code = generate_cuda(shared_transpose().func)
    assert code.source == kernel_text(
        "__global__ void __launch_bounds__(256) fn(const float* __restrict__ A, float* __restrict__ C)\n"
        "{\n"
        "  __shared__ float B_temp_buffer[256];\n"
        "  B_temp_buffer[(int)threadIdx.x] = (A[(((int)blockIdx.x * 256) + (int)threadIdx.x)] * "
        "2.00000000f);\n"
        "  __syncthreads();\n"
        "  C[(((int)blockIdx.x * 256) + (int)threadIdx.x)] = (B_temp_buffer[(255 - (int)threadIdx.x)] + "
        "1.00000000f);\n"
        "}\n")
    nvrtc_compile(code.source)


def test_symbolic_shape_fp16_fast_math_golden(nvrtc_compile) -> None:
    code = generate_cuda(symbolic_fp16().func, fast_math=True)
    assert code.source == kernel_text(
        "__global__ void __launch_bounds__(256) sym(const __half* __restrict__ X, __half* __restrict__ Y, "
        "int64_t S0)\n"
        "{\n"
        "  if (((((int)blockIdx.x * 256ll) + (int)threadIdx.x) < (S0 * 64ll))) {\n"
        "    Y[(((int)blockIdx.x * 256ll) + (int)threadIdx.x)] = __float2half((__expf(__half2float("
        "X[(((int)blockIdx.x * 256ll) + (int)threadIdx.x)])) * 2.00000000f));\n"
        "  }\n"
        "}\n")
    assert code.options == ("--use_fast_math",)
    assert [code.launch.launch_dims({"S0": s})[0][0] for s in (1, 4, 5, 100)] == [1, 1, 2, 25]
    nvrtc_compile(code.source, options=code.options)


def test_symbolic_without_fast_math_uses_expf() -> None:
    code = generate_cuda(symbolic_fp16().func)
    assert "expf(__half2float(" in code.source and "__expf" not in code.source


def test_vectorized_float4_golden(nvrtc_compile) -> None:
    code = generate_cuda(vectorized().func)
    assert code.source == kernel_text(
        "__global__ void __launch_bounds__(256) v(const float* __restrict__ A, float* __restrict__ B)\n"
        "{\n"
        "  {\n"
        "    const float4 A_vec0_0 = *reinterpret_cast<const float4*>(&A[(((int)blockIdx.x * 1024) + "
        "((int)threadIdx.x * 4))]);\n"
        "    float4 B_vec0;\n"
        "    B_vec0.x = (A_vec0_0.x * 2.00000000f);\n"
        "    B_vec0.y = (A_vec0_0.y * 2.00000000f);\n"
        "    B_vec0.z = (A_vec0_0.z * 2.00000000f);\n"
        "    B_vec0.w = (A_vec0_0.w * 2.00000000f);\n"
        "    *reinterpret_cast<float4*>(&B[(((int)blockIdx.x * 1024) + ((int)threadIdx.x * 4))]) = B_vec0;\n"
        "  }\n"
        "}\n")
    assert code.vector_alignment == 16
    nvrtc_compile(code.source)


def test_vectorized_half2(nvrtc_compile) -> None:
    code = generate_cuda(vectorized(2048, 2, "float16").func)
    assert "const __half2 A_vec0_0" in code.source and "__half2 B_vec0;" in code.source
    assert code.vector_alignment == 4
    nvrtc_compile(code.source)


def test_unaligned_vectorize_falls_back_to_scalar(nvrtc_compile) -> None:
    A = cp.placeholder((2050,), "float32", "A")
    B = cp.compute((2048,), lambda i: A[i + 1] + A[i + 2], "B")
    s = IRSchedule(cp.lower("v", [A, B]))
    b, t, v = s.split(s.get_loops("B")[0], [-1, 256, 4])
    s.bind(b, "blockIdx.x")
    s.bind(t, "threadIdx.x")
    s.vectorize(v, 4)
    code = generate_cuda(s.func)
    # The store is aligned (float4), the shifted loads are not: they stay scalar, per lane.
    assert "const float4" not in code.source and "float4 B_vec0;" in code.source
    assert "B_vec0.w = (A[((((int)blockIdx.x * 1024) + ((int)threadIdx.x * 4)) + 4)]" in code.source
    nvrtc_compile(code.source)


def test_local_buffer_and_select(nvrtc_compile) -> None:
    A = cp.placeholder((2048,), "float32", "A")
    B = cp.compute((2048,), lambda i: cp.select(A[i] > 0.0, A[i], A[i] * 0.5), "B")
    C = cp.compute((2048,), lambda i: cp.maximum(B[i], 1.0), "C")
    s = IRSchedule(cp.lower("fn", [A, C]))
    for name in ("B", "C"):
        outer, inner = s.split(s.get_loops(name)[0], [-1, 256])
        s.bind(outer, "blockIdx.x")
        s.bind(inner, "threadIdx.x")
    s.set_buffer("B", "local")
    code = generate_cuda(s.func)
    assert "  float B_temp_buffer[1];\n" in code.source
    assert "B_temp_buffer[0] = ((A[" in code.source and " ? " in code.source
    assert "max(B_temp_buffer[0], 1.00000000f)" in code.source
    nvrtc_compile(code.source)


def test_compute_arch_gives_ptx_only() -> None:
    code = generate_cuda(elementwise().func, arch="compute_80")
    assert code.cubin is None and ".target sm_80" in code.ptx


def test_bad_arch_is_value_error() -> None:
    with pytest.raises(ValueError, match="sm_90"):
        generate_cuda(elementwise().func, arch="hopper")


def test_global_temporary_becomes_a_temp_space_argument(nvrtc_compile) -> None:
    A = cp.placeholder((256,), "float32", "A")
    B = cp.compute((256,), lambda i: A[i] * 2.0, "B")
    C = cp.compute((256,), lambda i: B[i] + 1.0, "C")
    s = IRSchedule(cp.lower("fn", [A, C]))
    for name in ("B", "C"):
        s.bind(s.get_loops(name)[0], "threadIdx.x")
    code = generate_cuda(s.func)
    assert code.source == kernel_text(
        "__global__ void __launch_bounds__(256) fn(const float* __restrict__ A, float* __restrict__ C, "
        "float* __restrict__ B)\n"
        "{\n"
        "  B[(int)threadIdx.x] = (A[(int)threadIdx.x] * 2.00000000f);\n"
        "  C[(int)threadIdx.x] = (B[(int)threadIdx.x] + 1.00000000f);\n"
        "}\n")
    (space,) = code.temp_spaces
    assert (space.name, str(space.dtype), space.zero_init, space.nbytes()) == ("B", "float32", False, 1024)
    nvrtc_compile(code.source)


def test_temp_space_read_before_written_is_zero_filled(nvrtc_compile) -> None:
    code = generate_cuda(drop_reduce_init(symbolic_with_temp()))
    assert code.source.startswith(HEADER
                                  + "__global__ void __launch_bounds__(64) fn(const float* __restrict__ A, "
                                  "float* __restrict__ C, int64_t S0, float* __restrict__ B)\n")
    (space,) = code.temp_spaces
    assert space.zero_init and space.nbytes({"S0": 10}) == 40 and space.nbytes({"S0": 0}) == 1
    nvrtc_compile(code.source)
