"""Room on Python's stack for deeply nested statements (`deep_nesting`).

Expressions are kept shallow (`MAX_EXPR_DEPTH`; `split` leaves unit loops out of its binding),
but a loop nest is as deep as the schedule makes it: `split(i, [1] * 999 + [-1])` gives 1,000
nested `For`s, and every visitor, printer, parser and codegen pass recurses a few frames per
level. Python's default limit (1,000 frames) would stop them near 200 loops. The entry points
that walk a whole function (printing, parsing, schedule primitives, the pipeline) run under
`deep_nesting`, which raises the limit to `NEST_RECURSION_LIMIT` for the call and restores it
after the outermost such call returns. Python 3.11+ runs Python-to-Python calls without growing
the C stack, so the frames cost heap, not native stack (a 3,000-deep nest prints and parses).
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

NEST_RECURSION_LIMIT = 50_000
"""Python frames allowed under `deep_nesting` (~10 frames per nested loop: >= 4,000 loops)."""

F = TypeVar("F", bound=Callable[..., Any])
_lock = threading.Lock()
_active = 0
_saved = 0


@contextmanager
def nesting_room() -> Iterator[None]:
    """Python's recursion limit at least `NEST_RECURSION_LIMIT` inside the block (re-entrant and
    shared by threads: the outermost exit restores the limit found at the outermost entry)."""
    global _active, _saved  # noqa: PLW0603 - the limit is process-wide state
    with _lock:
        if _active == 0:
            _saved = sys.getrecursionlimit()
            if _saved < NEST_RECURSION_LIMIT:
                sys.setrecursionlimit(NEST_RECURSION_LIMIT)
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0 and sys.getrecursionlimit() == max(_saved, NEST_RECURSION_LIMIT):
                sys.setrecursionlimit(_saved)


def deep_nesting(fn: F) -> F:
    """Run `fn` under `nesting_room` (for entry points that walk a whole function)."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with nesting_room():
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
