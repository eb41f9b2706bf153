"""Front ends that build tensor programs: the compute DSL (`compute.py`, TVM te / CINN lang style)
and the op-level `NetBuilder` (`net_builder.py` -> `Program`, decomposition, graph passes,
fusion, `compile_program`; see docs/net_builder.md)."""

from __future__ import annotations

import importlib
from typing import Any

# NetBuilder names, imported on first use so that `import cinn_py.frontend.compute` stays light.
_EXPORTS = {
    "NetBuilder": "cinn_py.frontend.net_builder",
    "Program": "cinn_py.frontend.program",
    "Variable": "cinn_py.frontend.program",
    "Operator": "cinn_py.frontend.program",
    "FrontendError": "cinn_py.frontend.ops.base",
    "OpPatternKind": "cinn_py.frontend.ops.base",
    "decompose": "cinn_py.frontend.decompose",
    "optimize": "cinn_py.frontend.graph_passes",
    "fuse": "cinn_py.frontend.fusion",
    "plan": "cinn_py.frontend.executor",
    "compile_program": "cinn_py.frontend.executor",
    "CompiledProgram": "cinn_py.frontend.executor",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'cinn_py.frontend' has no attribute '{name}'")
    return getattr(importlib.import_module(module), name)
