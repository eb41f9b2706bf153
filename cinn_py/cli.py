"""The `cinn-py` command line.

    cinn-py dump-ir FILE [--schedule SCRIPT | --auto] [--target T] [--stage STEP | --diff A B] [--decls]
                                                            print what pipeline steps produce
    cinn-py codegen FILE [--schedule SCRIPT] --target cuda|x86 [--emit WHAT]   print generated code
    cinn-py run FILE [--schedule SCRIPT] [--dims S1=3,S2=5]   compile for x86, run on random
                                                             inputs, compare with the interpreter
    cinn-py bench [NAMES...] [--repeat N] [--threads T] [--json] [--plot F] [--peers P]   x86
                                                            benchmarks: hand and auto schedules vs numpy and
                                                            peers
    cinn-py tune FILE [--trials N] [--workers process|ray|inline] [--dims M=512] [--db PATH]
                                                            tune the auto scheduler's parameters
                                                            into the tuning database
    cinn-py demo                                            the seed example end to end

FILE is a `.ir` file (IR text, as the printer writes it, optionally with `// decl` lines) or a
Python file that builds tensors with the compute DSL and names what to lower: it assigns
`func` (a LoweredFunc) or `args` (the tensors to lower, inputs then outputs; the function is
named after `name` or the file stem). For `dump-ir`, FILE may also be a NetBuilder script: a
Python file that assigns `program` (a `Program`, `cp.NetBuilder(...)...build()`) or defines
`build()` returning one (and assigns no `func`/`args`); dump-ir then shows the program as built,
after the graph passes (`optimize`) and its fusion groups (`fuse`), and any step from `decompose` on. SCRIPT
is a Python file run with `sch` (an IRSchedule of FILE's
function), `cp` (cinn_py) and `func` in scope.

Compiler errors print as `error: ...` with the IR excerpt and exit with status 1; `--debug`
shows the Python traceback instead.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cinn_py.cli_inputs import CliError, apply_schedule, load_program, step_outputs
from cinn_py.diagnostics import CinnError
from cinn_py.ir import Module
from cinn_py.target import KINDS, Target

if TYPE_CHECKING:
    from cinn_py.pipeline import StepOutput


def cmd_dump_ir(ns: argparse.Namespace) -> int:
    from cinn_py.frontend.program import Program
    from cinn_py.pipeline import step_text

    source, outputs = step_outputs(ns)
    if ns.diff:
        print(_diff(outputs, ns.diff[0], ns.diff[1], ns.decls))
        return 0
    headers = len(outputs) > 1 or (isinstance(source, Program) and ns.stage is None)
    if isinstance(source, Program) and ns.stage is None:
        print(f"// ----- program: {source.name} (as built) -----\n{source}")
    for output in outputs:
        if headers:
            print(f"// ----- {output.step}: {output.unit} -----")
        print(step_text(output, decls=ns.decls))
    return 0


def _diff(outputs: list[StepOutput], a: str, b: str, decls: bool) -> str:
    """A unified diff from step `a` to step `b`: unit by unit when both steps have the same units
    (two function steps, or two program steps), else the whole of each step's text."""
    from cinn_py.pipeline import step_text

    def texts(step: str) -> dict[str, str]:
        return {o.unit: step_text(o, decls=decls) for o in outputs if o.step == step}

    old, new = texts(a), texts(b)
    if list(old) != list(new):
        old, new = {"": "\n\n".join(old.values())}, {"": "\n\n".join(new.values())}
    chunks = []
    for unit in old:
        where = f"/{unit}" if unit else ""
        lines = list(difflib.unified_diff(old[unit].splitlines(), new[unit].splitlines(), f"{a}{where}",
                                          f"{b}{where}", lineterm=""))
        chunks.append("\n".join(lines) if lines
                      else f"// {a} and {b} are the same{' for ' + unit if unit else ''}")
    return "\n".join(chunks)


