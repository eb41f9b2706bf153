"""What `lower` needs to know about a tensor program before building IR, with its validation.

`analyse(name, tensors)` splits the listed tensors into inputs (placeholders) and outputs
(computes), orders every compute reachable from the outputs producers-first, finds the
intermediates (temp buffers) and the symbolic dims (function arguments), and rejects programs
that cannot be lowered, each with a `LoweringError` that says which tensor breaks which rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cinn_py.diagnostics import LoweringError
from cinn_py.frontend import checks
from cinn_py.frontend.compute import ComputeTensor
from cinn_py.ir import Expr, Reduce, Var, default_axis_name


@dataclass(frozen=True)
class Program:
    name: str
    inputs: tuple[ComputeTensor, ...]
    outputs: tuple[ComputeTensor, ...]
    order: tuple[ComputeTensor, ...]
    """Every compute to lower, producers first."""
    temps: tuple[ComputeTensor, ...]
    symbols: tuple[Var, ...]
    user_names: frozenset[str]
    """Tensor, symbolic-dim and reduce-axis names (kept clear of generated names)."""


def analyse(name: str, tensors: Sequence[ComputeTensor]) -> Program:
    """Validate and classify the arguments of `lower(name, tensors)`."""
    if not checks.is_identifier(name):
        raise ValueError(f"lower: function name must be an identifier, got {name!r}")
    listed = _listed(tensors)
    inputs = tuple(t for t in listed if t.is_placeholder)
    outputs = tuple(t for t in listed if not t.is_placeholder)
    if not outputs:
        raise LoweringError(f"lower('{name}'): no computed tensor is listed, so the function has no "
                            "output; list the compute() results after the placeholders")
    order = _topological(outputs, set(map(id, inputs)), name)
    output_ids = set(map(id, outputs))
    temps = tuple(t for t in order if id(t) not in output_ids)
    _check_unique_names(inputs + order, name)
    symbols = _symbols(inputs + outputs + temps)
    _check_symbol_names(symbols, inputs + order, name)
    user = {t.name for t in inputs + order} | {s.name for s in symbols}
    user |= _reduce_axis_names(order)
    return Program(name, inputs, outputs, order, temps, tuple(symbols), frozenset(user))


def _listed(tensors: Sequence[ComputeTensor]) -> list[ComputeTensor]:
    if isinstance(tensors, ComputeTensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError("lower: tensors must be a list of placeholder()/compute() tensors")
    seen: set[int] = set()
    for t in tensors:
        if not isinstance(t, ComputeTensor):
            raise TypeError(f"lower: every argument must be a placeholder() or compute() tensor, "
                            f"got {type(t).__name__}")
        if id(t) in seen:
            raise LoweringError(f"lower: tensor '{t.name}' is listed twice")
        seen.add(id(t))
    return list(tensors)


def _topological(outputs: tuple[ComputeTensor, ...], input_ids: set[int],
                fn: str) -> tuple[ComputeTensor, ...]:
    """Computes reachable from `outputs`, producers before consumers (DFS post-order, in the order
    outputs are listed and producers are first read). Iterative: deep chains must not recurse."""
    order: list[ComputeTensor] = []
    done: set[int] = set()
    for out in outputs:
        stack: list[tuple[ComputeTensor, int]] = [(out, 0)]
        while stack:
            node, k = stack.pop()
            if id(node) in done:
                continue
            if k < len(node.producers):
                stack.append((node, k + 1))
                producer = node.producers[k]
                if producer.is_placeholder:
                    _check_input(producer, node, input_ids, fn)
                elif id(producer) not in done:
                    stack.append((producer, 0))
                continue
            done.add(id(node))
            order.append(node)
    return tuple(order)


def _check_input(producer: ComputeTensor, consumer: ComputeTensor, input_ids: set[int], fn: str) -> None:
    if id(producer) not in input_ids:
        body = checks.excerpt(consumer.body) if consumer.body is not None else None
        raise LoweringError(
            f"lower('{fn}'): compute '{consumer.name}' reads placeholder '{producer.name}', which is not "
            f"in the argument list; pass it to lower() as an input", body)


def _check_unique_names(tensors: tuple[ComputeTensor, ...], fn: str) -> None:
    by_name: dict[str, ComputeTensor] = {}
    for t in tensors:
        other = by_name.setdefault(t.name, t)
        if other is not t:
            raise LoweringError(f"lower('{fn}'): two different tensors are named '{t.name}' "
                                f"({other!r} and {t!r}); tensor names must be unique in a function")


def _symbols(tensors: tuple[ComputeTensor, ...]) -> list[Var]:
    found: dict[str, Var] = {}
    exprs: list[Expr] = [d for t in tensors for d in t.shape]
    exprs += [t.body for t in tensors if t.body is not None]
    for e in exprs:
        for v in checks.symbolic_vars(e):
            found.setdefault(v.name, v)
    return list(found.values())


def _check_symbol_names(symbols: list[Var], tensors: tuple[ComputeTensor, ...], fn: str) -> None:
    max_rank = max((t.ndim for t in tensors), default=0)
    loop_names = {default_axis_name(d) for d in range(max_rank)}
    tensor_names = {t.name for t in tensors}
    reduce_names = _reduce_axis_names(tensors)
    for s in symbols:
        clash = ("a loop axis name" if s.name in loop_names else "a tensor name" if s.name in tensor_names
                 else "a reduce axis name" if s.name in reduce_names else None)
        if clash:
            raise LoweringError(f"lower('{fn}'): symbolic dim '{s.name}' has the same name as {clash}; "
                                "rename it (e.g. S0, S1)")


def _reduce_axis_names(tensors: tuple[ComputeTensor, ...]) -> set[str]:
    return {v.name for t in tensors if isinstance(t.body, Reduce) for v in t.body.reduce_axis}
