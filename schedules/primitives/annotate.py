"""annotate / unannotate (CINN `Annotate`, `Unannotate`): block attributes.

Attributes are `int`, `float`, `bool` or `str` values keyed by a non-empty string, kept sorted
by key (CINN prints a `std::map`). The block keeps its uid. `unannotate` of a missing key only
warns, as in CINN.
"""

from __future__ import annotations

import dataclasses
import warnings

from cinn_py.ir import AttrValue, LoweredFunc, ScheduleBlockRealize, replace_stmt

__all__ = ["annotate", "unannotate"]


def _check_key(key: str, primitive: str) -> None:
    if not isinstance(key, str) or not key:
        raise TypeError(f"{primitive}: key must be a non-empty string, got {key!r}")


def _with_attrs(func: LoweredFunc, block: ScheduleBlockRealize, attrs: dict[str, AttrValue]) -> LoweredFunc:
    sb = dataclasses.replace(block.schedule_block, attrs=tuple(sorted(attrs.items())))
    return replace_stmt(func, block, dataclasses.replace(block, schedule_block=sb))


def annotate(func: LoweredFunc, block: ScheduleBlockRealize, key: str, value: AttrValue) -> LoweredFunc:
    """Set `attrs[key] = value` on `block`."""
    _check_key(key, "annotate")
    if not isinstance(value, (bool, int, float, str)):
        raise TypeError(f"annotate: value must be an int, float, bool or str, got {type(value).__name__}")
    attrs = dict(block.schedule_block.attrs)
    attrs[key] = value
    return _with_attrs(func, block, attrs)


def unannotate(func: LoweredFunc, block: ScheduleBlockRealize, key: str) -> LoweredFunc:
    """Remove `attrs[key]` from `block`."""
    _check_key(key, "unannotate")
    attrs = dict(block.schedule_block.attrs)
    if key not in attrs:
        warnings.warn(f"unannotate: block '{block.name}' has no attribute '{key}'", stacklevel=3)
        return func
    del attrs[key]
    return _with_attrs(func, block, attrs)
