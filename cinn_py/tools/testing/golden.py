"""Golden `.ir` test cases: load, run, check with FileCheck, rewrite expectations.

A golden file holds one or more cases separated by `// -----` lines. A case has

- an input: either `// BUILD:` lines (Python run with `cp` = cinn_py, `np` = numpy, `ir` =
  cinn_py.ir in scope; it must assign `func`, e.g. `func = cp.lower("fn", [X, Y])`) or IR text
  (every line that is not a `//` comment, plus `// decl` header lines);
- optional `// SCHEDULE:` lines, run with `sch = cinn_py.IRSchedule(func)` (and `func`, `cp`,
  `np`) in scope; the case's output is then `sch.func`;
- optional `// RUN-NUMPY:` lines, run with the final `func`, `run_ir`, `np` in scope (they make
  their own numpy asserts);
- a case with BUILD lines is also compiled for x86 and compared with the interpreter on random
  inputs (unless it uses GPU-only constructs);
- `// CHECK...` lines (LLVM FileCheck syntax, checked with the `filecheck` package in-process)
  matched against the output: the printed IR, or `error: <message>` when building, parsing or
  scheduling raised a CinnError.

Every IR a case sees (the input and the scheduled output) is also round-tripped through
`print_ir(decls=True)` / `parse_ir` and must come back structurally equal and print the same.

`program_of_ir_file(path)` (used by `cinn-py dump-ir`) returns the input IR of a `.ir` file.
"""

from __future__ import annotations

import importlib
import io
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cinn_py.diagnostics import CinnError

SEPARATOR = re.compile(r"^\s*//\s*-----\s*$")
_DIRECTIVE = re.compile(r"^\s*//\s*(BUILD|SCHEDULE|RUN-NUMPY):\s?(.*)$")
_CHECK = re.compile(r"^\s*//\s*CHECK(-[A-Z]+)?:")


class GoldenSkip(Exception):
    """The case cannot run in this checkout (e.g. `schedules` is not importable yet)."""


class GoldenMismatch(AssertionError):
    """The output does not match the CHECK lines (the message has FileCheck's report)."""


