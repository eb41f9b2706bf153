"""Bounds-checked builds: whether `build(..., checked=None)` guards accesses at run time.

`lower` rejects every access it proves out of bounds; what it cannot decide at compile time (a
gather `X[I[i]]`, an index that is out of range only for some values of a symbolic dim) is
guarded in a checked build, and a failed guard raises `OutOfBoundsAccessError` from the kernel
call instead of reading or writing outside the tensor.

Unchecked is the default for users, as in TVM (`tir.instrument_bound_checkers` is off unless
asked for) and Triton (masks are the programmer's job): checks cost time and block some
vectorisation. Turn them on per build (`build(f, checked=True)`), for a process with
`CINN_PY_CHECKED=1`, or with `set_default_checked(True)`; the test suite runs checked.
"""

from __future__ import annotations

import os

_default: bool | None = None
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("", "0", "false", "no", "off")


def default_checked() -> bool:
    """The process default: `set_default_checked`, else the `CINN_PY_CHECKED` variable, else False."""
    if _default is not None:
        return _default
    env = os.environ.get("CINN_PY_CHECKED", "").strip().lower()
    if env in _TRUE:
        return True
    if env in _FALSE:
        return False
    raise ValueError(f"CINN_PY_CHECKED must be one of {_TRUE + _FALSE[1:]}, got {env!r}")


def set_default_checked(on: bool | None) -> None:
    """Set the process default (None: back to `CINN_PY_CHECKED`)."""
    global _default
    if on is not None and not isinstance(on, bool):
        raise TypeError(f"set_default_checked: expected a bool or None, got {type(on).__name__}")
    _default = on


def resolve_checked(value: object) -> bool:
    """The `checked` build option: True/False, or None for the process default."""
    if value is None:
        return default_checked()
    if not isinstance(value, bool):
        raise TypeError(f"build option checked: expected a bool or None, got {type(value).__name__} "
                        f"{value!r}")
    return value
