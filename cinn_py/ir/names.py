"""Name generation with CINN's rules (`cinn/common/context.cc`, `common/axis.cc`).

`NameGenerator.new(hint)`: the first request for a hint returns it unchanged, later ones return
`hint_0`, `hint_1`, ... A `CompileContext` owns one generator; `reset_name_ids()` (what CINN
tests call `Context::Global().ResetNameId()`) starts a fresh one. Tests get a fresh context per
test through a fixture.

Generated names are per function (differs from CINN's process-global counters): `lower` runs
with a fresh generator and an `IRSchedule` with one seeded by its functions' names
(`NameGenerator.seeded` + `using_names`), so lowering or scheduling the same program twice in
one process prints the same IR.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

# CINN's default loop axis names: i j k, then a..v skipping i/j/k, then doubled letters.
_AXIS_BASE = ("i", "j", "k", "a", "b", "c", "d", "e", "f", "g", "h", "l", "m", "n", "o", "p",
              "q", "r", "s", "t", "u", "v")


def default_axis_name(index: int) -> str:
    """Name of the `index`-th loop axis: i, j, k, a, ..., v, then ii, jj, ..."""
    n = len(_AXIS_BASE)
    return _AXIS_BASE[index % n] * (index // n + 1)


@dataclass
class NameGenerator:
    """Per-hint counters: `new("i0")` -> `i0`, then `i0_0`, `i0_1`, ..."""

    _counters: dict[str, int] = field(default_factory=dict)
    _used: set[str] = field(default_factory=set)
    _loop_names: frozenset[str] = frozenset()
    """Loop var names of the seeding function: `new` may return one as the bare hint (a primitive
    that replaces loop `i` names the first new loop `i`, as CINN does), never as a `hint_<n>`
    candidate: splitting `i` in `for i { for i_1 { ... } }` must not name a new loop `i_1`, which
    would capture the inner loop's uses (Vars compare by name)."""

    def new(self, hint: str) -> str:
        if hint not in self._counters:
            self._counters[hint] = 0
            if hint not in self._used:
                self._used.add(hint)
                return hint
        while True:
            candidate = f"{hint}_{self._counters[hint]}"
            self._counters[hint] += 1
            if candidate not in self._used and candidate not in self._loop_names:
                self._used.add(candidate)
                return candidate

    def new_loop(self, hint: str) -> str:
        """A loop var name made as CINN's fuse makes one (outside the counters): `hint` itself when
        free, recorded as a loop name, so a later `new(hint)` (split) returns it bare once more, then
        `hint_0`, ... as for a lowered loop; a taken hint gets a `new` name."""
        if hint in self._used or hint in self._loop_names:
            self._used.add(hint)
            return self.new(hint)
        self._loop_names = self._loop_names | {hint}
        return hint

    def reserve(self, name: str) -> None:
        """Mark `name` as taken (e.g. names read back by the parser)."""
        self._used.add(name)

    @classmethod
    def seeded(cls, taken: Iterable[str], loop_names: Iterable[str] = ()) -> NameGenerator:
        """A generator for one function: fresh counters, the function's own names taken (its
        loop var names only as suffixed candidates, see `_loop_names`)."""
        return cls(_used=set(taken), _loop_names=frozenset(loop_names))

    @property
    def used(self) -> frozenset[str]:
        return frozenset(self._used)


@dataclass
class CompileContext:
    """State of one compilation session: the name generator (and, later, options)."""

    names: NameGenerator = field(default_factory=NameGenerator)


_current = CompileContext()


def current_context() -> CompileContext:
    return _current


def unique_name(hint: str) -> str:
    """`UniqName(hint)` in the current context."""
    return _current.names.new(hint)


def reset_name_ids() -> None:
    """Start a fresh name generator (CINN `ResetNameId`)."""
    global _current
    _current = CompileContext()


@contextlib.contextmanager
def using_names(names: NameGenerator) -> Iterator[NameGenerator]:
    """Run a block with `names` as the generator (`unique_name` draws from it); afterwards the
    surrounding generator reserves every name it handed out, so code that still draws from
    the surrounding one never reuses them."""
    global _current
    saved, _current = _current, CompileContext(names=names)
    try:
        yield names
    finally:
        _current = saved
        for name in names.used:
            saved.names.reserve(name)


@contextlib.contextmanager
def compile_context(context: CompileContext | None = None) -> Iterator[CompileContext]:
    """Run a block with `context` (default: a fresh one), restoring the previous one afterwards."""
    global _current
    saved, _current = _current, context if context is not None else CompileContext()
    try:
        yield _current
    finally:
        _current = saved
