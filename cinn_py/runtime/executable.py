"""`cinn_py.compile(program, target)`: an `Executable` a user runs by feeding named arrays.

    >>> import numpy as np, cinn_py as cp
    >>> nb = cp.NetBuilder("scale_add")
    >>> x = nb.create_input("float32", [2, 3], "x")
    >>> y = nb.create_input("float32", [2, 3], "y")
    >>> out = nb.add(nb.scale(x, 2.0), y)
    >>> exe = cp.compile(nb.build(), "x86")
    >>> exe.input_names, exe.output_names == [out.name]
    (['x', 'y'], True)
    >>> result = exe.run({"x": np.ones((2, 3), "float32"), "y": np.full((2, 3), 0.5, "float32")})
    >>> result[out.name]
    array([[2.5, 2.5, 2.5],
           [2.5, 2.5, 2.5]], dtype=float32)

`run` takes the inputs by name (all of them, nothing else) and returns a dict from output name to
array, in the program's output order; `exe(x, y)` takes them positionally and returns the array
(one output) or a tuple, as a compiled kernel does. Arrays are checked against the inputs'
dtypes and shapes (symbolic dims bind from them) before any kernel runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from cinn_py.frontend.ops.base import FrontendError
from cinn_py.runtime.program import CompiledProgram
from cinn_py.target import Target

__all__ = ["Executable"]


class Executable:
    """A program compiled for one target (`cinn_py.compile`): `run(feeds) -> {name: array}`."""

    def __init__(self, compiled: CompiledProgram) -> None:
        self.compiled = compiled

    @property
    def program(self) -> Any:
        return self.compiled.program

    @property
    def target(self) -> Target:
        return self.compiled.target

    @property
    def input_names(self) -> list[str]:
        return [v.name for v in self.program.inputs]

    @property
    def output_names(self) -> list[str]:
        return [v.name for v in self.program.outputs]

    def run(self, feeds: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """Run every kernel on the named inputs; the outputs by name, in program order."""
        if not isinstance(feeds, Mapping):
            raise FrontendError(f"Executable.run of program '{self.program.name}': feeds must map input "
                                "names "
                                f"{self.input_names} to arrays, got {type(feeds).__name__}")
        result = self.compiled(dict(feeds))
        arrays = result if isinstance(result, tuple) else (result,)
        return dict(zip(self.output_names, arrays))

    def __call__(self, *inputs: Any) -> Any:
        return self.compiled(*inputs)

    def __repr__(self) -> str:
        return (f"<Executable {self.program.name}({', '.join(self.input_names)}) -> "
                f"({', '.join(self.output_names)}) on {self.target.kind}: "
                f"{len(self.compiled.kernels)} kernel(s)>")
