"""How `IRSchedule` methods become recorded trace steps: `generated` gives a declared method
(signature and docstring only) the body of the primitive registered under its name, after checking
the declaration matches the primitive's recorded parameters and defaults; `recorded` records a
hand-written query method. Only outermost calls are recorded (a primitive that uses another one
internally records one step).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from cinn_py.ir import using_names
from schedules.registry import PRIMITIVES, Primitive, StepKind, register
from schedules.state import is_handle

if TYPE_CHECKING:
    from schedules.schedule import IRSchedule

F = TypeVar("F", bound=Callable[..., Any])


def recorded(method: F) -> F:
    """Record calls of a hand-written (query) method as trace steps; the step kind is the
    method's name, parameters and returned handles (`list[...]`, one handle, or `None`)."""
    signature = inspect.signature(method)
    returns = str(signature.return_annotation)
    kind = register(StepKind(method.__name__, tuple(signature.parameters)[1:],
                             "none" if returns == "None" else "list" if returns.startswith("list[")
                             else "one"))
    return _recording(kind, signature, method, method)


def generated(method: F) -> F:
    """Give a declared `IRSchedule` method (signature and docstring only) the body of the primitive
    registered under its name: resolve the handles to the current nodes, run the pure function,
    commit the rebuilt function, return the new nodes as handles, record a trace step."""
    prim = PRIMITIVES.get(method.__name__)
    if prim is None:
        raise TypeError(f"IRSchedule.{method.__name__}: no @primitive of that name is registered")
    signature = inspect.signature(method)
    _check_declaration(prim, signature)

    def body(self: IRSchedule, **params: Any) -> Any:
        return self._apply(PRIMITIVES[prim.name], params)  # looked up per call: tests may swap one in

    return _recording(prim.step, signature, body, method)


def _check_declaration(prim: Primitive, signature: inspect.Signature) -> None:
    """The declared method takes the primitive's recorded parameters, in order, with its defaults."""
    declared = list(signature.parameters.values())[1:]
    if tuple(p.name for p in declared) != prim.step.params:
        raise TypeError(f"IRSchedule.{prim.name} declares ({', '.join(p.name for p in declared)}) but the "
                        f"primitive takes ({', '.join(prim.step.params)})")
    defaults = {p.name: p.default for p in prim.params}
    for p in declared:
        if defaults[p.name] is not inspect.Parameter.empty and p.default != defaults[p.name]:
            raise TypeError(f"IRSchedule.{prim.name}: '{p.name}' defaults to {p.default!r}, the primitive's "
                            f"default is {defaults[p.name]!r}")


def _recording(kind: StepKind, signature: inspect.Signature, body: Callable[..., Any], declared: F) -> F:
    """`body` called with the bound arguments; outermost calls only are recorded (a primitive
    that uses another one internally records one step)."""

    @functools.wraps(declared)
    def wrapper(self: IRSchedule, *args: Any, **kwargs: Any) -> Any:
        try:
            bound = signature.bind(self, *args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{kind.name}: {exc}") from None
        bound.apply_defaults()
        params = dict(list(bound.arguments.items())[1:])
        if self._depth:
            return body(self, **params)
        step = self._encode_step(kind.name, kind.params, params)
        self._current_step = f"{kind.name} (trace step {len(self.trace)})"
        self._depth += 1
        try:
            with using_names(self._names):
                result = body(self, **params)
        finally:
            self._depth -= 1
        outputs = [] if result is None else list(result) if isinstance(result, list) else [result]
        for out in outputs:
            if is_handle(out):
                out.rv_name = self.trace.new_name()
                step.outputs.append(out.rv_name)
        self.trace.append(step)
        return result

    return wrapper  # type: ignore[return-value]
