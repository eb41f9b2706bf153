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
    FP_CONTRACT_ATTR, NONTEMPORAL_ATTR, ForType, LoweredFunc, ScheduleBlockRealize, parse_ir, print_ir,
    structural_equal, walk,
)
from cinn_py.passes import run_passes
from cinn_py.pipeline import DUMP_ENV, target_passes
from cinn_py.target import Target
from codegen.llvm import build_lowered, generate_x86
from schedules import IRSchedule


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
    assert Target.x86().passes == ("check_x86_loops", "inline_blocks_x86")


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
