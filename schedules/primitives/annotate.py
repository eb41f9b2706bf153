"""annotate / unannotate (CINN `Annotate`, `Unannotate`): block attributes.

Attributes are `int` (int64), finite `float`, `bool` or `str` (no control characters) values
keyed by an identifier or a dotted name (`x86.nontemporal`), kept sorted by key (CINN prints a `std::map`).
The block keeps its uid. `unannotate` of a missing key only
warns, as in CINN.
"""

from __future__ import annotations

import dataclasses
import math
import re
import warnings

from cinn_py.ir import AttrValue, LoweredFunc, ScheduleBlockRealize, check_text, replace_stmt
from schedules.registry import primitive

__all__ = ["annotate", "unannotate"]


_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
_INT64 = (-(2**63), 2**63 - 1)


def _check_key(key: str, primitive: str) -> None:
    if not isinstance(key, str):
        raise TypeError(f"{primitive}: key must be a str, got {type(key).__name__} {key!r}")
    if not _KEY.match(key):
        # the printer writes `attrs(key:value)`: a key with spaces, ':', ',', ')' or control
        # characters would print IR that does not parse back
        raise ValueError(f"{primitive}: key must be an identifier, dotted names allowed (x86.nontemporal), "
                         f"got {key!r}")


def _check_value(key: str, value: AttrValue) -> None:
    if not isinstance(value, (bool, int, float, str)):
        raise TypeError(f"annotate: value of '{key}' must be an int, float, bool or str, got "
                        f"{type(value).__name__}")
    if isinstance(value, int) and not isinstance(value, bool) and not _INT64[0] <= value <= _INT64[1]:
        raise ValueError(f"annotate: int value of '{key}' must fit int64 [{_INT64[0]}, {_INT64[1]}], got "
                         f"{value}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"annotate: float value of '{key}' must be finite, got {value}")
    if isinstance(value, str):
        check_text(value, f"annotate: value of '{key}'")


def _with_attrs(func: LoweredFunc, block: ScheduleBlockRealize, attrs: dict[str, AttrValue]) -> LoweredFunc:
    sb = dataclasses.replace(block.schedule_block, attrs=tuple(sorted(attrs.items())))
    return replace_stmt(func, block, dataclasses.replace(block, schedule_block=sb))


@primitive
def annotate(func: LoweredFunc, block: ScheduleBlockRealize, key: str, value: AttrValue) -> LoweredFunc:
    """Set `attrs[key] = value` on `block`."""
    _check_key(key, "annotate")
    _check_value(key, value)
    attrs = dict(block.schedule_block.attrs)
    attrs[key] = value
    return _with_attrs(func, block, attrs)


@primitive
def unannotate(func: LoweredFunc, block: ScheduleBlockRealize, key: str) -> LoweredFunc:
    """Remove `attrs[key]` from `block`."""
    _check_key(key, "unannotate")
    attrs = dict(block.schedule_block.attrs)
    if key not in attrs:
        warnings.warn(f"unannotate: block '{block.name}' has no attribute '{key}'", stacklevel=3)
        return func
    del attrs[key]
    return _with_attrs(func, block, attrs)
