"""The pipeline's named steps (`STEPS`) and how they are observed: `StepOutput(step, unit,
value)` is what each step yields, `step_text` its text, and `dumped` writes every output to
`$CINN_PY_DUMP_IR` (`DIR/NN_<step>_<unit>.txt`). `cinn_py.pipeline` runs the steps; `cinn-py
dump-ir` prints them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cinn_py.backend import GeneratedCode
from cinn_py.frontend.fusion import FusionPlan
from cinn_py.frontend.program import Program
from cinn_py.ir import LoweredFunc, print_ir

DUMP_ENV = "CINN_PY_DUMP_IR"


@dataclass(frozen=True)
class Step:
    """One named pipeline step: what it does, for `--help` texts and docs."""

    name: str
    doc: str


PIPELINE: tuple[Step, ...] = (
    Step("decompose", "composite ops become primitive ops"),
    Step("optimize", "graph passes: pattern rewrites, constant folding, CSE, DCE"),
    Step("fuse", "partition the op graph into fused groups"),
    Step("lower", "each group becomes one ScheduleBlock LoweredFunc"),
    Step("schedule", "no schedule (as lowered), the automatic group scheduler, or a schedule script"),
    Step("target_passes", "the target's post-lowering passes (Target.passes)"),
    Step("codegen", "the backend generates code (Backend.generate)"),
    Step("load", "the backend loads the code as a callable kernel (Backend.build)"),
)
STEPS: tuple[str, ...] = tuple(s.name for s in PIPELINE)
PROGRAM_STEPS = STEPS[:4]
FUNC_STEPS = STEPS[4:]


@dataclass(frozen=True)
class StepOutput:
    """What one step produced for one unit: the program (program steps) or one function."""

    step: str
    unit: str
    value: Any


def check_step(name: str) -> str:
    """`name` if it is a step; a ValueError listing the steps otherwise."""
    if name not in STEPS:
        raise ValueError(f"unknown pipeline step '{name}'; the steps are: {', '.join(STEPS)}")
    return name


def through(until: str, step: str) -> bool:
    """Whether a trace that stops after `until` still runs `step`."""
    return STEPS.index(step) <= STEPS.index(until)


# -- text and dumping ----------------------------------------------------------------------------------
def step_text(output: StepOutput, decls: bool = False) -> str:
    """What a step produced, as text: IR through the printer, a program/plan as its listing,
    generated code as its source (CUDA C) or LLVM IR, a loaded kernel as its repr."""
    value = output.value
    if output.step == "load":
        return repr(value)
    if isinstance(value, LoweredFunc):
        return print_ir(value, decls=decls)
    if isinstance(value, GeneratedCode):
        return value.text
    return str(value) if isinstance(value, (Program, FusionPlan)) else repr(value)


def dump_dir() -> Path | None:
    """`$CINN_PY_DUMP_IR` as a directory, or None when the variable is unset or empty.

    Raises:
        ValueError: the variable names something that exists and is not a directory (a file
            would be overwritten by nothing useful; mkdir raised FileExistsError before).
    """
    directory = os.environ.get(DUMP_ENV)
    if not directory:
        return None
    path = Path(directory)
    if path.exists() and not path.is_dir():
        raise ValueError(f"{DUMP_ENV}={directory!r} names an existing file (or other non-directory); it must "
                         "name a directory, which is created if missing and gets one file per pipeline step")
    return path


def dump_path(directory: Path, output: StepOutput) -> Path:
    """`DIR/NN_<step>_<unit>.txt`: numbered in pipeline order, so `ls` lists the steps in order."""
    unit = re.sub(r"[^A-Za-z0-9_.-]", "_", output.unit)
    return directory / f"{STEPS.index(output.step):02d}_{output.step}_{unit}.txt"


def dumped(outputs: Iterator[StepOutput]) -> Iterator[StepOutput]:
    """Pass `outputs` through, writing each to `$CINN_PY_DUMP_IR` when the variable is set."""
    directory = dump_dir()
    for output in outputs:
        if directory is not None:
            try:
                directory.mkdir(parents=True, exist_ok=True)
                dump_path(directory, output).write_text(step_text(output) + "\n")
            except OSError as exc:  # a parent that is a file, no permission, disk full
                raise ValueError(f"{DUMP_ENV}={str(directory)!r}: cannot write the step dump: {exc}") from exc
        yield output


__all__ = ["DUMP_ENV", "FUNC_STEPS", "PIPELINE", "PROGRAM_STEPS", "STEPS", "Step", "StepOutput", "check_step",
           "dump_dir", "dump_path", "dumped", "step_text", "through"]
