"""Range checks of data-dependent indices in torch graphs: out-of-range raises as in eager.

A compiled gather reads `x[index[i]]` without a check (an index of 2**36 faults, one just past
the end returns heap contents), and NetBuilder's scatters search the index list per output
element, so an out-of-range index is silently dropped. Eager PyTorch raises for both. Each
index operand of embedding, index_select, gather, x[idx] (aten.index), index_put_, scatter_add,
index_add and embedding_dense_backward is therefore checked before the compiled graph runs:

- the index must come from a graph input (or a constant) through ops that take it and constants
  only (views, slices, selects, clones, casts); the guard replays them on the argument (views
  copy nothing) and takes the smallest and largest values with one fused `torch.aminmax` on the
  host, compared with the bound (static, or the indexed input's size at call time); a constant
  index is checked when the graph is compiled;
- an index computed by converted ops keeps that index op in eager PyTorch (which checks it):
  `unsupported_reason` reports why.

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

# ops an index may pass through between a graph input (or a constant) and its use: they take the
# index and constants only, so the guard replays them on the argument (views: no copy) and checks
# exactly the values the index op will see
_REPLAYABLE = frozenset({
    "aten.view.default", "aten._unsafe_view.default", "aten.reshape.default", "aten.clone.default",
    "aten.alias.default", "aten.expand.default", "aten.squeeze.default", "aten.squeeze.dim", "aten.squeeze.dims",
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
    fake = _fake(node)
    return fake.dim() if fake is not None else 1


def _indexing(op: str, error: type[Exception]) -> Callable[..., list[IndexUse]]:
    """aten.index / index_put: one use per index tensor, at its dim; negative values wrap."""
    def uses(x: Any, indices: Sequence[Any], *_: Any, **__: Any) -> list[IndexUse]:
        return [IndexUse(op, t, x, k, negative_wraps=True, error=error) for k, t in enumerate(indices) if t is not None]
    return uses


USES: dict[str, Callable[..., list[IndexUse]]] = {
    "aten.embedding.default": lambda w, i, *_, **__: [IndexUse("embedding", i, w, 0)],
    "aten.embedding_dense_backward.default":
        lambda g, i, n, *_, **__: [IndexUse("embedding_dense_backward", i, None, 0, bound=n, error=RuntimeError)],
    "aten.index_select.default": lambda x, d, i, *_, **__: [IndexUse("index_select", i, x, d % _ndim(x))],
    "aten.gather.default": lambda x, d, i, *_, **__: [IndexUse("gather", i, x, d % _ndim(x), error=RuntimeError)],
    "aten.scatter_add.default":
        lambda x, d, i, *_, **__: [IndexUse("scatter_add", i, x, d % _ndim(x), error=RuntimeError)],
    "aten.index_add.default":
        lambda x, d, i, *_, **__: [IndexUse("index_add", i, x, d % _ndim(x), error=RuntimeError)],
    "aten.index.Tensor": _indexing("index", IndexError),
    "aten.index_put.default": _indexing("index_put_", IndexError),
}


def index_uses(node: Any, op: str) -> list[IndexUse]:
    rule = USES.get(op)
    return [] if rule is None else rule(*node.args, **node.kwargs)


def chain_of(node: Any) -> tuple[Any, tuple[Any, ...]] | None:
    """(root, the ops from the root to `node`): the root is a graph input or a constant
    (`get_attr`), the ops `_REPLAYABLE` with no other node argument; None otherwise."""
    ops: list[Any] = []
    while node is not None and len(ops) < 64:
        if getattr(node, "op", None) in ("placeholder", "get_attr"):
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


def replay(ops: Sequence[Any], value: Any) -> Any:
    """`value` through `ops` (FX call_function nodes whose other arguments are constants)."""
    for node in ops:
        value = node.target(value, *node.args[1:], **node.kwargs)
    return value


def unchecked_reason(node: Any, op: str) -> str | None:
    """Why an index op stays in eager PyTorch (its index cannot be range-checked before the
    compiled graph runs), or None."""
    if not checks_enabled():
        return None
    for use in index_uses(node, op):
        chain = chain_of(use.index)
        if chain is None:
            return (f"{use.op}'s index is computed in the graph (eager PyTorch checks its range; "
                    f"{ENV_VAR}=0 compiles it unchecked)")
        if chain[0].op == "get_attr":  # a constant index: checked now, eager raises at run time
            size = _size(use)
            constant = _constant(chain[0])
            if not isinstance(size, int) or constant is None:
                return f"{use.op} with a constant index that cannot be read when compiling"
            try:
                with _real_tensors():  # the partitioner may run under fake-tensor mode
                    _check_values(use.op, replay(chain[1], constant), size, use.dim, use.negative_wraps,
                                  use.error)
            except (IndexError, RuntimeError) as err:
                return f"constant index out of range ({err})"
        if use.x is not None and not isinstance(_size(use), int) and getattr(use.x, "op", None) != "placeholder":
            return f"{use.op} along a symbolic dim of a computed tensor (its size is needed to check the index)"
    return None


def _size(use: IndexUse) -> Any:
    if use.x is None:
        return use.bound
    fake = _fake(use.x)
    return None if fake is None else fake.shape[use.dim]


def _real_tensors() -> Any:
    from torch._subclasses.fake_tensor import unset_fake_temporarily  # noqa: PLC0415 - private torch API

    return unset_fake_temporarily()


def _constant(node: Any) -> Any:
    target: Any = node.graph.owning_module
    for part in str(node.target).split("."):
        target = getattr(target, part, None)
    return target if isinstance(target, torch.Tensor) else None


def _check_values(op: str, index: Any, size: int, dim: int, negative_wraps: bool, error: type[Exception]) -> None:
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
    index_position: int
    ops: tuple[Any, ...]
    """The replayable ops from the argument to the index (usually none: the argument is the index)."""
    dim: int
    size: int | None
    """The static size of the indexed dim, else None and `x_position` gives it at call time."""
    x_position: int | None
    negative_wraps: bool
    error: type[Exception]

    def check(self, args: Sequence[Any]) -> None:
        size = self.size if self.size is not None else int(args[self.x_position].shape[self.dim])  # type: ignore[index]
        _check_values(self.op, replay(self.ops, args[self.index_position]), size, self.dim, self.negative_wraps,
                      self.error)


def guards_for(gm: Any) -> tuple[IndexGuard, ...]:
    """The guards of every index op of `gm` (a graph whose index ops all passed `unchecked_reason`;
    constant indices were checked there)."""
    if not checks_enabled():
        return ()
    from cinn_py.torch.graph import op_name  # noqa: PLC0415 - graph imports this module

    positions = {n: k for k, n in enumerate(n for n in gm.graph.nodes if n.op == "placeholder")}
    guards: list[IndexGuard] = []
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        for use in index_uses(node, op_name(node)):
            chain = chain_of(use.index)
            if chain is None or chain[0] not in positions:
                continue
            size = _size(use)
            x_position = positions.get(use.x) if use.x is not None and not isinstance(size, int) else None
            if not isinstance(size, int) and x_position is None:
                continue
            guards.append(IndexGuard(use.op, positions[chain[0]], chain[1], use.dim,
                                     size if isinstance(size, int) else None, x_position, use.negative_wraps,
                                     use.error))
    return tuple(guards)
