"""Range checks of data-dependent indices in torch graphs: out-of-range raises as in eager.

A compiled gather reads `x[index[i]]` without a check (an index of 2**36 faults, one just past
the end returns heap contents), and NetBuilder's scatters search the index list per output
element, so an out-of-range index is silently dropped. Eager PyTorch raises for both. Each
index operand of embedding, index_select, gather, x[idx] (aten.index), index_put_, scatter_add,
index_add and embedding_dense_backward is therefore checked before the compiled graph runs:

- the index must be computable from the graph's arguments and constants by cheap torch ops
  (views, slices, casts, gathers of a buffer, integer add/sub/mul, arange/full: how ids, positions
  and token types are made); the guard evaluates that small sub-graph on the arguments (usually
  the index is an argument as it is) and takes the smallest and largest values with one fused
  `torch.aminmax` on the host, compared with the bound (static, or the indexed input's size at
  call time); an index of constants is checked when the graph is compiled;
- any other index keeps its index op in eager PyTorch (which checks it): `unsupported_reason`
  reports why ("computed in the graph").

The error is the one eager raises (IndexError, or RuntimeError for gather/scatter_add/index_add)
with the op, the offending value, the dimension and its size. `CINN_PY_TORCH_INDEX_CHECKS=0`
turns the checks off (indices are then trusted, as in a compiled kernel without bounds checks).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

ENV_VAR = "CINN_PY_TORCH_INDEX_CHECKS"

# ops an index may pass through between a graph input (or a constant) and its use; the guard
# evaluates them on the argument (views copy nothing) and checks exactly the values the op sees
_REPLAYABLE = frozenset({
    "aten.view.default", "aten._unsafe_view.default", "aten.reshape.default", "aten.clone.default",
    "aten.alias.default", "aten.expand.default", "aten.squeeze.default", "aten.squeeze.dim",
    "aten.squeeze.dims",
    "aten.unsqueeze.default", "aten.permute.default", "aten.t.default", "aten.transpose.int",
    "aten.contiguous.default", "aten.flatten.using_ints", "aten._to_copy.default", "aten.slice.Tensor",
    "aten.select.int", "aten.lift_fresh_copy.default", "aten.detach.default",
})


def checks_enabled() -> bool:
    """`CINN_PY_TORCH_INDEX_CHECKS` (default on; 0/false/off/no turns the checks off)."""
    return os.environ.get(ENV_VAR, "1").strip().lower() not in ("0", "false", "off", "no")


@dataclass(frozen=True)
class IndexUse:
    """One index operand of one node: which tensor indexes which dim of which operand."""

    op: str
    index: Any
    """The FX node of the index tensor."""
    x: Any
    """The FX node of the indexed tensor (None: `bound` is given)."""
    dim: int
    bound: Any = None
    negative_wraps: bool = False
    error: type[Exception] = IndexError


def _fake(node: Any) -> Any:
    return getattr(node, "meta", {}).get("val")


def _ndim(node: Any) -> int:
    """The rank of `node`'s value, 1 for a 0-d tensor (torch indexes it as one of size 1)."""
    fake = _fake(node)
    return max(fake.dim(), 1) if fake is not None else 1


def _indexing(op: str, error: type[Exception]) -> Callable[..., list[IndexUse]]:
    """aten.index / index_put: one use per index tensor, at its dim; negative values wrap."""
    def uses(x: Any, indices: Sequence[Any], *_: Any, **__: Any) -> list[IndexUse]:
        return ([IndexUse(op, t, x, k, negative_wraps=True, error=error) for k,
                 t in enumerate(indices) if t is not None])
    return uses


USES: dict[str, Callable[..., list[IndexUse]]] = {
    "aten.embedding.default": lambda w, i, *_, **__: [IndexUse("embedding", i, w, 0)],
    "aten.embedding_dense_backward.default":
        lambda g, i, n, *_, **__: [IndexUse("embedding_dense_backward", i, None, 0, bound=n,
                                            error=RuntimeError)],
    "aten.index_select.default": lambda x, d, i, *_, **__: [IndexUse("index_select", i, x,
                                                                     d % max(_ndim(x), 1))],
    "aten.gather.default": lambda x, d, i, *_, **__: [IndexUse("gather", i, x, d % max(_ndim(x), 1),
                                                               error=RuntimeError)],
    "aten.scatter_add.default":
        lambda x, d, i, *_, **__: [IndexUse("scatter_add", i, x, d % max(_ndim(x), 1), error=RuntimeError)],
    "aten.index_add.default":
        lambda x, d, i, *_, **__: [IndexUse("index_add", i, x, d % max(_ndim(x), 1), error=RuntimeError)],
    "aten.index.Tensor": _indexing("index", IndexError),
    "aten.index_put.default": _indexing("index_put_", IndexError),
}


def index_uses(node: Any, op: str) -> list[IndexUse]:
    rule = USES.get(op)
    return [] if rule is None else rule(*node.args, **node.kwargs)


_SELECTING = frozenset({"aten.gather.default", "aten.index_select.default", "aten.index.Tensor"})
"""Ops that pick values of their first operand by other (index) operands: an index made with them
(BERT's token types: a buffer gathered by the positions) is evaluated by the guard as well."""


