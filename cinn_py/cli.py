"""The `cinn-py` command line.

    cinn-py dump-ir FILE [--schedule SCRIPT] [--decls]     print the lowered (and scheduled) IR

FILE is a `.ir` file (IR text, as the printer writes it, optionally with `// decl` lines) or a
Python file that builds tensors with the compute DSL and names what to lower: it assigns
`func` (a LoweredFunc) or `args` (the tensors to lower, inputs then outputs; the function is
named after `name` or the file stem). SCRIPT is a Python file run with `sch` (an IRSchedule of
FILE's function), `cp` (cinn_py) and `func` in scope.

Compiler errors print as `error: ...` with the IR excerpt and exit with status 1; `--debug`
shows the Python traceback instead.
"""

from __future__ import annotations

import argparse
import runpy
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from cinn_py.diagnostics import CinnError
from cinn_py.ir import LoweredFunc, Module
from cinn_py.ir.printer import print_ir


class CliError(CinnError):
    """A problem with the command line's inputs (missing file, script without a function)."""


def load_program(path: Path) -> LoweredFunc | Module:
    """Read FILE: parse a `.ir` file, or run a `.py` file and lower what it names."""
    if not path.exists():
        raise CliError(f"no such file: {path}")
    if path.suffix == ".ir":
        from cinn_py.ir.parser import parse_ir

        program = parse_ir(path.read_text())
        if not isinstance(program, (LoweredFunc, Module)):
            raise CliError(f"{path}: expected a function or module, got a {type(program).__name__}")
        return program
    if path.suffix == ".py":
        return _program_from_python(path)
    raise CliError(f"{path}: expected a .ir or .py file")


def _program_from_python(path: Path) -> LoweredFunc | Module:
    namespace = runpy.run_path(str(path), run_name="__cinn_py__")
    func = namespace.get("func")
    if isinstance(func, (LoweredFunc, Module)):
        return func
    args = namespace.get("args")
    if isinstance(args, (list, tuple)) and args:
        from cinn_py.lowering.ast_gen import lower

        return lower(str(namespace.get("name", path.stem)), list(args))
    raise CliError(f"{path}: the script must assign `func` (a LoweredFunc) or `args` (tensors to lower)")


def apply_schedule(program: LoweredFunc | Module, script: Path) -> Any:
    """Run a schedule script on `program` and return the IRSchedule."""
    if not script.exists():
        raise CliError(f"no such schedule script: {script}")
    import cinn_py
    from schedules import IRSchedule

    sch = IRSchedule(program)
    runpy.run_path(str(script), init_globals={"sch": sch, "cp": cinn_py, "func": program},
                   run_name="__cinn_py_schedule__")
    return sch


def cmd_dump_ir(ns: argparse.Namespace) -> int:
    program: Any = load_program(Path(ns.file))
    if ns.schedule:
        program = apply_schedule(program, Path(ns.schedule)).func
    print(print_ir(program, decls=ns.decls))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cinn-py", description="CINN-style kernel compiler in Python")
    parser.add_argument("--debug", action="store_true", help="show Python tracebacks for errors")
    sub = parser.add_subparsers(dest="command", required=True)
    dump = sub.add_parser("dump-ir", help="print the lowered (and optionally scheduled) IR")
    dump.add_argument("file", help=".ir file or Python file building tensors")
    dump.add_argument("--schedule", metavar="SCRIPT", help="schedule script run with `sch` in scope")
    dump.add_argument("--decls", action="store_true", help="prefix the `// decl` header (parseable)")
    dump.set_defaults(handler=cmd_dump_ir)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    ns = parser.parse_args(argv)
    handler: Callable[[argparse.Namespace], int] = ns.handler
    try:
        return handler(ns)
    except (CinnError, ValueError, TypeError, SyntaxError, NameError, AttributeError) as err:
        if ns.debug:
            traceback.print_exc()
        else:
            print(f"error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
