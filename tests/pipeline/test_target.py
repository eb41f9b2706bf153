"""`cinn_py.Target` and the backend table."""

from __future__ import annotations

import pytest

import cinn_py as cp
from cinn_py.backend import BACKENDS, get_backend
from cinn_py.ir import structural_equal
from cinn_py.options import BuildOptions
from cinn_py.pipeline import target_passes
from cinn_py.target import CpuLimits, GpuLimits, Target


def test_parse_accepts_strings_and_targets() -> None:
    host = Target.parse("x86")
    assert host.kind == "x86" and host.name == "x86" and not host.is_gpu
    assert Target.parse(host) is host and Target.parse("x86") is host  # the host target is cached
    gpu = Target.parse("cuda")
    assert gpu.is_gpu and gpu.arch.startswith("sm_")
    assert cp.Target is Target


@pytest.mark.parametrize("bad", ["arm", "", "X86"])
def test_parse_rejects_unknown_names(bad: str) -> None:
    with pytest.raises(ValueError, match="unknown target"):
        Target.parse(bad)


def test_parse_rejects_other_types() -> None:
    with pytest.raises(TypeError, match="expected a Target"):
        Target.parse(3)  # type: ignore[arg-type]


def test_x86_vector_width_follows_features() -> None:
    avx512 = Target.x86(cpu="skylake-avx512", features=("avx", "avx2", "avx512f"))
    avx2 = Target.x86(cpu="haswell", features=("avx", "avx2"))
    sse = Target.x86(cpu="x86-64", features=("sse2",))
    assert (avx512.cpu.vector_bits, avx2.cpu.vector_bits, sse.cpu.vector_bits) == (512, 256, 128)
    assert avx512.cpu.lanes_for("float32") == 16 and avx2.cpu.lanes_for("float32") == 8
    assert avx2.cpu.lanes_for("float16") == 16 and avx2.cpu.lanes_for(cp.ir.expr.dt.float64) == 4
    assert avx512.has("avx512f") and not avx2.has("avx512f")


def test_host_limits_are_read() -> None:
    host = Target.parse("x86")
    assert isinstance(host.limits, CpuLimits) and host.cpu.cores >= 1
    assert host.passes == ("check_x86_loops", "inline_blocks_x86", "privatize_x86_buffers")
    with pytest.raises(TypeError, match="CPU limits"):
        _ = host.gpu


def test_cuda_limits_per_arch() -> None:
    h100, a100, l4 = Target.cuda("sm_90"), Target.cuda("sm_80"), Target.cuda("sm_89")
    assert isinstance(h100.limits, GpuLimits)
    assert h100.gpu.warp_size == 32 and h100.gpu.max_threads_per_block == 1024
    assert h100.gpu.max_shared_memory_per_block == 48 * 1024
    assert (h100.gpu.max_shared_memory_per_block_optin, a100.gpu.max_shared_memory_per_block_optin,
            l4.gpu.max_shared_memory_per_block_optin) == (227 * 1024, 163 * 1024, 99 * 1024)
    assert l4.gpu.max_threads_per_sm == 1536
    assert h100.passes == ("cross_thread_reduce", "gpu_bind", "simplify_indices")
    with pytest.raises(TypeError, match="GPU limits"):
        _ = h100.cpu


@pytest.mark.parametrize("arch", ["sm90", "90", "ptx_90"])
def test_cuda_rejects_bad_arch(arch: str) -> None:
    with pytest.raises(ValueError, match="arch must look like"):
        Target.cuda(arch)


def test_targets_are_frozen_values() -> None:
    t = Target.cuda("sm_80")
    assert t == Target.cuda("sm_80") and hash(t) == hash(Target.cuda("sm_80")) and t != Target.cuda("sm_90")
    with pytest.raises(AttributeError):
        t.arch = "sm_90"  # type: ignore[misc]


def test_backend_table() -> None:
    assert sorted(BACKENDS) == ["cuda", "x86"]
    for target in ("x86", "cuda", Target.parse("x86"), Target.cuda("sm_80")):
        backend = get_backend(target)
        assert backend.name == Target.parse(target).kind
    with pytest.raises(ValueError, match="no backend"):
        get_backend("arm")


def test_x86_backend_generate_then_load() -> None:
    import numpy as np

    x = cp.placeholder((8,), "float32", "X")
    y = cp.compute((8,), lambda i: x[i] * 3.0, "Y")
    func = cp.lower("triple", [x, y])
    backend = get_backend("x86")
    with pytest.raises(cp.CompileError, match="run the x86 target passes first"):
        backend.generate(func, Target.parse("x86"))  # a backend only prints: the pipeline lowers
    code = backend.generate(target_passes(func, "x86"), Target.parse("x86"))
    assert "define" in code.llvm_ir
    assert structural_equal(code.func, target_passes(func, "x86"))  # what it printed
    kernel = backend.load(code)
    a = np.arange(8, dtype=np.float32)
    np.testing.assert_array_equal(kernel(a), a * 3)