_CHEAP = frozenset({
    "aten.add.Tensor", "aten.add.Scalar", "aten.sub.Tensor", "aten.sub.Scalar", "aten.mul.Tensor",
    "aten.mul.Scalar",
    "aten.arange.default", "aten.arange.start", "aten.arange.start_step", "aten.full.default",
    "aten.zeros.default",
    "aten.ones.default", "aten.zeros_like.default", "aten.ones_like.default", "aten.full_like.default",
})
"""Integer arithmetic and creation ops that position indices are made with (GPT-2's
`arange(past, past + seq)`): evaluated by the guard on the small index tensor."""


def evaluable(node: Any, depth: int = 0) -> bool:
    """Whether the guard can compute `node`'s values from the graph's arguments and constants
    (cheap ops on small index tensors: views, slices, casts, gathers, creation ops)."""
    if depth > 32:
        return False
    if getattr(node, "op", None) in ("placeholder", "get_attr") or static_range(node) is not None:
        return True
    if (getattr(node, "op", None) != "call_function" or str(node.target) not in _REPLAYABLE
        | _SELECTING | _CHEAP):
        return False
    return all(evaluable(a, depth + 1) for a in _nodes_in((*node.args, *node.kwargs.values())))


def _nodes_in(values: Any) -> list[Any]:
    found: list[Any] = []
    for v in values:
        if isinstance(v, (list, tuple)):
            found += _nodes_in(v)
        elif _has_node(v):
            found.append(v)
    return found


def evaluate(node: Any, args: Sequence[Any], positions: dict[Any, int], memo: dict[Any, Any]) -> Any:
    """`node`'s value for the graph arguments `args` (an `evaluable` node)."""
    if node in memo:
        return memo[node]
    if node.op == "placeholder":
        value = args[positions[node]]
    elif node.op == "get_attr":
        value = _constant(node)
    else:
        def arg(v: Any) -> Any:
            if isinstance(v, (list, tuple)):
                return type(v)(arg(x) for x in v)
            return evaluate(v, args, positions, memo) if _has_node(v) else v
        value = node.target(*[arg(a) for a in node.args], **{k: arg(v) for k, v in node.kwargs.items()})
    memo[node] = value
    return value


def _full_range(size: Any, value: Any, *_: Any, **__: Any) -> tuple[Any, Any]:
    return value, value


def _arange_range(*args: Any, **_: Any) -> tuple[Any, Any] | None:
    start, end, step = ((0, args[0], 1) if len(args) == 1
                        else (args[0], args[1], args[2] if len(args) > 2 else 1))
    if not all(isinstance(v, int) for v in (start, end, step)) or step == 0:
        return None
    values = range(start, end, step)
    return (min(values[0], values[-1]), max(values[0], values[-1])) if len(values) else None


_STATIC_ROOTS: dict[str, Any] = {
    "aten.full.default": _full_range, "aten.zeros.default": lambda *a, **k: (0, 0),
    "aten.ones.default": lambda *a, **k: (1, 1), "aten.zeros_like.default": lambda *a, **k: (0, 0),
    "aten.ones_like.default": lambda *a, **k: (1, 1), "aten.full_like.default": _full_range,
    "aten.arange.default": _arange_range, "aten.arange.start": _arange_range,
    "aten.arange.start_step": _arange_range,
}
"""Ops whose values are known when compiling (creation ops with constant arguments): an index made
from them (positions, token types) is checked then, with no run-time guard."""


def static_range(root: Any) -> tuple[int, int] | None:
    """[lo, hi] of the values of a `_STATIC_ROOTS` node, when its arguments are constants."""
    rule = _STATIC_ROOTS.get(str(getattr(root, "target", "")))
    if rule is None or getattr(root, "op", None) != "call_function":
        return None
    if any(_has_node(a) for a in (*root.args[1:], *root.kwargs.values())) or (
            str(root.target).startswith("aten.arange") and _has_node(root.args[0])):
        return None
    found = rule(*root.args, **{k: v for k, v in root.kwargs.items() if k not in ("dtype", "layout", "device",
                                                                                  "pin_memory")})
    if found is None or not all(isinstance(v, (int, bool)) for v in found):
        return None
    return int(found[0]), int(found[1])


def chain_of(node: Any) -> tuple[Any, tuple[Any, ...]] | None:
    """(root, the ops from the root to `node`): the root is a graph input, a constant
    (`get_attr`) or a `_STATIC_ROOTS` op with constant arguments, the ops `_REPLAYABLE` with no
    other node argument; None otherwise."""
    ops: list[Any] = []
    while node is not None and len(ops) < 64:
        if getattr(node, "op", None) in ("placeholder", "get_attr") or static_range(node) is not None:
            return node, tuple(reversed(ops))
        if getattr(node, "op", None) != "call_function" or str(node.target) not in _REPLAYABLE:
            return None
        if any(_has_node(a) for a in (*node.args[1:], *node.kwargs.values())):
            return None
        ops.append(node)
        node = node.args[0] if node.args else None
    return None


