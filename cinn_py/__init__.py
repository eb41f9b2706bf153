"""cinn-py: a CINN-style deep-learning kernel compiler in Python.

The public API is re-exported here lazily (PEP 562 `__getattr__`), so `import cinn_py` stays
cheap and never imports `schedules` or `codegen` until a name that needs them is used.

    >>> import cinn_py as cp
    >>> X = cp.placeholder((4, 8), "float32", "X")
    >>> Y = cp.compute((4, 8), lambda i, j: X[i, j] * 2.0, "Y")
    >>> print(cp.lower("fn", [X, Y]).name)
    fn
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    # compute DSL
    **{name: "cinn_py.frontend.compute" for name in (
        "sym", "placeholder", "reduce_axis", "compute", "ComputeTensor",
        "reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_all", "reduce_any",
        "exp", "log", "sqrt", "rsqrt", "tanh", "erf", "sigmoid", "abs", "floor", "ceil", "pow",
        "maximum", "minimum", "select", "cast",
    )},
    "lower": "cinn_py.lowering.ast_gen",
    "auto_schedule": "cinn_py.pipeline",
    # NetBuilder frontend
    "NetBuilder": "cinn_py.frontend.net_builder",
    "compile_program": "cinn_py.pipeline",
    "Target": "cinn_py.target",
    "FrontendError": "cinn_py.frontend.ops.base",
    "run_ir": "cinn_py.interp",
    "parse_ir": "cinn_py.ir.text.parser",
    "print_ir": "cinn_py.ir.text.printer",
    # schedules (lazy: importing cinn_py must not import schedules)
    "IRSchedule": "schedules",
    "ScheduleError": "cinn_py.diagnostics",
    # the front door: the pipeline ties schedules and codegen together (lazily)
    "build": "cinn_py.pipeline",
    "codegen": "cinn_py.pipeline",
    "compile": "cinn_py.programs",
    "build_and_get_output": "cinn_py.programs",
    # the tuner is a tool over the pipeline (it times candidates); exported here, at the top
    "tune": "cinn_py.tools.tune",
    "Executable": "cinn_py.runtime.executable",
    "DefaultHostTarget": "cinn_py.target",
    "DefaultNVGPUTarget": "cinn_py.target",
    # errors
    "CinnError": "cinn_py.diagnostics",
    "ParseError": "cinn_py.diagnostics",
    "LoweringError": "cinn_py.diagnostics",
    "CompileError": "cinn_py.diagnostics",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'cinn_py' has no attribute '{name}'")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
