"""Schedule traces: record, serialise (JSON), print as Python, replay (CINN `ScheduleDesc`).

Every public `IRSchedule` call appends a `Step`: its kind, `inputs` (parameters that held
handles, recorded as the names `e0, e1, ...` of earlier outputs, or lists of them), `attrs`
(every other parameter, JSON-encoded; index expressions as tagged trees) and `outputs` (names
given to the returned handles in creation order). `replay(trace, func)` re-executes the steps on
a fresh function, mapping names to the new handles, and checks that every step returns as many
handles as when it was recorded.
"""

from __future__ import annotations

import dataclasses
import enum
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cinn_py.ir import (
    BINARY_OPS, Cast, DType, Expr, FloatImm, IntImm, Minus, Not, Select, StringImm, UIntImm, Var, dtype_of,
)
from schedules.errors import InvalidArgumentError
from schedules.registry import step_kind

if TYPE_CHECKING:
    from schedules.schedule import IRSchedule

__all__ = ["Step", "Trace", "replay", "encode_value", "decode_value", "python_literal"]

# Expression nodes a trace may carry (index arithmetic over symbolic dims).
_EXPR_NODES: dict[str, type] = {cls.__name__: cls for cls in (
    IntImm, UIntImm, FloatImm, StringImm, Var, Cast, Minus, Not, Select,
    *BINARY_OPS)}


@dataclass
class Step:
    """One recorded call."""

    kind: str
    inputs: dict[str, str | list[str]] = field(default_factory=dict)
    attrs: dict[str, Any] = field(default_factory=dict)
    outputs: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "inputs": self.inputs, "attrs": self.attrs, "outputs": self.outputs}


# --------------------------------------------------------------------------------------------
# Value encoding
# --------------------------------------------------------------------------------------------
def encode_value(value: Any) -> Any:
    """A JSON-safe form of an attribute value (Exprs as `{"expr": ...}` trees)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [encode_value(v) for v in value]
    if isinstance(value, Expr):
        return {"expr": _encode_expr(value)}
    raise TypeError(f"a schedule trace cannot record a value of type {type(value).__name__}: {value!r}")


def _encode_expr(e: Any) -> Any:
    if isinstance(e, DType):
        return {"dtype": str(e)}
    if isinstance(e, enum.Enum):
        return e.value
    if e is None or isinstance(e, (bool, int, float, str)):
        return e
    name = type(e).__name__
    if name not in _EXPR_NODES:
        raise TypeError(f"a schedule trace cannot record the expression node {name}: {e}")
    out: dict[str, Any] = {"node": name}
    for f in dataclasses.fields(e):
        out[f.name] = _encode_expr(getattr(e, f.name))
    return out


def decode_value(value: Any) -> Any:
    """Inverse of `encode_value` (lists stay lists)."""
    if isinstance(value, list):
        return [decode_value(v) for v in value]
    if isinstance(value, dict):
        if set(value) != {"expr"}:
            raise ValueError(f"malformed trace attribute {value!r}")
        return _decode_expr(value["expr"])
    return value


def _decode_expr(data: Any) -> Any:
    if not isinstance(data, dict):
        return data
    if "dtype" in data and len(data) == 1:
        return dtype_of(data["dtype"])
    cls = _EXPR_NODES.get(data.get("node", ""))
    if cls is None:
        raise ValueError(f"malformed expression in trace: {data!r}")
    return cls(**{k: _decode_expr(v) for k, v in data.items() if k != "node"})


def python_literal(value: Any) -> str:
    """Python source that rebuilds an (unencoded) attribute value."""
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(python_literal(v) for v in value) + "]"
    if isinstance(value, Expr):
        return _expr_source(value)
    return repr(value)


def _expr_source(e: Any) -> str:
    if isinstance(e, DType):
        return f"dt.{'bool_' if e.is_bool else str(e)}"
    if isinstance(e, enum.Enum):
        return f"{type(e).__name__}.{e.name}"
    if not isinstance(e, Expr):
        return repr(e)
    fields = dataclasses.fields(e)
    required = [f for f in fields if f.default is dataclasses.MISSING]
    parts = [_expr_source(getattr(e, f.name)) for f in required]
    for f in fields:
        value = getattr(e, f.name)
        if f.default is not dataclasses.MISSING and value != f.default:
            parts.append(f"{f.name}={_expr_source(value)}")
    return f"ir.{type(e).__name__}({', '.join(parts)})"


# --------------------------------------------------------------------------------------------
# Trace
# --------------------------------------------------------------------------------------------
@dataclass
class Trace:
    """The ordered steps of a schedule."""

    steps: list[Step] = field(default_factory=list)
    _counter: int = 0

    def __len__(self) -> int:
        return len(self.steps)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.steps)

    def new_name(self) -> str:
        name = f"e{self._counter}"
        self._counter += 1
        return name

    def append(self, step: Step) -> None:
        self.steps.append(step)

    def to_json(self, indent: int | None = 1) -> str:
        """`{"version": 1, "steps": [...]}`."""
        return json.dumps({"version": 1, "steps": [s.to_dict() for s in self.steps]}, indent=indent)

    @classmethod
    def from_json(cls, text: str) -> Trace:
        """Parse `to_json` output; ValueError on a malformed document."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"schedule trace is not valid JSON: {exc}") from None
        if not isinstance(data, dict) or data.get("version") != 1 or not isinstance(data.get("steps"), list):
            raise ValueError("schedule trace JSON must be {\"version\": 1, \"steps\": [...]}")
        trace = cls()
        for raw in data["steps"]:
            if not isinstance(raw, dict) or not isinstance(raw.get("kind"), str):
                raise ValueError(f"malformed trace step {raw!r}")
            step_kind(raw["kind"])
            trace.steps.append(Step(raw["kind"], dict(raw.get("inputs", {})), dict(raw.get("attrs", {})),
                                    list(raw.get("outputs", []))))
        trace._counter = sum(len(s.outputs) for s in trace.steps)
        return trace

    def as_python(self, func_var: str = "func") -> str:
        """A script that replays the trace on the LoweredFunc/Module bound to `func_var`;
        after it runs, `sch` is the scheduled IRSchedule."""
        lines = ["from cinn_py import ir", "from cinn_py.ir import dtype as dt",
                 "from schedules import IRSchedule",
                 "", f"sch = IRSchedule({func_var})"]
        for step in self.steps:
            lines.append(_step_source(step))
        return "\n".join(lines) + "\n"

    def __str__(self) -> str:
        return self.as_python()