def test_x86_backend_refuses_a_foreign_cpu() -> None:
    x = cp.placeholder((8,), "float32", "X")
    y = cp.compute((8,), lambda i: x[i] + 1.0, "Y")
    foreign = Target.x86(cpu="not-this-cpu", features=())
    with pytest.raises(cp.CompileError, match="host CPU"):
        cp.build(cp.lower("f", [x, y]), foreign)


def test_public_api_takes_a_target() -> None:
    x = cp.placeholder((4, 32), "float32", "X")
    y = cp.compute((4, 32), lambda i, j: x[i, j] * 2.0, "Y")
    func = cp.lower("twice", [x, y])
    code = cp.codegen(func, Target.cuda("sm_80"), schedule="auto")
    assert code.arch == "sm_80" and "__global__" in code.source
    assert code.target == Target.cuda("sm_80") and code.launch.limits is code.target.gpu
    assert cp.codegen(func, "cuda", schedule="auto").arch == Target.parse("cuda").arch


def test_x86_backend_load_keeps_the_bounds_checks_of_a_checked_build() -> None:
    import numpy as np

    from cinn_py.diagnostics import OutOfBoundsAccessError

    X = cp.placeholder((4,), "float32", "X")
    index = cp.placeholder((4,), "int32", "I")
    func = cp.lower("gather", [X, index, cp.compute((4,), lambda i: X[index[i]], "Y")])
    backend = get_backend("x86")
    code = backend.generate(target_passes(func, "x86"), Target.parse("x86"), BuildOptions(checked=True))
    assert code.checks
    kernel = backend.load(code)
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(kernel(x, np.array([3, 2, 1, 0], np.int32)), [3, 2, 1, 0])
    with pytest.raises(OutOfBoundsAccessError, match="the index was 9"):
        kernel(x, np.array([0, 9, 1, 0], np.int32))


def test_the_launch_checks_the_targets_limits() -> None:
    """The launch dims are checked against the Target's GpuLimits, not limits declared again in
    the CUDA backend: a target with smaller blocks rejects what an sm_90 accepts."""
    import dataclasses

    x = cp.placeholder((4, 256), "float32", "X")
    y = cp.compute((4, 256), lambda i, j: x[i, j] * 2.0, "Y")
    func = cp.lower("twice", [x, y])
    code = cp.codegen(func, "cuda", schedule="auto")
    grid, block, _ = code.launch.launch_dims()
    threads = block[0] * block[1] * block[2]
    assert threads > 1
    small = dataclasses.replace(code.target.gpu, max_threads_per_block=threads - 1)
    narrow = dataclasses.replace(code.launch, limits=small)
    with pytest.raises(ValueError, match=f"{threads} threads per block exceed CUDA's limit {threads - 1}"):
        narrow.launch_dims()
    assert code.launch.launch_dims()[0] == grid


def test_compiled_programs_keep_their_target() -> None:
    from cinn_py.runtime.program import CompiledProgram

    nb = cp.NetBuilder("relu")
    nb.relu(nb.create_input("float32", [4, 8], "X"))
    compiled = cp.compile_program(nb.build(), "x86")
    assert compiled.target == Target.parse("x86") and repr(compiled).endswith("1 kernel(s) for x86>")
    assert cp.compile(nb.build(), "x86").target == Target.parse("x86")
    with pytest.raises(TypeError, match=r"CompiledProgram: expected the Target the kernels were built for, "
                                        r"got str 'x86'"):
        CompiledProgram(compiled.program, compiled.plan, compiled.funcs, compiled.kernels, "x86")  # type: ignore[arg-type]


def test_the_torch_bridge_builds_the_target_of_the_tensors_device(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    from cinn_py.torch.graph import device_target

    assert device_target("cpu") == Target.parse("x86")
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (8, 6))
    gpu = device_target("cuda")
    assert gpu == Target.cuda("sm_86") and gpu.gpu.max_shared_memory_per_block_optin == 99 * 1024


def test_gpu_limits_come_from_one_table_by_compute_capability() -> None:
    assert GpuLimits.of("sm_91") == GpuLimits.of("sm_90") == Target.cuda("sm_90a").gpu  # nearest older
    assert GpuLimits.of("sm_50") == GpuLimits()  # older than every listed capability: the defaults
    orin, h100, turing = GpuLimits.of("sm_87"), GpuLimits.of("sm_90"), GpuLimits.of("sm_75")
    assert (orin.max_threads_per_sm, orin.max_blocks_per_sm) == (1536, 16)
    assert orin.shared_memory_per_sm == 164 * 1024
    assert (h100.max_shared_memory_per_block_optin, h100.shared_memory_per_sm) == (227 * 1024, 228 * 1024)
    assert (turing.max_threads_per_sm, turing.reserved_shared_per_block) == (1024, 0)
    with pytest.raises(ValueError, match=r"arch must look like 'sm_90' or 'compute_80', got 'sm90'"):
        GpuLimits.of("sm90")
