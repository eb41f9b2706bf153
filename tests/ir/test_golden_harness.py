"""The golden-file machinery itself: mismatches fail, --update-goldens rewrites, errors match."""

from __future__ import annotations

from pathlib import Path

import pytest

from cinn_py import ir
from cinn_py.tools.testing import assert_ir_equal, golden
from cinn_py.ir.text.parser import parse_ir

CASE = """// decl tensor A : float32[4] global
A[0] = 1.00000000f
// CHECK: A[0] = 2.00000000f
// -----
function bad (_A)
{
  A[i] = 0.00000000f
}
// CHECK: error: 3:5: undefined variable 'i'
"""


def test_mismatch_fails_and_update_fixes(tmp_path: Path) -> None:
    path = tmp_path / "t.ir"
    path.write_text(CASE)
    first, second = golden.load_cases(path)
    assert second.first_line == 5 and second.checks[0][0] == 9
    with pytest.raises(golden.GoldenMismatch, match="does not match the CHECK lines"):
        golden.check_case(first)
    golden.check_case(second)
    result = golden.run_case(first)
    golden.update_case(path, 0, result.output, result.is_error)
    assert "// CHECK: A[0] = 1.00000000f\n\n// -----\n" in path.read_text()
    for case in golden.load_cases(path):
        golden.check_case(case)


def test_program_of_ir_file(tmp_path: Path) -> None:
    ir_file = tmp_path / "f.ir"
    ir_file.write_text("function f (_A) "
                       "{ ScheduleBlock(root) { serial for (i, 0, 4) { A[i] = 0.00000000f } } }\n")
    func = golden.program_of_ir_file(ir_file)
    assert ir.print_ir(func).startswith("function f (_A)\n{\n  ScheduleBlock(root)")
    assert ir.print_ir(func, decls=True).startswith("// decl func f(output A)\n")
    built = tmp_path / "g.ir"
    built.write_text("// BUILD: func = ir.LoweredFunc('g', (), ir.Block(()))\n// CHECK: function g\n")
    assert ir.print_ir(golden.program_of_ir_file(built)) == "function g ()\n{\n\n}"


def test_assert_ir_equal_shows_a_diff() -> None:
    a, b = parse_ir("// decl tensor A : float32[4] global\nA[0] = 1.00000000f"), \
        parse_ir("// decl tensor A : float16[4] global\nA[0] = 1.00000000f")
    assert_ir_equal(a, parse_ir(ir.print_ir(a, decls=True)))
    with pytest.raises(AssertionError,
                       match=r"(?s)-// decl tensor A : float32\[4\].*\+// decl tensor A : float16"):
        assert_ir_equal(a, b)
