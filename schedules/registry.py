"""The registry of schedule primitives and trace step kinds (CINN `ScheduleDesc`'s step registry).

A primitive registers itself: `@primitive` on the pure function (`split(func, loop: For, factors)
-> tuple[LoweredFunc, list[For]]`) derives everything the schedule and the trace need from its
signature:

- each parameter's kind from its annotation: `For` is a loop handle, `ScheduleBlockRealize` a
  block (handle or name), `Stmt` either, `Sequence[For]` a list of loop handles; anything else is
  a plain value recorded as a trace attribute; names in `from_schedule` are filled from the
  `IRSchedule` (its `gpu_limits`) and not recorded;
- what the call returns from the return annotation: `LoweredFunc` alone (nothing), or a pair
  whose second item is a loop, a list of loops, a block (returned as handles) or any other value
  (returned as is, not a handle: `rfactor`'s Tensor);
- a primitive without a handle parameter applies to every function of the schedule.

`IRSchedule` declares one typed method per primitive (`@generated`) whose body the registry
supplies, and hand-writes only the queries (`@recorded`). Each method is one trace `StepKind`:
its parameters in call order (handles go to `inputs`, other values to `attrs`) and whether it
returns no handle, one, or a list. Replay and the Python printer read `STEP_KINDS`, so a kind's
parameters are the method's keyword arguments.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from cinn_py.ir import For, LoweredFunc, ScheduleBlockRealize, Stmt

__all__ = [
    "PRIMITIVES", "STEP_KINDS", "Param", "ParamKind", "Primitive", "ResultKind", "Returns", "StepKind",
    "primitive", "register", "step_kind",
]

Returns = Literal["none", "one", "list"]
ParamKind = Literal["loop", "loops", "block", "node", "value", "schedule"]
ResultKind = Literal["none", "loop", "loops", "block", "value"]
Fn = TypeVar("Fn", bound=Callable[..., Any])

_HANDLE_KINDS: frozenset[ParamKind] = frozenset({"loop", "loops", "block", "node"})
_RETURNS: dict[ResultKind, Returns] = {"none": "none", "value": "none", "loop": "one", "block": "one",
                                       "loops": "list"}


@dataclass(frozen=True)
class StepKind:
    """One recordable schedule call: name, ordered parameters, and result shape."""

    name: str
    params: tuple[str, ...]
    returns: Returns


@dataclass(frozen=True)
class Param:
    """A primitive parameter (after `func`): its name, kind and default (`inspect._empty` if none)."""

    name: str
    kind: ParamKind
    default: Any = inspect.Parameter.empty

    @property
    def is_handle(self) -> bool:
        return self.kind in _HANDLE_KINDS


@dataclass(frozen=True)
class Primitive:
    """A registered schedule primitive: the pure function and what its signature says."""

    name: str
    fn: Callable[..., Any]
    params: tuple[Param, ...]
    result: ResultKind
    from_schedule: Mapping[str, str]

    @property
    def step(self) -> StepKind:
        recorded = tuple(p.name for p in self.params if p.kind != "schedule")
        return StepKind(self.name, recorded, _RETURNS[self.result])

    @property
    def handle_params(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.is_handle)


STEP_KINDS: dict[str, StepKind] = {}
PRIMITIVES: dict[str, Primitive] = {}


def register(kind: StepKind) -> StepKind:
    """Add (or re-declare identically) a step kind."""
    existing = STEP_KINDS.get(kind.name)
    if existing is not None and existing != kind:
        raise ValueError(f"step kind '{kind.name}' is already registered as {existing}")
    STEP_KINDS[kind.name] = kind
    return kind


def step_kind(name: str) -> StepKind:
    """The kind called `name`; ValueError listing the known kinds otherwise."""
    try:
        return STEP_KINDS[name]
    except KeyError:
        raise ValueError(f"unknown schedule step kind '{name}' (known: "
                         f"{', '.join(sorted(STEP_KINDS))})") from None


@typing.overload
def primitive(fn: Fn, /) -> Fn: ...


@typing.overload
def primitive(*, from_schedule: Mapping[str, str]) -> Callable[[Fn], Fn]: ...


def primitive(fn: Callable[..., Any] | None = None, /, *,
              from_schedule: Mapping[str, str] | None = None) -> Any:
    """Register the pure primitive `fn` under its name (usable bare or with `from_schedule`,
    which maps a parameter to the `IRSchedule` attribute that supplies it)."""
    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        prim = _derive(f, dict(from_schedule or {}))
        if prim.name in PRIMITIVES and PRIMITIVES[prim.name].fn is not f:
            raise ValueError(f"schedule primitive '{prim.name}' is registered twice "
                             f"({PRIMITIVES[prim.name].fn.__module__} and {f.__module__})")
        PRIMITIVES[prim.name] = prim
        register(prim.step)
        return f

    return decorate(fn) if fn is not None else decorate


def _derive(fn: Callable[..., Any], from_schedule: dict[str, str]) -> Primitive:
    name = getattr(fn, "__name__", repr(fn))
    hints = typing.get_type_hints(fn)
    parameters = list(inspect.signature(fn).parameters.values())
    if not parameters or hints.get(parameters[0].name) is not LoweredFunc:
        raise TypeError(f"@primitive {name}: the first parameter must be the LoweredFunc")
    params = []
    for p in parameters[1:]:
        if p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            raise TypeError(f"@primitive {name}: parameter '{p.name}' must be a plain named parameter")
        kind: ParamKind = "schedule" if p.name in from_schedule else _param_kind(hints.get(p.name))
        params.append(Param(p.name, kind, p.default))
    unknown = set(from_schedule) - {p.name for p in params}
    if unknown:
        raise TypeError(f"@primitive {name}: from_schedule names no parameter {sorted(unknown)}")
    result = _result_kind(name, hints.get("return"))
    prim = Primitive(name, fn, tuple(params), result, from_schedule)
    if not prim.handle_params and result != "none":
        raise TypeError(f"@primitive {name}: a primitive without handle parameters runs on every function "
                        "and must return only the LoweredFunc")
    return prim


def _param_kind(hint: Any) -> ParamKind:
    if hint is For:
        return "loop"
    if hint is ScheduleBlockRealize:
        return "block"
    if hint is Stmt:
        return "node"
    if _is_sequence_of(hint, For):
        return "loops"
    return "value"


def _result_kind(name: str, hint: Any) -> ResultKind:
    if hint is LoweredFunc:
        return "none"
    args = typing.get_args(hint)
    if typing.get_origin(hint) is not tuple or len(args) != 2 or args[0] is not LoweredFunc:
        raise TypeError(f"@primitive {name}: must return LoweredFunc or tuple[LoweredFunc, <result>], "
                        f"not {hint}")
    kind = _param_kind(args[1])
    if kind == "loop" or kind == "loops" or kind == "block":
        return kind
    return "value"


def _is_sequence_of(hint: Any, item: type) -> bool:
    origin = typing.get_origin(hint)
    return origin in (list, tuple, Sequence) and typing.get_args(hint)[:1] == (item,)
