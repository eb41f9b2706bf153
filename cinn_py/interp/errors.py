"""Errors raised by the reference interpreter (`run_ir`).

Bad Python arguments (missing inputs, wrong dtype/rank/shape, inconsistent symbolic dims) are
plain `ValueError`/`TypeError`; problems of the IR itself are `InterpError` subclasses.
"""

from __future__ import annotations

from cinn_py.diagnostics import CinnError


class InterpError(CinnError):
    """The reference interpreter cannot execute the IR (bad access, unbound variable, ...)."""


class UnsupportedConstructError(InterpError):
    """The IR uses a construct the serial interpreter cannot give meaning to, such as a
    cross-thread reduce helper (`cinn_block_reduce_sum_fp32`) that needs real GPU threads."""


class OutOfBoundsError(InterpError):
    """A load or store indexes outside its buffer (a schedule bug, or an unguarded tail)."""


class DivisionByZeroError(InterpError):
    """Integer division or remainder by zero (undefined behaviour in C)."""
