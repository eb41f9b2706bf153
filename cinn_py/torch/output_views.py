"""How a partition's graph outputs are made from its Program's outputs: view chains at the end of
an output are applied by torch to the computed tensor (`OutputView`), with size arguments
computed from the graph's arguments at each call (`SizeArg`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch  # pyright: ignore[reportMissingImports]
from torch.fx.node import map_aggregate, map_arg  # pyright: ignore[reportMissingImports]

from cinn_py.torch.support import is_size_value, op_name

REPLAYED_VIEWS = frozenset({"aten.view.default", "aten._unsafe_view.default", "aten.reshape.default",
                            "aten.t.default",
                            "aten.transpose.int", "aten.permute.default", "aten.expand.default",
                            "aten.squeeze.dim", "aten.squeeze.dims", "aten.unsqueeze.default",
                            "aten.alias.default",
                            "aten.detach.default", "aten.slice.Tensor", "aten.select.int"})
"""Views a graph output may end with that are applied to the result tensor by torch (`OutputView`)
instead of computed by a kernel: in eager they cost nothing, and the transposes AOT autograd saves
for the backward (`t(x)` for a weight gradient) were a kernel pass with strided stores each (one
fused into the forward's gelu kernel made it 7x slower). A slice or select at an output is a view
of the whole value too, as eager's: its strides are eager's (a kernel computing only the slice
would return it dense)."""


@dataclass(frozen=True)
class OutputView:
    """One graph output: `source` >= 0 is that Program output, -1 - k the graph's k-th argument;
    then `views` (aten op, its arguments after the tensor, its keyword arguments) in order."""

    source: int
    views: tuple[tuple[Any, tuple[Any, ...], dict[str, Any]], ...] = ()

    def __call__(self, outs: Sequence[Any], args: Sequence[Any]) -> Any:
        t = outs[self.source] if self.source >= 0 else args[-1 - self.source]
        sizes: dict[Any, Any] = {}

        def value(a: Any) -> Any:
            return a(args, sizes) if isinstance(a, SizeArg) else a

        for op, rest, kwargs in self.views:
            rest, kwargs = map_aggregate((rest, kwargs), value)
            t = op(t, *rest, **kwargs)
        return t


@dataclass(frozen=True)
class SizeArg:
    """A size argument of an output view that is a node of the graph: a SymInt under dynamic shapes
    (`view(x, [s0, s1*s2])`, its sizes read by `sym_size` and multiplied). It is computed at each
    call from the graph's arguments by those size ops, so the view is still torch's: an output that
    aliases an input must have its real strides (AOT autograd rebuilds it with `as_strided` of the
    input from them)."""

    node: Any
    placeholders: tuple[Any, ...]

    def __call__(self, args: Sequence[Any], sizes: dict[Any, Any]) -> Any:
        if not sizes:
            sizes.update(zip(self.placeholders, args))
        return _evaluated(self.node, sizes)


def _evaluated(node: Any, values: dict[Any, Any]) -> Any:
    if node not in values:
        args, kwargs = map_arg((node.args, node.kwargs), lambda n: _evaluated(n, values))
        values[node] = node.target(*args, **kwargs)
    return values[node]


def _sized(value: Any, placeholders: Sequence[Any]) -> Any:
    """`value` (a view's arguments) with each node in it a `SizeArg`."""
    if isinstance(value, torch.fx.Node):
        return SizeArg(value, tuple(placeholders))
    if isinstance(value, (list, tuple)):
        return type(value)(_sized(v, placeholders) for v in value)
    if isinstance(value, dict):
        return {k: _sized(v, placeholders) for k, v in value.items()}
    return value


def _size_computable(node: Any) -> bool:
    """Whether `node` is a size computed from the graph's arguments alone (`_evaluated` runs it)."""
    if node.op == "placeholder":
        return True
    if node.op != "call_function" or not is_size_value(node.meta.get("val")):
        return False
    found: list[Any] = []
    map_arg((node.args, node.kwargs), found.append)
    return all(n.op == "placeholder" or _size_computable(n) for n in found)


def _replayable(node: Any) -> bool:
    found: list[Any] = []
    map_arg((node.args[1:], node.kwargs), found.append)
    return all(is_size_value(n.meta.get("val")) and _size_computable(n) for n in found)


def _view_chain(node: Any) -> tuple[Any, list[Any]]:
    """The node an output is a chain of views of (the output itself when it is none), and the views
    from that node to the output. A size argument that is a node must be computable from the
    graph's arguments (`SizeArg`)."""
    chain: list[Any] = []
    while (node.op == "call_function" and op_name(node) in REPLAYED_VIEWS and node.args
           and isinstance(node.args[0], torch.fx.Node) and _replayable(node)):
        chain.append(node)
        node = node.args[0]
    return node, chain[::-1]


def output_views(flat: Sequence[Any], placeholders: Sequence[Any], tensor_args: set[Any]
                  ) -> tuple[list[Any], tuple[OutputView, ...]]:
    """The nodes the Program computes and how each graph output is made from them: a view chain at
    the end of an output is left to torch (`REPLAYED_VIEWS`); a view of an argument is taken of the
    argument itself. No views (`()`): the Program computes every output as it is (also when it
    would compute nothing)."""
    computed: list[Any] = []
    views: list[OutputView] = []

    for out in flat:
        base, chain = _view_chain(out)
        steps = tuple((n.target, _sized(tuple(n.args[1:]), placeholders),
                       _sized(dict(n.kwargs), placeholders)) for n in chain)
        if chain and base in tensor_args:
            views.append(OutputView(-1 - placeholders.index(base), steps))
            continue
        if chain and base in computed:  # `x` and a view of it: one Program output
            views.append(OutputView(computed.index(base), steps))
            continue
        views.append(OutputView(len(computed), steps))
        computed.append(base)
    if not computed or all(v.source == k and not v.views for k, v in enumerate(views)):
        return list(flat), ()
    return computed, tuple(views)