def _scheduled_program(ns: argparse.Namespace, target: Target) -> tuple[Any, str | None]:
    """FILE's function and the `schedule` to build it with: as scheduled by `--schedule SCRIPT`,
    or auto-scheduled (`--auto`, and by default on a GPU, where an unscheduled function would be a
    kernel of one thread: a silent 1000x slowdown is worse than a schedule the user did not ask for)."""
    if ns.schedule and ns.auto:
        raise CliError("--schedule SCRIPT and --auto exclude each other")
    program: Any = load_program(Path(ns.file))
    if ns.schedule:
        return apply_schedule(program, Path(ns.schedule)).func, None
    if ns.auto:
        return program, "auto"
    if target.is_gpu:
        print(f"{ns.command}: no --schedule for target {target.kind}: auto-scheduling (unscheduled, the "
              "kernel would "
              f"run on one GPU thread; give --schedule SCRIPT to choose the schedule)", file=sys.stderr)
        return program, "auto"
    return program, None


def cmd_codegen(ns: argparse.Namespace) -> int:
    from cinn_py.pipeline import codegen

    target = Target.parse(ns.target)
    target = Target.cuda(ns.arch) if target.is_gpu else target
    program, schedule = _scheduled_program(ns, target)
    code = codegen(program, target=target, fast_math=ns.fast_math, schedule=schedule)
    emit = ns.emit or ("source" if target.is_gpu else "llvm")
    attribute = {"source": "source", "ptx": "ptx", "launch": "launch", "resources": "resource_summary",
                 "llvm": "llvm_ir", "llvm-unopt": "unoptimized_ir", "asm": "asm"}[emit]
    if not hasattr(code, attribute):
        raise CliError(f"codegen: --emit {emit} is not available for target {ns.target}")
    print(getattr(code, attribute))
    return 0


_DIM_ITEM = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*([0-9]{1,19})\s*\Z", re.ASCII)


def _parse_dims(text: str | None) -> dict[str, int]:
    """`S1=3,S2=5` -> {"S1": 3, "S2": 5}: identifiers, non-negative ASCII decimal values that fit
    int64, each name once."""
    dims: dict[str, int] = {}
    if text is None or not text.strip():
        return dims
    for item in text.split(","):
        match = _DIM_ITEM.match(item)
        if match is None:
            raise CliError("--dims: expected NAME=INT items (non-negative decimal ints) separated by "
                           "commas, "
                           f"got {item!r}")
        name, value = match.group(1), int(match.group(2))
        if name in dims:
            raise CliError(f"--dims: {name} is given twice")
        if value > 2**63 - 1:
            raise CliError(f"--dims: {name}={value} does not fit int64")
        dims[name] = value
    return dims


def cmd_run(ns: argparse.Namespace) -> int:
    from cinn_py.tools.runner import run_and_compare

    program, schedule = _scheduled_program(ns, Target.parse(ns.target))
    report = run_and_compare(program, _parse_dims(ns.dims), seed=ns.seed, target=ns.target,
                             fast_math=ns.fast_math, schedule=schedule)
    print(report.format())
    return 0 if report.ok else 1


def cmd_bench(ns: argparse.Namespace) -> int:
    from cinn_py.tools import bench

    return bench.run_reporting_errors(ns)


def cmd_tune(ns: argparse.Namespace) -> int:
    from cinn_py.tools.tune import tune

    if not ns.file and not ns.bench:
        raise CliError("tune: give FILE or --bench NAMES")
    ok, plotted = True, []
    for label, obj, example_inputs in _tune_subjects(ns):
        results = tune(obj, "x86", ns.trials, example_inputs=example_inputs, budget_s=ns.budget,
                       batch_size=ns.batch, workers=ns.workers, parallel=ns.parallel,
                       dims=_parse_dims(ns.dims), repeat=ns.repeat, timeout_s=ns.timeout, db=ns.db,
                       save=not ns.no_save, progress=not ns.quiet, fast_math=ns.fast_math, model=ns.model)
        for res in results:
            print(res.summary())
            ok = ok and res.best.ok
            plotted.append((label if len(results) == 1 else f"{label}/{res.group}", res))
        if results and results[0].db_path is not None and not ns.no_save:
            print(f"tuning database: {results[0].db_path}")
    if ns.plot:
        from cinn_py.tools.tune_plot import plot_progress

        print(f"tuning progress plot: {plot_progress(plotted, ns.plot)}")
    return 0 if ok else 1