def _has_node(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return any(_has_node(v) for v in value)
    return hasattr(value, "op") and hasattr(value, "graph")


def unchecked_reason(node: Any, op: str) -> str | None:
    """Why an index op stays in eager PyTorch (its index cannot be range-checked before the
    compiled graph runs), or None."""
    if not checks_enabled():
        return None
    for use in index_uses(node, op):
        chain = chain_of(use.index)
        known = static_range(chain[0]) if chain is not None else None
        if known is not None:  # values known now (views and slices keep them within this range)
            size = _size(use)
            low_ok = -size if isinstance(size, int) and use.negative_wraps else 0
            if not isinstance(size, int) or known[0] < low_ok or known[1] >= size:
                return (f"{use.op} with an index in [{known[0]}, {known[1]}] that may be out of range for "
                        f"size {size}")
            continue
        if not evaluable(use.index):
            return (f"{use.op}'s index is computed in the graph (eager PyTorch checks its range; "
                    f"{ENV_VAR}=0 compiles it unchecked)")
        if (use.x is not None and not isinstance(_size(use), int) and getattr(use.x, "op", None)
            != "placeholder"):
            return (f"{use.op} along a symbolic dim of a computed tensor (its size is needed to check the "
                    "index)")
        if not _reads_arguments(use.index):  # constants only: checked now, eager raises at run time
            size = _size(use)
            if not isinstance(size, int):
                return f"{use.op} with a constant index along a symbolic dim"
            try:
                with _real_tensors():  # the partitioner may run under fake-tensor mode
                    _check_values(use.op, evaluate(use.index, (), {}, {}), size, use.dim, use.negative_wraps,
                                  use.error)
            except (IndexError, RuntimeError) as err:
                return f"constant index out of range ({err})"
    return None


def _reads_arguments(node: Any, depth: int = 0) -> bool:
    if getattr(node, "op", None) == "placeholder":
        return True
    return depth < 32 and any(_reads_arguments(a, depth + 1) for a
                              in _nodes_in((*node.args, *node.kwargs.values()))) \
        if getattr(node, "op", None) == "call_function" else False


def _size(use: IndexUse) -> Any:
    if use.x is None:
        return use.bound
    fake = _fake(use.x)
    if fake is None:
        return None
    return fake.shape[use.dim] if fake.dim() else 1  # a 0-d tensor is indexed as one of size 1


def _real_tensors() -> Any:
    from torch._subclasses.fake_tensor import unset_fake_temporarily  # noqa: PLC0415 - private torch API

    return unset_fake_temporarily()


def _constant(node: Any) -> Any:
    target: Any = node.graph.owning_module
    for part in str(node.target).split("."):
        target = getattr(target, part, None)
    return target if isinstance(target, torch.Tensor) else None


def _check_values(op: str, index: Any, size: int, dim: int, negative_wraps: bool,
                  error: type[Exception]) -> None:
    if not isinstance(index, torch.Tensor) or index.numel() == 0:
        return
    lo, hi = (int(v) for v in torch.aminmax(index.detach()))  # one fused pass over the index
    low_ok = -size if negative_wraps else 0
    bad = hi if hi >= size else lo if lo < low_ok else None
    if bad is not None:
        raise error(f"{op}: index {bad} is out of bounds for dimension {dim} with size {size}")


@dataclass(frozen=True)
class IndexGuard:
    """A check run on the graph's arguments before the compiled graph."""

    op: str
    index: Any
    """The FX node of the index (`evaluable`: computed from the arguments by cheap torch ops)."""
    positions: Any
    """The graph's placeholders -> argument positions."""
    dim: int
    size: int | None
    """The static size of the indexed dim, else None and `x_position` gives it at call time."""
    x_position: int | None
    negative_wraps: bool
    error: type[Exception]

    def check(self, args: Sequence[Any]) -> None:
        size = self.size if self.size is not None else int(args[self.x_position].shape[self.dim])  # type: ignore[index]
        with torch.no_grad():
            index = evaluate(self.index, args, self.positions, {})  # usually the argument itself, or a view
        _check_values(self.op, index, size, self.dim, self.negative_wraps, self.error)


def guards_for(gm: Any) -> tuple[IndexGuard, ...]:
    """The guards of every index op of `gm` that reads the graph's arguments (one whose index
    ops all passed `unchecked_reason`; constant and static indices were checked there)."""
    if not checks_enabled():
        return ()
    from cinn_py.torch.support import op_name  # noqa: PLC0415 - support imports this module

    positions = {n: k for k, n in enumerate(n for n in gm.graph.nodes if n.op == "placeholder")}
    guards: list[IndexGuard] = []
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        for use in index_uses(node, op_name(node)):
            if not evaluable(use.index) or not _reads_arguments(use.index):
                continue
            size = _size(use)
            x_position = positions.get(use.x) if use.x is not None and not isinstance(size, int) else None
            if not isinstance(size, int) and x_position is None:
                continue
            guards.append(IndexGuard(use.op, use.index, positions, use.dim,
                                     size if isinstance(size, int) else None,
                                     x_position, use.negative_wraps, use.error))
    return tuple(guards)
