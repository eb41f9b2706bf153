"""The x86 target passes (`cinn_py.passes.x86_lowering`): run by the pipeline's `target_passes`
step, visible to `CINN_PY_DUMP_IR` and `cinn-py dump-ir`; the LLVM backend only prints their output."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import cinn_py as cp
from cinn_py.cli import main
from cinn_py.diagnostics import CompileError
from cinn_py.interp import run_ir
from cinn_py.ir import (
    FP_CONTRACT_ATTR, NONTEMPORAL_ATTR, ForType, Load, LoweredFunc, MemoryType, ScheduleBlockRealize, Store,
    Var, int32, parse_ir, print_ir, structural_equal, walk,
)
from cinn_py.passes import run_passes
from cinn_py.pipeline import DUMP_ENV, target_passes
from cinn_py.passes.x86_privatize import privatize_x86_buffers
from cinn_py.target import Target
from codegen.llvm import build_lowered, generate_x86
from schedules import IRSchedule
from tests.codegen.llvm.llvm_helpers import func, loop, tensor


def _fma_func() -> LoweredFunc:
    """`D = A * B + C` on [8, 16], its block annotated for FMA contraction and streaming stores."""
    a, b, c = (cp.placeholder((8, 16), "float32", n) for n in "ABC")
    d = cp.compute((8, 16), lambda i, j: a[i, j] * b[i, j] + c[i, j], "D")
    sch = IRSchedule(cp.lower("fma", [a, b, c, d]))
    sch.annotate("D", FP_CONTRACT_ATTR, True)
    sch.annotate("D", NONTEMPORAL_ATTR, True)
    return sch.func


def _blocks(func: LoweredFunc) -> list[ScheduleBlockRealize]:
    return [n for n in walk(func.body) if isinstance(n, ScheduleBlockRealize)]


def _inputs(func: LoweredFunc) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.standard_normal((8, 16)).astype(np.float32) for _ in func.inputs]


def test_the_x86_target_lists_its_passes() -> None:
    assert Target.x86().passes == ("check_x86_loops", "inline_blocks_x86", "privatize_x86_buffers")


def test_inlining_keeps_the_x86_attributes_as_scopes_without_iter_vars() -> None:
    func = _fma_func()
    lowered = target_passes(func, "x86")
    scopes = _blocks(lowered)
    assert [s.name for s in scopes] == ["D"]  # the root and every iter-var binding are gone
    assert scopes[0].iter_values == () and scopes[0].schedule_block.iter_vars == ()
    assert dict(scopes[0].schedule_block.attrs) == {FP_CONTRACT_ATTR: True, NONTEMPORAL_ATTR: True}
    assert "axis.bind" not in print_ir(lowered)
    assert structural_equal(parse_ir(print_ir(lowered, decls=True)), lowered)
    assert structural_equal(target_passes(lowered, "x86"), lowered)  # idempotent
    inputs = _inputs(func)
    want = inputs[0] * inputs[1] + inputs[2]
    np.testing.assert_allclose(run_ir(lowered, dict(zip("ABC", inputs)))["D"], want, rtol=1e-6)
    np.testing.assert_allclose(cp.build(func, "x86")(*inputs), want, rtol=1e-6)


def test_the_printer_applies_the_scope_attributes() -> None:
    code = generate_x86(_fma_func())
    assert "llvm.fmuladd" in code.unoptimized_ir  # fp_contract reached the printer through the scope


def test_the_backend_prints_only_lowered_functions() -> None:
    func = _fma_func()
    with pytest.raises(CompileError, match=r"schedule block 'D' still binds iter vars; run the x86 target "
                                           r"passes first"):
        build_lowered(func)
    kernel = build_lowered(target_passes(func, "x86"))
    inputs = _inputs(func)
    np.testing.assert_allclose(kernel(*inputs), inputs[0] * inputs[1] + inputs[2], rtol=1e-6)


def test_loop_checks_run_in_the_target_passes_step() -> None:
    a = cp.placeholder((8, 16), "float32", "A")
    b = cp.compute((8, 16), lambda i, j: a[i, j] + 1.0, "B")
    sch = IRSchedule(cp.lower("bound", [a, b]))
    _, j = sch.get_loops("B")
    sch.bind(j, "threadIdx.x")
    assert any(n.for_type is ForType.GPU_THREAD for n in walk(sch.func.body) if hasattr(n, "for_type"))
    with pytest.raises(CompileError, match=r"loop 'j' is bound to threadIdx.x; GPU-bound loops cannot be "
                                           r"compiled for x86"):
        run_passes(sch.func, ("check_x86_loops",))
    with pytest.raises(CompileError, match=r"GPU-bound loops"):
        target_passes(sch.func, "x86")


def test_dump_shows_the_x86_lowering(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "dump"
    monkeypatch.setenv(DUMP_ENV, str(out))
    nb = cp.NetBuilder("net")
    x = nb.create_input("float32", [4, 8], "X")
    nb.reduce_sum(nb.relu(x), [1])
    compiled = cp.compile_program(nb.build(), "x86", schedule="auto")
    group = compiled.funcs[0].name
    scheduled = (out / f"04_schedule_{group}.txt").read_text()
    lowered = (out / f"05_target_passes_{group}.txt").read_text()
    assert "axis.bind" in scheduled and "axis.bind" not in lowered
    assert lowered != scheduled
    values = np.random.default_rng(1).standard_normal((4, 8)).astype(np.float32)
    np.testing.assert_allclose(compiled(values), np.maximum(values, 0).sum(axis=1), rtol=1e-5)


def test_dump_ir_diff_shows_the_x86_target_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "twice.py"
    script.write_text('import cinn_py as cp\nX = cp.placeholder((4, 32), "float32", "X")\n'
                      'Y = cp.compute((4, 32), lambda i, j: X[i, j] * 2.0, "Y")\nname = "twice"\n'
                      'args = [X, Y]\n')
    code = main(["dump-ir", str(script), "--target", "x86", "--diff", "schedule", "target_passes"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "-          i0, i1 = axis.bind(i, j)" in out and "+      Y[i, j] = (X[i, j] * 2.00000000f)" in out


def _row_stage() -> LoweredFunc:
    """`E = X * 2` computed at the parallel row loop of `Y = E + 1`, `E` in task-local memory."""
    x = cp.placeholder((8, 32), "float32", "X")
    e = cp.compute((8, 32), lambda i, j: x[i, j] * 2.0, "E")
    y = cp.compute((8, 32), lambda i, j: e[i, j] + 1.0, "Y")
    sch = IRSchedule(cp.lower("rowstage", [x, y]))
    sch.parallel(sch.get_loops("Y")[0])
    sch.compute_at(sch.get_block("E"), sch.get_loops("Y")[0])
    sch.set_buffer(sch.get_block("E"), "local")
    return sch.func


def test_privatisation_is_a_target_pass_the_dump_shows(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    row_stage = _row_stage()
    monkeypatch.setenv(DUMP_ENV, str(tmp_path))
    kernel = cp.build(row_stage, "x86")
    scheduled = (tmp_path / "04_schedule_rowstage.txt").read_text()
    lowered = (tmp_path / "05_target_passes_rowstage.txt").read_text()
    assert "E[i0, i1] = (X[i0, i1] * 2.00000000f)" in scheduled
    # one row per task: the parallel loop var collapsed to 0, the buffer declared [1, 32]
    assert "E[0, ax0] = (X[i, ax0] * 2.00000000f)" in lowered
    assert "Y[i, j] = (E[0, j] + 1.00000000f)" in lowered
    final = kernel.func
    assert "decl buffer _E_temp_buffer : float32[1, 32] local" in print_ir(final, decls=True)
    unoptimized = cp.codegen(row_stage, "x86").unoptimized_ir  # each task's alloca, before mem2reg
    assert "alloca [32 x float]" in unoptimized and "[256 x float]" not in unoptimized
    assert structural_equal(parse_ir(print_ir(final, decls=True)), final)
    assert structural_equal(privatize_x86_buffers(final), final)  # idempotent
    x = np.random.default_rng(2).standard_normal((8, 32)).astype(np.float32)
    np.testing.assert_allclose(kernel(x), x * 2 + 1, rtol=1e-6)


def test_a_buffer_two_parallel_loops_shrink_differently_keeps_its_declaration() -> None:
    """Each task allocates the shape its loop's accesses spell ([1, 32], then [1, 16]); the
    function's declaration, which cannot be both, stays as it was."""
    x, y, z = tensor("X", (8, 32)), tensor("Y", (8, 32)), tensor("Z", (8, 16))
    e = tensor("E", (8, 32), scope=MemoryType.GPU_LOCAL)
    i, j, i2, j2 = (Var(n, int32) for n in ("i", "j", "i2", "j2"))
    first = loop(i, 8, loop(j, 32, Store(e, Load(x, (i, j)) * 2.0, (i, j))),
                 loop(j, 32, Store(y, Load(e, (i, j)) + 1.0, (i, j))), kind=ForType.PARALLEL)
    second = loop(i2, 8, loop(j2, 16, Store(e, Load(x, (i2, j2)) - 1.0, (i2, j2))),
                  loop(j2, 16, Store(z, Load(e, (i2, j2)) * 3.0, (i2, j2))), kind=ForType.PARALLEL)
    lowered = target_passes(func("two", [x], [y, z], first, second, temps=[e.buffer]), "x86")
    shapes = {tuple(int(d.value) for d in n.tensor.buffer.shape) for n in walk(lowered.body)
              if isinstance(n, Store) and n.tensor.buffer.name == e.buffer.name}
    assert shapes == {(1, 32), (1, 16)}
    assert lowered.temp_bufs == (e.buffer,)
    values = np.random.default_rng(3).standard_normal((8, 32)).astype(np.float32)
    got_y, got_z = cp.build(lowered, "x86")(values)
    np.testing.assert_allclose(got_y, values * 2 + 1, rtol=1e-6)
    np.testing.assert_allclose(got_z, (values[:, :16] - 1) * 3, rtol=1e-6)
