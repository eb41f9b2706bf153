"""Backends: the `Backend` protocol and the ONE table that maps a target kind to its backend.

A backend turns a scheduled, target-lowered `LoweredFunc` into code (`generate`) and code into a
callable kernel (`load`); `build` does both (a backend may cache there). The table names each
backend by a lazy `"module:attribute"` reference, so `import cinn_py` never imports `codegen`
(the import rule of docs/design.md §2): only a call that needs a backend loads it.

    >>> from cinn_py.backend import BACKENDS, get_backend
    >>> sorted(BACKENDS)
    ['cuda', 'x86']
    >>> get_backend("cuda").name
    'cuda'
"""

from __future__ import annotations

import importlib
from typing import Protocol, runtime_checkable

from cinn_py.ir import LoweredFunc
from cinn_py.options import BuildOptions
from cinn_py.target import KINDS, Target, TargetLike

DEFAULT_OPTIONS = BuildOptions()
"""No option given: each backend's defaults."""

# Target kind -> "module:attribute" of its Backend instance. Add a line here for a new backend.
BACKENDS: dict[str, str] = {
    "x86": "codegen.llvm.backend:BACKEND",
    "cuda": "codegen.cuda.backend:BACKEND",
}


@runtime_checkable
class GeneratedCode(Protocol):
    """What `Backend.generate` returns: the generated text, the function it was generated from
    (after the target's passes) and the bounds checks of a checked build; a backend's class adds
    what its `load` needs (x86: object code; CUDA: launch dims, NVRTC products)."""

    @property
    def func(self) -> LoweredFunc: ...

    @property
    def checks(self) -> tuple[str, ...] | None: ...

    @property
    def text(self) -> str:
        """The main generated text: LLVM IR (x86), CUDA C (CUDA)."""
        ...


@runtime_checkable
class Kernel(Protocol):
    """What `Backend.load` returns: `kernel(*inputs, out=None)` -> output array(s). Backends
    derive from `cinn_py.runtime.kernel.KernelBase` (result packing, bounds-check errors)."""

    func: LoweredFunc
    checks: tuple[str, ...] | None

    def __call__(self, *args: object, out: object = None) -> object:
        """The outputs (an array, or a tuple of them) of a call on input arrays; `out`: arrays to
        write them into."""
        ...


class Backend(Protocol):
    """A code generator for one target kind (see docs/architecture.md, "add a backend"). It takes
    functions after `target.passes` (the pipeline's `target_passes` step) and only prints and
    loads them. The options come checked (`BuildOptions.parse` at the pipeline's door); each
    backend reads its own."""

    name: str

    def generate(self, func: LoweredFunc, target: Target,
                 options: BuildOptions = DEFAULT_OPTIONS) -> GeneratedCode:
        """Code for `func`, which went through `target.passes`."""
        ...

    def load(self, code: GeneratedCode, options: BuildOptions = DEFAULT_OPTIONS) -> Kernel:
        """A callable Kernel from code this backend's `generate` returned (other code: a
        CompileError naming the backend)."""
        ...

    def build(self, func: LoweredFunc, target: Target, options: BuildOptions = DEFAULT_OPTIONS) -> Kernel:
        """`load(generate(func, target))`, through the backend's compile cache where it has one."""
        ...


def get_backend(target: TargetLike) -> Backend:
    """The backend of `target` (a Target or its string spelling), imported on first use."""
    kind = target.kind if isinstance(target, Target) else target
    ref = BACKENDS.get(kind)
    if ref is None:
        raise ValueError(f"no backend for target '{kind}'; expected one of {KINDS}")
    module_name, _, attr = ref.partition(":")
    backend: Backend = getattr(importlib.import_module(module_name), attr)
    return backend


__all__ = ["BACKENDS", "DEFAULT_OPTIONS", "Backend", "GeneratedCode", "Kernel", "get_backend"]
