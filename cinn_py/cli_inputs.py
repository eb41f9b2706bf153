"""What the `cinn-py` commands read (`cli` parses the command line): FILE as a program (a `.ir` file,
a compute-DSL script assigning `func` or `args`, or a NetBuilder script assigning `program` /
defining `build()`), a schedule SCRIPT applied to it, the pipeline steps `dump-ir` asks for, and
their outputs. A bad input is a `CliError` (printed as `error: ...`, exit status 1).
"""

from __future__ import annotations

import argparse
import runpy
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cinn_py.diagnostics import CinnError
from cinn_py.ir import LoweredFunc, Module
from cinn_py.target import Target

if TYPE_CHECKING:
    from cinn_py.frontend.program import Program
    from cinn_py.pipeline import ScheduleLike, StepOutput


class CliError(CinnError):
    """A problem with the command line's inputs (missing file, script without a function)."""


def load_program(path: Path) -> LoweredFunc | Module:
    """Read FILE: parse a `.ir` file, or run a `.py` file and lower what it names."""
    if not path.exists():
        raise CliError(f"no such file: {path}")
    if path.suffix == ".ir":
        from cinn_py.tools.testing.golden import program_of_ir_file

        program = program_of_ir_file(path)
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


def load_source(path: Path) -> Program | LoweredFunc | Module:
    """What `dump-ir` reads: FILE's function(s), or the NetBuilder `program` a script assigns (or
    its `build()` returns)."""
    if path.suffix == ".py" and path.exists():
        namespace = runpy.run_path(str(path), run_name="__cinn_py__")
        if "program" in namespace:
            return _as_program(path, namespace["program"])
        if callable(namespace.get("build")) and not {"func", "args"} & set(namespace):
            return _as_program(path, namespace["build"](), "build()")
    return load_program(path)


def _as_program(path: Path, program: Any, what: str = "program") -> Program:
    from cinn_py.frontend.program import Program

    if not isinstance(program, Program):
        raise CliError(f"{path}: `{what}` must be a NetBuilder Program (`cp.NetBuilder(...)...build()`), "
                       f"got a {type(program).__name__}")
    return program


def _wanted_steps(ns: argparse.Namespace, is_program: bool) -> list[str]:
    """The steps to print: `--diff A B`, `--stage STEP`, `--stage all` (every step the input has,
    up to `codegen`), or by default `schedule` for functions and `optimize`, `fuse` for programs."""
    from cinn_py.pipeline import PROGRAM_STEPS, STEPS, check_step

    if ns.diff:
        wanted = [check_step(name) for name in ns.diff]
    elif ns.stage == "all":
        wanted = [s for s in STEPS[:STEPS.index("codegen") + 1] if is_program or s not in PROGRAM_STEPS[:3]]
    elif ns.stage is not None:
        wanted = [check_step(ns.stage)]
    else:
        wanted = ["optimize", "fuse"] if is_program else ["schedule"]
    missing = [s for s in wanted if not is_program and s in PROGRAM_STEPS[:3]]
    if missing:
        raise CliError(f"step '{missing[0]}' needs a NetBuilder program (a .py FILE that assigns `program`); "
                       f"{ns.file} holds functions, whose steps are lower, schedule, target_passes, codegen, "
                       "load")
    return wanted


def _schedule_of(ns: argparse.Namespace, source: Program | LoweredFunc | Module) -> ScheduleLike:
    """The `schedule` step's schedule: none, `--auto`, or `--schedule SCRIPT` (run once on FILE)."""
    from cinn_py.frontend.program import Program

    if ns.schedule and ns.auto:
        raise CliError("--schedule SCRIPT and --auto exclude each other")
    if ns.auto:
        return "auto"
    if not ns.schedule:
        return None
    if isinstance(source, Program):
        raise CliError("--schedule applies a script to one function; a NetBuilder program has one function "
                       "per "
                       "fused group: use --auto")
    sch = apply_schedule(source, Path(ns.schedule))
    scheduled = {f.name: f for f in (sch.mod.functions if isinstance(source, Module) else (sch.func,))}
    return lambda func: scheduled[func.name]


def step_outputs(ns: argparse.Namespace) -> tuple[Program | LoweredFunc | Module, list[StepOutput]]:
    """FILE and what each step the command line asks for produced, in pipeline order."""
    from cinn_py.frontend.program import Program
    from cinn_py.pipeline import STEPS, dumped, trace

    source = load_source(Path(ns.file))
    is_program = isinstance(source, Program)
    wanted = _wanted_steps(ns, is_program)
    until = max(wanted, key=STEPS.index)
    funcs_or_program = source if isinstance(source, Program) else _functions(source)
    outputs = dumped(trace(funcs_or_program, Target.parse(ns.target), _schedule_of(ns, source), until=until,
                           show_codegen="codegen" in wanted))
    return source, [o for o in outputs if o.step in wanted]


def _functions(source: LoweredFunc | Module) -> list[LoweredFunc]:
    return list(source.functions) if isinstance(source, Module) else [source]
