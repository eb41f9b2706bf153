"""Which FX nodes the torch backend converts: the partitioner's test (`unsupported_reason`) and
the specs of a partition's inputs.

A node converts when its op has a converter (cinn_py/torch/converters/) that accepts this call,
every tensor it reads or produces has a dtype NetBuilder takes and sizes that are ints or
symbolic dims cinn-py expresses (sums, products and powers of torch's symbols, exact floor
divisions), and a symbolic scalar operand only where the op takes it as a 0-d input
(`SCALAR_OPERAND_OPS`).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any

import torch  # pyright: ignore[reportMissingImports]

from cinn_py.diagnostics import CinnError
from cinn_py.frontend.ops.base import SUPPORTED_DTYPES
from cinn_py.torch.converters import CONVERTERS
from cinn_py.torch.index_guards import unchecked_reason
from cinn_py.torch.layout import InputLayout, input_layout
from cinn_py.torch.symbolic import dim_reason, is_symbolic

# Ops that only re-view their input: a partition of these alone is not worth a kernel launch.
VIEW_OPS = frozenset({"aten.view.default", "aten._unsafe_view.default", "aten.reshape.default",
                      "aten.t.default",
                      "aten.transpose.int", "aten.permute.default", "aten.expand.default",
                      "aten.detach.default",
                      "aten.alias.default", "aten.squeeze.dim", "aten.squeeze.dims", "aten.unsqueeze.default",
                      "aten.clone.default", "_operator.getitem"})


class ConversionError(CinnError):
    """An FX node could not be expressed as NetBuilder ops (the op, the node and the mismatch)."""


@dataclass(frozen=True)
class TensorSpec:
    """dtype name (NetBuilder's), shape and device of one tensor; a symbolic size is a torch SymInt."""

    dtype: str
    shape: tuple[Any, ...]
    device: str
    layout: InputLayout | None = None
    """How a strided tensor (a transposed, expanded or sliced view) enters the Program in place
    (cinn_py/torch/layout.py); None: it is row-major."""

    @staticmethod
    def of(value: Any) -> TensorSpec:
        shape = tuple(s if is_symbolic(s) else int(s) for s in value.shape)
        return TensorSpec(str(value.dtype).removeprefix("torch."), shape, value.device.type,
                          input_layout(value))


@dataclass(frozen=True)
class SymIntSpec:
    """A SymInt placeholder (a size torch passes as an int argument)."""

    value: Any


InputSpec = TensorSpec | SymIntSpec


def input_spec(value: Any) -> InputSpec:
    """The spec of a placeholder's example value (a fake tensor or a SymInt)."""
    return TensorSpec.of(value) if isinstance(value, torch.Tensor) else SymIntSpec(value)


def op_name(node: Any) -> str:
    """`aten.add.Tensor`, `_operator.getitem`, ...: the name reports and converters use."""
    target = node.target
    return "_operator.getitem" if target is operator.getitem else str(target)


def tensors_of(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in tensors_of(v)]
    return [value] if isinstance(value, torch.Tensor) else []


def _value_reason(value: Any) -> str | None:
    names = {d.scalar_name() for d in SUPPORTED_DTYPES}
    for t in tensors_of(value):
        spec_dtype = str(t.dtype).removeprefix("torch.")
        if spec_dtype not in names:
            return f"dtype {spec_dtype}"
        reason = next((r for r in map(dim_reason, t.shape) if r is not None), None)
        if reason is not None:
            return reason
        if t.device.type not in ("cpu", "cuda"):
            return f"device {t.device.type}"
    return None


def is_size_value(value: Any) -> bool:
    """A SymInt/SymFloat/SymBool or Python number: the value of a size computation, not a tensor."""
    return isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool, int, float, bool))


SCALAR_OPERAND_OPS = frozenset(
    f"aten.{op}.{overload}" for op
    in ("add", "sub", "rsub", "mul", "div", "maximum", "minimum", "gt", "ge", "lt",
                                       "le", "eq", "ne") for overload in ("Tensor", "Scalar")
) | {"aten.scalar_tensor.default", "aten.full.default"}
"""Ops that take a SymInt operand as a number (a 0-d int64 input of the Program, `is_scalar_use`)."""


def _symbolic_scalar_reason(node: Any) -> str | None:
    """Sizes may be symbolic (lists of SymInts: view/expand/full sizes, taken from the fake
    tensors); a SymInt used as a number only by the ops of `SCALAR_OPERAND_OPS`, a SymFloat or
    SymBool by none (NetBuilder's constants are numbers)."""
    for arg in (*node.args, *node.kwargs.values()):
        value = arg.meta.get("val") if isinstance(arg, torch.fx.Node) else arg
        if is_symbolic(value) and isinstance(arg, torch.fx.Node) and op_name(node) in SCALAR_OPERAND_OPS:
            continue
        if isinstance(value, (torch.SymFloat, torch.SymBool)) or is_symbolic(value):
            label = arg.name if isinstance(arg, torch.fx.Node) else "argument"
            return f"scalar {label} = {value} is symbolic (only sizes may be)"
    return None


def is_scalar_use(node: Any) -> bool:
    """Whether some user of the placeholder `node` takes it as an operand, not within a size list."""
    return any(node in (*user.args, *user.kwargs.values()) for user in node.users)


def unsupported_reason(node: Any) -> str | None:
    """Why `node` stays in eager PyTorch, or None when it converts."""
    if node.op != "call_function":
        return f"{node.op} node"
    if node.target is operator.getitem:
        return unsupported_reason(node.args[0])
    rule = CONVERTERS.get(op_name(node))
    if rule is None:
        return _effectful_reason(node) or "no converter"
    for value in (node.meta.get("val"), *[a.meta.get("val") for a in node.all_input_nodes]):
        reason = _value_reason(value)
        if reason is not None:
            return reason
    if node.meta.get("val") is None:
        return "no fake-tensor metadata"
    reason = _symbolic_scalar_reason(node)
    if reason is not None:
        return reason
    reason = rule.check(*node.args, **node.kwargs) if rule.check is not None else None
    return reason if reason is not None else unchecked_reason(node, op_name(node))


def _effectful_reason(node: Any) -> str | None:
    """A `with_effects` node (an op with side effects, ordered by a token: the error checks of
    LAPACK results, `_print`) is named by the op it calls: reports say what stayed eager."""
    if op_name(node) != "with_effects" or len(node.args) < 2:
        return None
    return f"no converter for the effectful call of {node.args[1]}"
