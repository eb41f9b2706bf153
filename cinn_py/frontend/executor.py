"""Compatibility names: the program compiler moved out of the frontend (which is a leaf: it
imports only the IR core) into `cinn_py.pipeline`; `lower_group` lives in `cinn_py.lowering.group`
and `CompiledProgram` in `cinn_py.runtime.program`. The names resolve lazily here so existing
imports keep working without the frontend importing the layers above it.
"""

from __future__ import annotations

import importlib
from typing import Any

from cinn_py.frontend.fusion import FusionPlan, fuse
from cinn_py.frontend.graph_passes import optimize
from cinn_py.frontend.program import Program

_MOVED = {
    "lower_group": "cinn_py.lowering.group",
    "CompiledProgram": "cinn_py.runtime.program",
    "compile_program": "cinn_py.pipeline",
    "run_interpreted": "cinn_py.pipeline",
}


def plan(program: Program) -> FusionPlan:
    """The fused groups of `program` after the default graph passes."""
    if not isinstance(program, Program):
        raise TypeError(f"expected a Program (NetBuilder.build()), got {type(program).__name__}")
    return fuse(optimize(program))


def __getattr__(name: str) -> Any:
    module = _MOVED.get(name)
    if module is None:
        raise AttributeError(f"module 'cinn_py.frontend.executor' has no attribute '{name}'")
    return getattr(importlib.import_module(module), name)