def _tune_subjects(ns: argparse.Namespace) -> list[tuple[str, Any, Any]]:
    """(label, what to tune, example inputs) for FILE and each `--bench` workload. A Python FILE
    may assign `program` (a NetBuilder Program), `model` and `example_inputs` (a torch model:
    every group of its graphs), `func` or `args` (one group)."""
    subjects: list[tuple[str, Any, Any]] = []
    if ns.file:
        path = Path(ns.file)
        found = _program_or_model(path) if path.suffix == ".py" and path.exists() else None
        if found is not None:
            subjects.append((path.stem, *found))
        else:
            program = load_program(path)
            funcs = program.functions if isinstance(program, Module) else (program,)
            subjects += [(f.name, f, None) for f in funcs]
    if ns.bench:
        from cinn_py.tools.bench_workloads import WORKLOADS

        for name in ns.bench.split(","):
            if name not in WORKLOADS:
                raise CliError(f"tune: unknown bench workload {name!r} (one of {', '.join(WORKLOADS)})")
            subjects.append((name, WORKLOADS[name].lower(WORKLOADS[name].shape), None))
    return subjects


def _program_or_model(path: Path) -> tuple[Any, Any] | None:
    import runpy

    from cinn_py.frontend.program import Program

    namespace = runpy.run_path(str(path), run_name="__cinn_py__")
    if isinstance(namespace.get("program"), Program):
        return namespace["program"], None
    if namespace.get("model") is not None and namespace.get("example_inputs") is not None:
        return namespace["model"], list(namespace["example_inputs"])
    return None


def cmd_fuzz(ns: argparse.Namespace) -> int:
    from cinn_py.tools.fuzz import main as fuzz_main

    return fuzz_main(list(ns.passthrough))


def cmd_demo(ns: argparse.Namespace) -> int:
    from cinn_py.tools.demo import run_demo

    return run_demo(verbose=not ns.quiet)