def _step_source(step: Step) -> str:
    kind = step_kind(step.kind)
    args = []
    for param in kind.params:
        if param in step.inputs:
            ref = step.inputs[param]
            args.append(f"{param}=" + ("[" + ", ".join(ref) + "]" if isinstance(ref, list) else ref))
        elif param in step.attrs:
            args.append(f"{param}={python_literal(decode_value(step.attrs[param]))}")
    call = f"sch.{step.kind}({', '.join(args)})"
    if kind.returns == "none" or not step.outputs:
        return call
    if kind.returns == "one":
        return f"{step.outputs[0]} = {call}"
    return f"{', '.join(step.outputs)}{',' if len(step.outputs) == 1 else ''} = {call}"


def replay(trace: Trace, func: Any) -> IRSchedule:
    """Re-run `trace` on a fresh `func` (LoweredFunc or Module) and return the new schedule."""
    from schedules.schedule import IRSchedule  # noqa: PLC0415 (schedule imports this module)

    sch = IRSchedule(func)
    env: dict[str, Any] = {}
    for number, step in enumerate(trace.steps):
        kind = step_kind(step.kind)
        kwargs: dict[str, Any] = {}
        for param, ref in step.inputs.items():
            names = ref if isinstance(ref, list) else [ref]
            missing = [n for n in names if n not in env]
            if missing:
                raise InvalidArgumentError(
                    f"replay: step {number} ({step.kind}) uses {', '.join(missing)} before it is defined")
            kwargs[param] = [env[n] for n in names] if isinstance(ref, list) else env[ref]
        for param, value in step.attrs.items():
            kwargs[param] = decode_value(value)
        result = getattr(sch, kind.name)(**kwargs)
        results = [] if kind.returns == "none" else [result] if kind.returns == "one" else list(result)
        if len(results) != len(step.outputs):
            raise InvalidArgumentError(
                f"replay: step {number} ({step.kind}) returned {len(results)} handle(s), "
                f"but the trace recorded {len(step.outputs)}")
        env.update(zip(step.outputs, results))
    return sch
