"""The error tree of cinn-py. Every error a user can trigger is a `CinnError` subclass.

Messages name the component (primitive, op, pass), the rule, and expected vs actual; `detail`
carries an IR excerpt (with the offending node marked) shown under the message.
"""

from __future__ import annotations


class CinnError(Exception):
    """Base class of all cinn-py errors."""

    def __init__(self, message: str, detail: str | None = None) -> None:
        self.message = message
        self.detail = detail
        super().__init__(message if not detail else f"{message}\n{detail}")


class IRConstructionError(CinnError, TypeError):
    """An IR node was built with inconsistent fields."""


class VerifyError(CinnError):
    """The IR verifier found a malformed tree."""


class ParseError(CinnError, ValueError):
    """The IR text could not be parsed; carries line and column (1-based)."""

    def __init__(self, message: str, line: int, col: int, source_line: str = "") -> None:
        self.line, self.col = line, col
        caret = f"\n  {source_line}\n  {' ' * (col - 1)}^" if source_line else ""
        super().__init__(f"{line}:{col}: {message}", caret.lstrip("\n") or None)


class LoweringError(CinnError):
    """The compute DSL program cannot be lowered (bad shapes, dtypes, axes)."""


class ConstantRangeError(LoweringError, OverflowError):
    """A Python int constant does not fit the integer dtype it is converted to (it would wrap)."""


class ScheduleError(CinnError):
    """A schedule primitive's precondition does not hold (base of one class per rule).

    `primitive` names the primitive (or tactic) that raised it; the message starts with it.
    """

    primitive: str

    def __init__(self, message: str, detail: str | None = None, primitive: str = "") -> None:
        super().__init__(message, detail)
        self.primitive = primitive


class OutOfBoundsAccessError(CinnError, IndexError):
    """A checked kernel was about to read or write outside a tensor (the access did not happen)."""


class CompileError(CinnError):
    """Code generation or the backend compiler (LLVM, NVRTC) failed."""


class TuningDatabaseError(CinnError, ValueError):
    """A tuning database record holds a value the tactics cannot use (wrong type or range)."""
