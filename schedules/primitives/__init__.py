"""Schedule primitives as pure functions over `LoweredFunc` (one module per family).

Contract: `primitive(func, <resolved current nodes>, <args>) -> LoweredFunc` or
`(LoweredFunc, <results>)`; every precondition is checked before anything is built and violations
raise a `ScheduleError` subclass with the IR excerpt; trees are rebuilt by path copy (uids of
untouched statements survive). Each is registered by `@primitive` (`schedules.registry`), which
derives its trace step and `IRSchedule` method body from the signature. Importing this package
imports every family module, so every primitive is registered; `PRIMITIVES[name].fn` is the
function. `schedules.IRSchedule` resolves handles and records the trace.
"""

import importlib
import pkgutil

from schedules.registry import PRIMITIVES

for _module in pkgutil.iter_modules(__path__):
    if not _module.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["PRIMITIVES"]
