"""IR passes over `LoweredFunc`s, and a small registry of them by name.

A pass is a function `LoweredFunc -> LoweredFunc`. The registry maps a name to a lazy
`"module:function"` reference so that listing passes imports nothing heavy; add a line to
`_BUILTIN` for a new pass module, or call `register_pass` at run time. `run_passes(func,
"simplify,gpu_bind")` applies a comma-separated pipeline in order.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable

from cinn_py.ir import LoweredFunc
from cinn_py.passes.simplify import simplify_func

Pass = Callable[[LoweredFunc], LoweredFunc]

_BUILTIN: dict[str, str] = {
    "simplify": "cinn_py.passes.simplify:simplify_func",
    "simplify_indices": "cinn_py.passes.index_simplify:simplify_indices",
    "cross_thread_reduce": "cinn_py.passes.cross_thread_reduce:cross_thread_reduce",
    "gpu_bind": "cinn_py.passes.gpu_bind:gpu_bind",
    "check_x86_loops": "cinn_py.passes.x86_lowering:check_x86_loops",
    "inline_blocks_x86": "cinn_py.passes.x86_lowering:inline_blocks_x86",
    "privatize_x86_buffers": "cinn_py.passes.x86_privatize:privatize_x86_buffers",
}
_REGISTERED: dict[str, Pass] = {}

__all__ = ["Pass", "available_passes", "get_pass", "register_pass", "run_passes", "simplify_func"]


def register_pass(name: str, fn: Pass | None = None) -> Callable[[Pass], Pass] | Pass:
    """Register `fn` under `name` (usable as a decorator: `@register_pass("my_pass")`)."""
    if not name or "," in name:
        raise ValueError(f"register_pass: invalid pass name {name!r}")

    def add(f: Pass) -> Pass:
        if name in _REGISTERED or name in _BUILTIN:
            raise ValueError(f"register_pass: a pass named '{name}' is already registered")
        _REGISTERED[name] = f
        return f

    return add(fn) if fn is not None else add


def available_passes() -> list[str]:
    """Names of every registered pass, sorted."""
    return sorted({*_BUILTIN, *_REGISTERED})


def get_pass(name: str) -> Pass:
    """The pass function registered as `name`; ValueError lists the known names otherwise."""
    if name in _REGISTERED:
        return _REGISTERED[name]
    ref = _BUILTIN.get(name)
    if ref is None:
        raise ValueError(f"unknown pass '{name}'; available: {', '.join(available_passes())}")
    module_name, _, attr = ref.partition(":")
    fn: Pass = getattr(importlib.import_module(module_name), attr)
    return fn


def run_passes(func: LoweredFunc, names: str | Iterable[str]) -> LoweredFunc:
    """Apply passes in order; `names` is a list or a comma-separated string."""
    items = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
    passes = [get_pass(n) for n in items if n]
    for fn in passes:
        func = fn(func)
    return func
