"""Front ends that build tensor programs: the compute DSL (`compute.py`, TVM te / CINN lang style)
and the op-level `NetBuilder` (`net_builder.py` -> `Program`, decomposition, graph passes,
fusion; see docs/net_builder.md).

The frontend is a leaf: it imports only the IR core (`cinn_py.ir`, `cinn_py.symbolic`, the
interpreter's math table). Compiling a `Program` is the pipeline's job (`cinn_py.compile_program`,
`cinn_py.pipeline`), which imports the frontend, never the other way round."""

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
    "plan": "cinn_py.frontend.fusion",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'cinn_py.frontend' has no attribute '{name}'")
    return getattr(importlib.import_module(module), name)
