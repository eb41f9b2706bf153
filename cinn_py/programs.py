"""Compile-and-run entry points on NetBuilder programs, over the pipeline's `compile_program`.

`compile(program, target)` returns an `Executable` whose `run({"x": array, ...})` returns the
outputs by name; `build_and_get_output(program, target, feed_list, feed_datas, fetch_list)` is
CINN's one-call form (CINN puts it on the program; here the frontend, a layer below the
pipeline, only prepares the call: `Program.fetch_program`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cinn_py.frontend.program import Program, Variable
from cinn_py.pipeline import compile_program
from cinn_py.runtime.executable import Executable
from cinn_py.target import TargetLike


def compile(program: Program, target: TargetLike = "x86", schedule: str | None = "auto",  # noqa: A001
            fast_math: bool = False) -> Executable:
    """`cinn_py.compile`: compile a NetBuilder `Program` for `target` into an `Executable` whose
    `run({"x": array, ...})` returns the outputs by name. Every group is auto-scheduled unless
    `schedule=None` (serial loop nests as lowered)."""
    if not isinstance(program, Program):
        raise TypeError(f"compile: expected a NetBuilder Program (NetBuilder.build()), got "
                        f"{type(program).__name__}")
    return Executable(compile_program(program, target, schedule, fast_math))


def build_and_get_output(program: Program, target: TargetLike, feed_list: Sequence[Variable | str],
                         feed_datas: Sequence[Any], fetch_list: Sequence[Variable | str],
                         passes: Sequence[str] = (), scope: Any = None) -> list[np.ndarray]:
    """CINN's compile-and-run call: feed `feed_datas[i]` to input `feed_list[i]` (every input, as
    Variables or names), compile for `target` (a `cinn_py.Target`, "x86"/"cuda" or
    `cinn_py.DefaultHostTarget()`) with the automatic schedule, and return the arrays of
    `fetch_list` (any variables of the program, intermediates included) in that order.

    `passes` names graph passes run on the program first (see `Program.fetch_program`); compiling
    then runs the default graph passes as always. A `scope` is refused: cinn-py owns its buffers."""
    if not isinstance(program, Program):
        raise TypeError(f"build_and_get_output: expected a NetBuilder Program (NetBuilder.build()), got "
                        f"{type(program).__name__}")
    fetched, feeds, fetch = program.fetch_program(feed_list, feed_datas, fetch_list, passes, scope)
    by_name = compile(fetched, target).run(feeds)
    return [by_name[v.name] for v in fetch]


__all__ = ["build_and_get_output", "compile"]