def _steps_help() -> str:
    from cinn_py.pipeline import PIPELINE

    return "pipeline steps:\n" + "\n".join(f"  {step.name:<14} {step.doc}" for step in PIPELINE)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cinn-py", description="CINN-style kernel compiler in Python")
    parser.add_argument("--debug", action="store_true", help="show Python tracebacks for errors")
    sub = parser.add_subparsers(dest="command", required=True)
    dump = sub.add_parser("dump-ir", help="print what the pipeline's steps produce (IR, groups, code)",
                          formatter_class=argparse.RawDescriptionHelpFormatter, epilog=_steps_help())
    dump.add_argument("file", help=".ir file, Python file building tensors, or NetBuilder script (`program`)")
    dump.add_argument("--schedule", metavar="SCRIPT", help="schedule script run with `sch` in scope")
    dump.add_argument("--auto", action="store_true", help="the schedule step runs the automatic scheduler")
    dump.add_argument("--target", choices=KINDS, default="cuda",
                      help="target of the later steps (default cuda)")
    dump.add_argument("--decls", action="store_true", help="prefix the `// decl` header (parseable)")
    dump.add_argument("--stage", metavar="STEP",
                      help="print what this pipeline step produced, or `all` steps "
                      "up to codegen (default: schedule; for a program: the program, optimize and fuse)")
    dump.add_argument("--diff", nargs=2, metavar=("A", "B"), help="unified diff from step A's output to B's")
    dump.set_defaults(handler=cmd_dump_ir)

    gen = sub.add_parser("codegen", help="print generated CUDA C / PTX / LLVM IR / assembly")
    gen.add_argument("file")
    gen.add_argument("--schedule", metavar="SCRIPT", help="schedule script run with `sch` in scope")
    gen.add_argument("--auto", action="store_true", help="auto-schedule (the default for --target cuda)")
    gen.add_argument("--target", choices=KINDS, default="cuda")
    gen.add_argument("--emit", choices=("source", "ptx", "launch", "resources", "llvm", "llvm-unopt", "asm"))
    gen.add_argument("--arch", default="sm_90", help="CUDA arch for NVRTC (default sm_90)")
    gen.add_argument("--fast-math", action="store_true")
    gen.set_defaults(handler=cmd_codegen)

    run = sub.add_parser("run", help="compile, run on random inputs, compare with the interpreter")
    run.add_argument("file")
    run.add_argument("--schedule", metavar="SCRIPT", help="schedule script run with `sch` in scope")
    run.add_argument("--auto", action="store_true", help="auto-schedule (the default for --target cuda)")
    run.add_argument("--dims", help="values of symbolic dims, e.g. S1=3,S2=5 (default: 4 each)")
    run.add_argument("--target", choices=KINDS, default="x86")
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--fast-math", action="store_true")
    run.set_defaults(handler=cmd_run)

    from cinn_py.tools import bench as bench_tool  # its own parser: one list of bench options

    bench = sub.add_parser("bench",
                           help="x86 benchmarks, hand and auto schedules, against numpy and the peers "
                                         "(median ms, GB/s, %% of bandwidth)")
    bench_tool.build_parser(bench)
    bench.set_defaults(handler=cmd_bench)

    tune = sub.add_parser("tune", help="search the x86 auto schedule's space of each group, keep the best "
                                       "in the tuning database")
    tune.add_argument("file", nargs="?", help=".ir file, or Python file assigning `program` (NetBuilder), "
                                              "`model` + `example_inputs` (torch), `func` or `args`")
    tune.add_argument("--bench", metavar="NAMES", help="tune these bench workloads at their bench shapes "
                                                      "(comma-separated, e.g. softmax,matmul)")
    tune.add_argument("--trials", type=int, default=32, help="candidates measured per group, the default "
                                                             "included (32)")
    tune.add_argument("--budget", type=float, default=None, metavar="SECONDS",
                      help="wall seconds per group (the search stops at the first of trials and budget)")
    tune.add_argument("--batch", type=int, default=8, help="candidates measured per batch (8)")
    tune.add_argument("--model", choices=("auto", "lightgbm", "sklearn", "none"), default="auto",
                      help="the cost model ranking candidates (auto: lightgbm, else sklearn, else random; "
                           "pip install 'cinn-py[tune]')")
    tune.add_argument("--fast-math", action="store_true", help="measure kernels built with fast math")
    tune.add_argument("--plot", metavar="FILE.png",
                      help="write the tuning-progress plot (best time vs trials)")
    tune.add_argument("--workers", choices=("process", "ray", "inline"), default="process",
                      help="where candidates are measured (ray: pip install 'cinn-py[distributed]')")
    tune.add_argument("--parallel", type=int, default=1,
                      help="concurrent measurements (1: comparable timings)")
    tune.add_argument("--dims", help="values of symbolic dims for the measurements, e.g. M=512,N=512")
    tune.add_argument("--repeat", type=int, default=5, help="timed samples per candidate (fastest counts)")
    tune.add_argument("--timeout", type=float, default=120.0,
                      help="seconds before a candidate counts as hung")
    tune.add_argument("--db",
                      help="database file (default: $CINN_PY_TUNING_DB, else <cache dir>/tuning.sqlite)")
    tune.add_argument("--no-save", action="store_true", help="measure only; leave the database alone")
    tune.add_argument("--quiet", action="store_true", help="no progress display")
    tune.set_defaults(handler=cmd_tune)

    # The fuzzer keeps one parser of its own (python -m cinn_py.tools.fuzz): its options pass through.
    fuzz = sub.add_parser("fuzz", help="random programs and schedules vs the numpy oracle (all options: "
                                       "cinn-py fuzz -h)", add_help=False)
    fuzz.set_defaults(handler=cmd_fuzz)

    demo = sub.add_parser("demo", help="the seed example: lower, schedule, CUDA C, x86 run vs numpy")
    demo.add_argument("--quiet", action="store_true")
    demo.set_defaults(handler=cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    ns, passthrough = parser.parse_known_args(argv)
    if passthrough and ns.command != "fuzz":
        parser.error(f"unrecognized arguments: {' '.join(passthrough)}")
    ns.passthrough = passthrough
    handler: Callable[[argparse.Namespace], int] = ns.handler
    try:
        return handler(ns)
    except BrokenPipeError:
        # `cinn-py dump-ir X | head`: the reader left; exit quietly like other Unix tools.
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - Python flushes stdout at exit
        return 0
    except (CinnError, ValueError, TypeError, SyntaxError, NameError, AttributeError, MemoryError) as err:
        if ns.debug:
            traceback.print_exc()
        else:
            print(f"error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
