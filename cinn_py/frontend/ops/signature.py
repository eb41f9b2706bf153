"""NetBuilder method signatures, declared with the op (`OpDef.signature`).

An op's NetBuilder method is generated from its `Signature`: CINN's python argument names and
defaults (`cinn.frontend.NetBuilder` pybind), a checker per argument, and how the call becomes
ops (by default one `emit` of the op with the tensor arguments as inputs and the others as
attributes). `NetBuilder.__getattr__` binds the generated method, so no op method is written by
hand in `net_builder.py`:

    register(OpDef("relu6", ..., signature=Signature((tensor("a"), attr("threshold", floating, 6.0)))))
    nb.relu6(x, threshold=3.0)

Every argument error is a `FrontendError` naming the method, the argument, what it expects and
what it got; a call that does not fit the signature (missing or unknown argument) names the
method and prints its signature.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cinn_py.frontend.ops.base import FrontendError, check_dtype

Check = Callable[[str, str, Any], Any]
"""`check(method, argument, value) -> converted value`, raising FrontendError."""

REQUIRED = inspect.Parameter.empty


class Kind:
    """How an argument enters the op: an input tensor, a list of input tensors, a tensor or a
    Python number (binary operands), or an attribute."""

    TENSOR = "tensor"
    TENSORS = "tensors"
    OPERAND = "operand"
    ATTR = "attr"


@dataclass(frozen=True)
class Param:
    name: str
    kind: str
    check: Check | None = None
    default: Any = REQUIRED
    optional_tensor: bool = False
    """A TENSOR argument that may be None (an absent optional input such as layer_norm's beta)."""


def tensor(name: str, optional: bool = False) -> Param:
    return Param(name, Kind.TENSOR, default=None if optional else REQUIRED, optional_tensor=optional)


def tensors(name: str) -> Param:
    return Param(name, Kind.TENSORS)


def operand(name: str) -> Param:
    return Param(name, Kind.OPERAND)


def attr(name: str, check: Check, default: Any = REQUIRED) -> Param:
    return Param(name, Kind.ATTR, check, default)


@dataclass(frozen=True)
class OpCall:
    """One NetBuilder method call: the op, the method name the user called, the bound arguments
    (defaults applied, attribute arguments checked)."""

    op: str
    method: str
    args: dict[str, Any]


BuildFn = Callable[[Any, OpCall], Any]
"""`build(builder, call) -> Variable`: turns a call into ops (default: `NetBuilder.build_op`)."""
AttrsFn = Callable[[Sequence[Any], dict[str, Any]], dict[str, Any]]
"""`attrs(input_types, attrs) -> attrs`: normalises attributes that depend on the inputs' shapes
(negative axes, an empty `dim` meaning all axes), raising FrontendError."""


@dataclass(frozen=True)
class Signature:
    params: tuple[Param, ...]
    attrs: AttrsFn | None = None
    build: BuildFn | None = None
    methods: tuple[str, ...] = ()
    """Method names; empty: the op's name. CINN aliases (`max` for `maximum`) are further names."""
    doc: str = ""
    name_param: str | None = None
    """The argument that names the output variable (CINN's `name` of fill_constant), if any."""
    extra: Mapping[str, Any] = field(default_factory=dict)


# -- argument checkers ----------------------------------------------------------------------------------
def _fail(method: str, arg: str, expected: str, value: Any) -> FrontendError:
    return FrontendError(f"{method}: argument '{arg}' must be {expected}, got {value!r} "
                         f"({type(value).__name__})")


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def integer(method: str, arg: str, value: Any) -> int:
    if not _is_int(value):
        raise _fail(method, arg, "an int", value)
    return int(value)


def floating(method: str, arg: str, value: Any) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise _fail(method, arg, "a number", value)
    return float(value)


def number(method: str, arg: str, value: Any) -> int | float | bool:
    """A Python scalar kept as given (bool, int or float; converted to the dtype later)."""
    if isinstance(value, np.generic):
        value = value.item()
    if not isinstance(value, (bool, int, float)):
        raise _fail(method, arg, "a number", value)
    return value


def boolean(method: str, arg: str, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise _fail(method, arg, "a bool", value)
    return bool(value)


def int_list(method: str, arg: str, value: Any) -> tuple[int, ...]:
    """A list/tuple of ints (a single int is accepted as a one-element list, as pybind does not,
    but CINN's python tests pass `axis=1` to list arguments often enough)."""
    if _is_int(value):
        return (int(value),)
    if not isinstance(value, (list, tuple)) or not all(_is_int(v) for v in value):
        raise _fail(method, arg, "a list of ints", value)
    return tuple(int(v) for v in value)


def dtype_arg(method: str, arg: str, value: Any) -> Any:
    try:
        return check_dtype(value, method)
    except TypeError as exc:
        reason = str(exc).split(": ", 1)[-1]  # check_dtype's message starts with the op name
        raise FrontendError(f"{method}: argument '{arg}': {reason}") from None


def string(method: str, arg: str, value: Any) -> str:
    if not isinstance(value, str):
        raise _fail(method, arg, "a str", value)
    return value


def one_of(*choices: str) -> Check:
    def check(method: str, arg: str, value: Any) -> str:
        if value not in choices:
            raise _fail(method, arg, "one of " + ", ".join(repr(c) for c in choices), value)
        return value
    return check


def optional(check: Check) -> Check:
    def wrapped(method: str, arg: str, value: Any) -> Any:
        return None if value is None else check(method, arg, value)
    return wrapped


def any_value(method: str, arg: str, value: Any) -> Any:
    return value


# -- method generation ----------------------------------------------------------------------------------
def python_signature(sig: Signature) -> inspect.Signature:
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    params += [inspect.Parameter(p.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=p.default)
               for p in sig.params]
    return inspect.Signature(params)


def make_method(op_name: str, method_name: str, sig: Signature, build: BuildFn) -> Callable[..., Any]:
    """The NetBuilder method `method_name` of op `op_name` (bound by `NetBuilder.__getattr__`):
    binds the call to the signature, checks the attribute arguments, then `build`s."""
    py_sig = python_signature(sig)

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            bound = py_sig.bind(self, *args, **kwargs)
        except TypeError as exc:
            shown = str(py_sig).replace("(self, ", "(", 1).replace("(self)", "()")
            raise FrontendError(f"{method_name}: {exc}; expected {method_name}{shown}") from None
        bound.apply_defaults()
        values = dict(bound.arguments)
        values.pop("self")
        return build(self, OpCall(op_name, method_name, check_args(method_name, sig, values)))

    method.__name__ = method.__qualname__ = method_name
    method.__doc__ = sig.doc or f"The `{op_name}` op (see cinn_py/frontend/ops)."
    method.__signature__ = py_sig  # type: ignore[attr-defined]
    return method


def check_args(method: str, sig: Signature, values: dict[str, Any]) -> dict[str, Any]:
    """The attribute arguments, checked and converted (tensor arguments are left as given)."""
    out = dict(values)
    for p in sig.params:
        if p.kind == Kind.ATTR and p.check is not None:
            out[p.name] = p.check(method, p.name, values[p.name])
    return out
