"""Lowering pieces both backends use exist once, in `cinn_py/passes` and `cinn_py/runtime`:
schedule-block inlining, buffer resizing, the GeneratedCode/Kernel interface."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

import cinn_py as cp
from cinn_py.backend import GeneratedCode, Kernel, get_backend
from cinn_py.ir import Buffer, IntImm, ScheduleBlock, ScheduleBlockRealize, Stmt, Var, int32, int64, walk
from cinn_py.passes.buffer_resize import resized_to_ranges
from cinn_py.passes.inline_blocks import inline_schedule_blocks
from cinn_py.runtime.kernel import KernelBase
from cinn_py.pipeline import target_passes
from cinn_py.target import Target

ROOT = Path(__file__).resolve().parents[2]


def _func() -> cp.ir.LoweredFunc:
    X = cp.placeholder((4, 32), "float32", "X")
    return cp.lower("twice", [X, cp.compute((4, 32), lambda i, j: X[i, j] * 2.0, "Y")])


def test_one_definition_of_block_inlining() -> None:
    defined = []
    for pkg in ("cinn_py", "schedules", "codegen"):
        for path in (ROOT / pkg).rglob("*.py"):
            tree = ast.parse(path.read_text())
            names = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
            if names & {"inline_schedule_blocks", "_BlockInliner"}:
                defined.append(path.relative_to(ROOT).as_posix())
    assert defined == ["cinn_py/passes/inline_blocks.py"]


def test_inline_schedule_blocks_substitutes_and_rewrites_inner_blocks_first() -> None:
    func = _func()
    seen: list[str] = []

    def rewrite(block: ScheduleBlock, body: Stmt) -> Stmt:
        # inner blocks already inlined
        assert not any(isinstance(n, ScheduleBlockRealize) for n in walk(body))
        seen.append(block.name)
        return body

    body = inline_schedule_blocks(func.body, rewrite)
    assert not any(isinstance(n, ScheduleBlockRealize) for n in walk(body))
    assert seen == ["Y", "root"]
    assert "Y[i, j] = (X[i, j] * 2.00000000f)" in cp.print_ir(body)


def test_resized_to_ranges() -> None:
    n = Var("N", int64)
    buf = Buffer("B", (IntImm(int32, 8), n, IntImm(int32, 4)), cp.ir.float32)
    out = resized_to_ranges(buf, [(0, 2), (0, 15), None])
    assert [str(d) for d in out.shape] == ["3", "16", "4"]
    assert resized_to_ranges(buf, [(0, 9), (-1, 3), (0, 3)]) is buf  # never grows; below 0 keeps the dim


@pytest.mark.parametrize("target", ["x86", "cuda"])
def test_generated_code_follows_the_protocol(target: str) -> None:
    tgt = Target.parse(target) if target == "x86" else Target.cuda("sm_80")
    func = _func() if target == "x86" else cp.auto_schedule(_func(), "cuda").func
    code = get_backend(tgt).generate(target_passes(func, tgt), tgt)
    assert isinstance(code, GeneratedCode)
    assert code.text == (code.llvm_ir if target == "x86" else code.source)
    assert code.checks is None


def test_x86_kernel_shares_the_kernel_base() -> None:
    kernel = cp.build(_func(), "x86")
    assert isinstance(kernel, KernelBase) and isinstance(kernel, Kernel)
    x = np.ones((4, 32), np.float32)
    np.testing.assert_array_equal(kernel(x), x * 2)