@dataclass
class GoldenCase:
    """One case of a golden file; `first_line` is the 1-based file line where it starts."""

    path: Path
    index: int
    first_line: int
    lines: list[str]
    build: list[str] = field(default_factory=list)
    schedule: list[str] = field(default_factory=list)
    run_numpy: list[str] = field(default_factory=list)
    ir_lines: list[str] = field(default_factory=list)
    checks: list[tuple[int, str]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"case{self.index}@L{self.first_line}"

    @property
    def ir_text(self) -> str:
        return "\n".join(self.ir_lines).strip("\n")


@dataclass
class CaseResult:
    """What running a case produced: the text CHECK lines see and every IR node it saw."""

    output: str
    is_error: bool
    nodes: list[Any]


def is_golden_file(path: Path) -> bool:
    """A `.ir` file is a golden case file when it has a CHECK or BUILD line."""
    text = path.read_text(encoding="utf-8")
    return any(_CHECK.match(line) or line.lstrip().startswith("// BUILD:") for line in text.splitlines())


def split_cases(text: str) -> list[tuple[int, list[str]]]:
    """(first line number, lines) of each `// -----`-separated case."""
    cases: list[tuple[int, list[str]]] = []
    start, current = 1, []
    for number, line in enumerate(text.split("\n"), start=1):
        if SEPARATOR.match(line):
            cases.append((start, current))
            start, current = number + 1, []
        else:
            current.append(line)
    cases.append((start, current))
    return cases


def load_cases(path: Path | str) -> list[GoldenCase]:
    """Parse a golden file into its cases."""
    path = Path(path)
    cases = []
    for index, (first, lines) in enumerate(split_cases(path.read_text(encoding="utf-8"))):
        case = GoldenCase(path, index, first, lines)
        for offset, line in enumerate(lines):
            directive = _DIRECTIVE.match(line)
            if directive:
                target = {"BUILD": case.build, "SCHEDULE": case.schedule, "RUN-NUMPY": case.run_numpy}
                target[directive.group(1)].append(directive.group(2))
            elif _CHECK.match(line):
                case.checks.append((first + offset, line))
            elif not line.lstrip().startswith("//") or re.match(r"^\s*//\s*decl\b", line):
                case.ir_lines.append(line)
        cases.append(case)
    return cases


# --------------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------------
def _namespace(**extra: Any) -> dict[str, Any]:
    import numpy as np

    import cinn_py

    # Golden `.py` cases spell IR nodes `ir.For(...)`: they get the facade module as `ir`.
    return {"cp": cinn_py, "np": np, "ir": importlib.import_module("cinn_py.ir"), **extra}


def _build(case: GoldenCase) -> Any:
    from cinn_py.ir import LoweredFunc, Module
    from cinn_py.ir import parse_ir

    if case.build:
        scope = _namespace()
        exec(compile("\n".join(case.build), f"{case.path}:{case.name}:BUILD", "exec"), scope)  # noqa: S102
        func = scope.get("func")
        if not isinstance(func, (LoweredFunc, Module)):
            raise TypeError(f"{case.path}: the BUILD snippet must assign `func` (a LoweredFunc), "
                            f"got {type(func).__name__}")
        return func
    if not case.ir_text.strip():
        raise ValueError(f"{case.path}:{case.first_line}: the case has neither BUILD lines nor IR text")
    return parse_ir(case.ir_text)


def _schedule(case: GoldenCase, func: Any) -> Any:
    import cinn_py

    try:
        schedule_cls = getattr(cinn_py, "IRSchedule")
    except ImportError as exc:  # the schedules package is not there yet
        raise GoldenSkip(f"SCHEDULE needs cinn_py.IRSchedule, which is not importable: {exc}") from exc
    sch = schedule_cls(func)
    scope = _namespace(sch=sch, func=func)
    exec(compile("\n".join(case.schedule), f"{case.path}:{case.name}:SCHEDULE", "exec"), scope)  # noqa: S102
    return sch.func


def _run_numpy(case: GoldenCase, func: Any) -> None:
    try:
        from cinn_py.interp import run_ir
    except ImportError as exc:
        raise GoldenSkip(f"RUN-NUMPY needs cinn_py.interp.run_ir, which is not importable: {exc}") from exc
    scope = _namespace(func=func, run_ir=run_ir)
    exec(compile("\n".join(case.run_numpy), f"{case.path}:{case.name}:RUN-NUMPY", "exec"), scope)  # noqa: S102


def assert_roundtrip(node: Any, where: str = "") -> None:
    """`node` must survive print_ir(decls=True) -> parse_ir structurally and print the same."""
    from cinn_py.ir import structural_equal
    from cinn_py.ir import parse_ir
    from cinn_py.ir import print_ir

    text = print_ir(node, decls=True)
    back = parse_ir(text)
    if not structural_equal(back, node) or print_ir(back, decls=True) != text:
        from cinn_py.tools.testing.asserts import ir_diff

        raise AssertionError(f"{where}IR does not round-trip through print(decls=True)/parse:\n"
                             + ir_diff(node, back))


def run_case(case: GoldenCase) -> CaseResult:
    """Build (or parse) the input, schedule it, and print the result (or `error: ...`)."""
    from cinn_py.ir import compile_context
    from cinn_py.ir import print_ir

    nodes: list[Any] = []
    # A fresh name context per case (CINN's ResetNameId), so generated names do not depend on
    # the cases that ran before.
    with compile_context():
        try:
            node = _build(case)
            nodes.append(node)
            if case.schedule:
                node = _schedule(case, node)
                nodes.append(node)
        except CinnError as err:
            return CaseResult(f"error: {err}", True, nodes)
        if case.run_numpy:
            _run_numpy(case, node)
        if case.build:
            _check_x86(case, node)
    return CaseResult(print_ir(node), False, nodes)


def _check_x86(case: GoldenCase, node: Any) -> None:
    """A case built from the DSL (so its inputs are well-formed) must also compile for x86 and
    match the interpreter on random inputs; functions with GPU-only constructs (bound loops,
    `__syncthreads`) are CUDA-only and skipped."""
    from cinn_py.ir import Call, CallType, For, LoweredFunc, walk
    from cinn_py.tools.runner import run_and_compare

    if not isinstance(node, LoweredFunc):
        return
    if any((isinstance(n, For) and n.bind_axis is not None)
           or (isinstance(n, Call) and n.call_type is CallType.INTRINSIC) for n in walk(node.body)):
        return
    report = run_and_compare(node, {v.name: 3 for v in node.scalar_args}, repeat=1)
    if not report.ok:
        raise AssertionError(f"{case.path}:{case.name}: the x86 kernel differs from the interpreter\n"
                             + report.format())


def filecheck(output: str, case: GoldenCase) -> tuple[bool, str]:
    """Match `output` against the case's CHECK lines with the `filecheck` package, in-process.

    The check text keeps the file's line numbers (other lines blanked) so reports point into
    the golden file. Returns (ok, report).
    """
    from filecheck.finput import FInput
    from filecheck.matcher import Matcher
    from filecheck.options import Options
    from filecheck.parser import Parser, pattern_for_opts

    numbered = [""] * (max((n for n, _ in case.checks), default=0))
    for number, line in case.checks:
        numbered[number - 1] = line
    opts = Options(match_filename=str(case.path), input_file="<output>")
    parser = Parser(opts, io.StringIO("\n".join(numbered) + "\n"), *pattern_for_opts(opts))
    matcher = Matcher(opts, FInput("<output>", output + "\n"), parser)
    report = io.StringIO()
    matcher.stderr = report
    code = matcher.run()
    return code == 0, re.sub(r"\x1b\[[0-9;]*m", "", report.getvalue())


def check_case(case: GoldenCase) -> CaseResult:
    """Run a case, round-trip every IR it saw, and match its CHECK lines; raise on mismatch."""
    result = run_case(case)
    for k, node in enumerate(result.nodes):
        assert_roundtrip(node, f"{case.path}:{case.first_line}: {'input' if k == 0 else 'scheduled'} ")
    if not case.checks:
        raise GoldenMismatch(f"{case.path}:{case.first_line}: the case has no CHECK lines "
                             f"(run pytest --update-goldens to write them)")
    ok, report = filecheck(result.output, case)
    if not ok:
        raise GoldenMismatch(f"{case.path}:{case.first_line}: output does not match the CHECK lines\n"
                             f"{report}\n--- actual output ---\n{result.output}")
    return result


def check_lines_for(output: str) -> list[str]:
    """CHECK for the first output line, CHECK-NEXT for the rest (CHECK-EMPTY for blank lines)."""
    out = []
    for k, line in enumerate(output.split("\n")):
        if not line.strip():
            out.append("// CHECK-EMPTY:")
        else:
            out.append(f"// {'CHECK' if k == 0 else 'CHECK-NEXT'}: {line}")
    return out


def update_case(path: Path | str, index: int, output: str, is_error: bool = False) -> None:
    """Rewrite the CHECK lines of case `index` of `path` from `output` (for review); for an
    error only its first line (the message) is written."""
    path = Path(path)
    if is_error:
        output = output.split("\n")[0]
    parts = split_cases(path.read_text(encoding="utf-8"))
    _, lines = parts[index]
    kept = [line for line in lines if not _CHECK.match(line)]
    while kept and not kept[-1].strip():
        kept.pop()
    trailing = index + 1 < len(parts)
    new_lines = kept + check_lines_for(output) + ([""] if trailing else [])
    parts[index] = (parts[index][0], new_lines)
    text = "\n// -----\n".join("\n".join(ls) for _, ls in parts)
    path.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")


# --------------------------------------------------------------------------------------------
# CLI support
# --------------------------------------------------------------------------------------------
def program_of_ir_file(path: Path | str) -> Any:
    """The input IR of a `.ir` file's first case (IR text, or the function its BUILD lines
    assign); `cinn-py dump-ir FILE.ir` prints it."""
    return _build(load_cases(Path(path))[0])
