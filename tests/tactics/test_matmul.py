"""The x86 matmul tactic: recognition, differential runs against numpy on shapes that are not
multiples of the tile (and symbolic ones), transposed and batched operands, the fused epilogue,
and what the generated code must contain (FMAs on zmm/ymm registers, accumulators kept in
registers across the k loop)."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import cinn_py as cp
from cinn_py.ir import For, LoweredFunc, walk
from schedules.tactics import auto_schedule
from cinn_py.target import host
from schedules.tactics.matmul import MatmulParams, match_matmul


def matmul_func(m: Any, n: Any, k: Any, ta: bool = False, tb: bool = False, batch: int = 0,
                b_batched: bool = True, epilogue: str = "", dtype: str = "float32") -> LoweredFunc:
    pre = (batch,) if batch else ()
    A = cp.placeholder(pre + ((k, m) if ta else (m, k)), dtype, "A")
    bpre = pre if b_batched else ()
    B = cp.placeholder(bpre + ((n, k) if tb else (k, n)), dtype, "B")
    r = cp.reduce_axis(k, "r")

    def body(*idx: Any) -> Any:
        b, i, j = idx[:-2], idx[-2], idx[-1]
        a = A[b + ((r, i) if ta else (i, r))]
        bb = b if b_batched else ()
        y = B[bb + ((j, r) if tb else (r, j))]
        return cp.reduce_sum(a * y, r)

    C = cp.compute(pre + (m, n), body, "C")
    args: list[Any] = [A, B]
    if not epilogue:
        return cp.lower("mm", args + [C])
    bias = cp.placeholder((n,), dtype, "bias")
    T = cp.compute(pre + (m, n), lambda *ix: C[ix] + bias[ix[-1]], "T")
    if epilogue == "relu":
        D = cp.compute(pre + (m, n), lambda *ix: cp.maximum(T[ix], 0.0), "D")
    else:  # gelu (tanh form)
        D = cp.compute(pre + (m, n), lambda *ix: T[ix] * 0.5
                       * (1.0 + cp.tanh(0.7978845608 * (T[ix] + 0.044715 * T[ix] * T[ix] * T[ix]))), "D")
    return cp.lower("mm_epi", args + [bias, D])


def reference(ins: list[np.ndarray], ta: bool, tb: bool, epilogue: str) -> np.ndarray:
    a, b = ins[0].astype(np.float64), ins[1].astype(np.float64)
    a = np.swapaxes(a, -1, -2) if ta else a
    b = np.swapaxes(b, -1, -2) if tb else b
    c = a @ b
    if epilogue:
        t = c + ins[2]
        c = (np.maximum(t, 0) if epilogue == "relu" else 0.5 * t
             * (1 + np.tanh(0.7978845608 * (t + 0.044715 * t**3))))
    return c


def run(fn: LoweredFunc, shapes: list[tuple[int, ...]], ta: bool = False, tb: bool = False,
        epilogue: str = "",
        params: MatmulParams | None = None) -> Any:
    sch = auto_schedule(fn, "x86", matmul=params)
    assert sch.auto_report.strategy == "x86-matmul", sch.auto_report
    rng = np.random.default_rng(0)
    ins = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    got = cp.build(sch, target="x86")(*ins)
    np.testing.assert_allclose(got, reference(ins, ta, tb, epilogue), rtol=1e-4, atol=1e-4)
    return sch


@pytest.mark.parametrize("m,n,k",
                         [(1, 1, 1), (7, 7, 7), (33, 100, 7), (100, 33, 65), (64, 64, 64), (1, 100, 33)])
def test_matmul_matches_numpy_on_odd_shapes(m: int, n: int, k: int) -> None:
    run(matmul_func(m, n, k), [(m, k), (k, n)])


@pytest.mark.parametrize("ta,tb", [(True, False), (False, True), (True, True)])
def test_transposed_operands(ta: bool, tb: bool) -> None:
    m, n, k = 33, 40, 17
    fn = matmul_func(m, n, k, ta=ta, tb=tb)
    info = match_matmul(fn)
    assert info is not None and (info.a_transposed, info.b_transposed) == (ta, tb)
    run(fn, [(k, m) if ta else (m, k), (n, k) if tb else (k, n)], ta, tb)


@pytest.mark.parametrize("b_batched", [True, False])
def test_batched(b_batched: bool) -> None:
    fn = matmul_func(20, 36, 9, batch=3, b_batched=b_batched)
    sch = run(fn, [(3, 20, 9), (3, 9, 36) if b_batched else (9, 36)])
    outer = next(n for n in walk(sch.func.body) if isinstance(n, For))
    assert outer.for_type.value == "parallel" and outer.loop_var.name == "i"  # the batch loop


def test_symbolic_shapes() -> None:
    M, N, K = cp.sym("M"), cp.sym("N"), cp.sym("K")
    kern = cp.build(auto_schedule(matmul_func(M, N, K), "x86"), target="x86")
    rng = np.random.default_rng(1)
    for m, n, k in [(1, 1, 1), (7, 33, 100), (100, 7, 33), (40, 64, 300)]:
        a, b = rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)
        np.testing.assert_allclose(kern(a, b), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("epilogue", ["relu", "gelu"])
def test_epilogue_fused_on_the_output_panel(epilogue: str) -> None:
    m, n, k = 50, 70, 40
    sch = run(matmul_func(m, n, k, epilogue=epilogue), [(m, k), (k, n), (n,)], epilogue=epilogue)
    notes = " ".join(sch.auto_report.notes)
    assert "epilogue 'D' fused" in notes and "'C' kept in a task-private panel buffer" in notes
    # one parallel loop holds the matmul and its epilogue: no second pass over C
    parallel = [n for n in walk(sch.func.body) if isinstance(n, For) and n.for_type.value == "parallel"]
    assert len(parallel) == 1
    assert "D" in cp.print_ir(parallel[0]) and "C__reduce_init" in cp.print_ir(parallel[0])


@pytest.mark.parametrize("params", [MatmulParams(mr=4, nv=3, lanes=8, kc=16, pack_b=False),
                                    MatmulParams(mr=6, nv=1, lanes=16, kc=7, parallel="none")])
def test_other_tile_parameters(params: MatmulParams) -> None:
    run(matmul_func(37, 50, 45, epilogue="relu"), [(37, 45), (45, 50), (50,)], epilogue="relu", params=params)


def test_not_a_matmul_is_left_to_the_generic_tactics() -> None:
    X = cp.placeholder((16, 32), "float32", "X")
    k = cp.reduce_axis(32, "k")
    S = cp.compute((16,), lambda i: cp.reduce_sum(X[i, k] * X[i, k], k), "S")
    fn = cp.lower("sumsq", [X, S])
    assert match_matmul(fn) is None
    strategy = auto_schedule(fn, "x86").auto_report.strategy
    assert strategy.startswith("x86-") and strategy != "x86-matmul"


def test_micro_kernel_keeps_the_accumulator_tile_in_registers() -> None:
    import codegen.llvm as cl

    bits = host().cpu.vector_bits
    reg = "zmm" if bits == 512 else "ymm"
    sch = auto_schedule(matmul_func(256, 256, 256), "x86")
    asm = cl.generate_x86(sch.func).asm
    fmas = re.findall(rf"vfmadd\w+\s+[^\n]*%{reg}", asm)
    assert len(fmas) >= 16  # the 8 x 2 (AVX-512) or 6 x 2 (AVX2) tile, per unrolled k step
    # the innermost loop (the k loop holding the FMAs) neither loads nor stores the accumulators:
    # its only memory operands are the B panel loads and the A broadcasts
    loop = _loop_with_most(asm, "vfmadd")
    stores = [ln for ln in loop if re.match(rf"\s*vmov\w+\s+%{reg}\d+, ", ln)]
    assert not stores, stores
    assert not any("vmulps" in ln or "vaddps" in ln for ln in loop)


def _loop_with_most(asm: str, needle: str) -> list[str]:
    """The lines of the basic block (from a label or jump to the next) with the most lines
    containing `needle`."""
    blocks: list[list[str]] = [[]]
    for line in asm.splitlines():
        if re.match(r"^\.?\w+:", line):
            blocks.append([])
        blocks[-1].append(line)
        if re.match(r"\s+j\w+\s", line):
            blocks.append([])
    return max(blocks, key=lambda b: sum(needle in ln for ln in b))


def test_net_builder_matmul_bias_relu_is_one_matmul_group() -> None:
    from cinn_py.frontend.fusion import fuse
    from cinn_py.frontend.graph_passes import optimize
    from cinn_py.frontend.net_builder import NetBuilder
    from cinn_py.lowering.group import lower_group

    nb = NetBuilder("linear")
    x = nb.create_input("float32", ["S0", 40], "X")
    w = nb.create_input("float32", [40, 24], "W")
    b = nb.create_input("float32", [24], "B")
    nb.relu(nb.add(nb.matmul(x, w), b))
    program = nb.build()
    (group,) = fuse(optimize(program)).groups
    sch = auto_schedule(lower_group(group), "x86")
    assert sch.auto_report.strategy == "x86-matmul"
    assert any("fused on the output panel" in n for n in sch.auto_report.notes), sch.auto_report.notes
    kern = cp.build(sch, target="x86")
    rng = np.random.default_rng(2)
    for rows in (1, 9, 70):
        args = [rng.standard_normal((rows, 40), dtype=np.float32),
                rng.standard_normal((40, 24), dtype=np.float32),
                rng.standard_normal(24, dtype=np.float32)]
        np.testing.assert_allclose(kern(*args), program.run_numpy(*args), rtol=1e-4, atol=1e-4)


def test_tile_sizes_prefer_divisors_of_static_sizes() -> None:
    from schedules.tactics.matmul import default_matmul_params, fit_params

    info = match_matmul(matmul_func(100, 96, 1000))
    assert info is not None
    p = fit_params(info, MatmulParams(mr=8, nv=2, lanes=16, kc=256))
    assert (p.mr, p.nv, p.kc) == (5, 2, 250)  # no tail guard inside the register tile
    odd = match_matmul(matmul_func(33, 80, 37))
    assert odd is not None
    q = fit_params(odd, MatmulParams(mr=8, nv=2, lanes=16, kc=256))
    assert (q.mr, q.nv, q.kc) == (8, 1, 37)  # 33 has no divisor in [4, 8]; 80 = 5 x 16
    assert default_matmul_params(odd).mr in (8, 6)
    run(matmul_func(100, 96, 1000), [(100, 1000), (1000, 96)])


@pytest.mark.parametrize("dtype", ["float64", "int32", "int8"])
def test_other_dtypes_match_the_unscheduled_function(dtype: str) -> None:
    m, n, k = 19, 40, 23
    fn = matmul_func(m, n, k, dtype=dtype)
    sch = auto_schedule(fn, "x86")
    assert sch.auto_report.strategy == "x86-matmul"
    rng = np.random.default_rng(3)
    a, b = ((rng.standard_normal(s) * 3).astype(dtype) for s in ((m, k), (k, n)))
    got, want = cp.build(sch, target="x86")(a, b), cp.build(fn, target="x86")(a, b)
    if dtype.startswith("int"):
        np.testing.assert_array_equal(got, want)  # wrapping integer arithmetic, bit for bit
    else:
        np.testing.assert_allclose(got, want, rtol=1e-12)  # FMAs round once instead of twice


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_low_precision_net_builder_linear_takes_the_matmul_tactic(dtype: str) -> None:
    """NetBuilder's fp16/bf16 matmul accumulates in float32 (operands read through a cast): the
    x86 matmul tactic takes it (it fell back to a serial dot product per element, ~26x slower
    than float32 at 256x128x512) and the result matches a float32 reference."""
    import ml_dtypes  # noqa: PLC0415

    from cinn_py.frontend.fusion import plan  # noqa: PLC0415
    from cinn_py.lowering.group import lower_group  # noqa: PLC0415
    from cinn_py.pipeline import compile_program  # noqa: PLC0415

    m, k, n = 37, 19, 53
    nb = cp.NetBuilder("linear")
    a, b, bias = ((nb.create_input(dtype, shape, name) for shape,
                   name in (([m, k], "a"), ([k, n], "b"), ([n], "bias"))))
    nb.relu(nb.add(nb.matmul(a, b), bias))
    program = nb.build()
    report = auto_schedule(lower_group(plan(program).groups[0]), "x86").auto_report
    assert report.strategy == "x86-matmul", report.fallbacks
    npdt = np.float16 if dtype == "float16" else ml_dtypes.bfloat16
    rng = np.random.default_rng(0)
    x, y, z = (rng.standard_normal(s).astype(npdt) for s in ((m, k), (k, n), (n,)))
    got = np.asarray(compile_program(program, "x86", schedule="auto")(x, y, z)).astype(np.float32)
    want = np.maximum(x.astype(np.float32) @ y.astype(np.float32) + z.astype(np.float32), 0)
    tol = 1e-2 if dtype == "float16" else 6e-2
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
