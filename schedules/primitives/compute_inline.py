"""compute_inline and reverse_compute_inline (CINN `ComputeInline`, `ReverseComputeInline`).

`compute_inline(func, P)` removes the producer block `P` (`T[v0, v1] = f(...)`) and replaces every
load `T[e0, e1]` in its consumers by `f` with `v0 := e0, v1 := e1`.
`reverse_compute_inline(func, C)` removes the consumer block `C` (`D[g(w)] = h(T[w0, w1], ...)`)
and makes its unique producer `P` (`T[p(v)] = f(v)`) store `D[g(w)] = h(f(v), ...)` with
`w_k := p_k(v)` instead of `T`.

Checks follow CINN (`CheckComputeInlineValidationAndGetStore`, `BodyPatternAllowInline`) and add
the ones CINN leaves out. Differs from CINN: the "only writer" rule is really checked (CINN's
collector stops at the first Store and never sees a second writer); inlining a block that
writes a function argument is refused (its final contents are observable); and nothing between
the producer and a consumer may overwrite what the inlined expression reads.
"""

from __future__ import annotations

import dataclasses

from cinn_py.ir import (
    MAX_EXPR_DEPTH, Expr, Load, LoweredFunc, Mutator, ScheduleBlockRealize, Store, Sub, Tensor, Var, as_expr,
    expr_depth, print_ir, substitute, walk,
)
from schedules.analysis.dependence import (
    argument_buffers, blocks_between, consumers, producers, readers_of, writers_of,
)
from schedules.analysis.loops import StmtIndex, block_stores, index_of
from schedules.analysis.regions import (
    block_buffers_read, block_buffers_written, index_bounds, loop_ranges, reduce_iter_vars,
    simplify_index,
)
from schedules.errors import ScheduleError, StaleHandleError, schedule_error
from schedules.primitives._tree import remove_stmt, replace
from schedules.registry import primitive

__all__ = [
    "compute_inline", "reverse_compute_inline", "InlineBodyPatternError", "InlineReductionError",
    "InlineMultipleWritersError", "InlineOutputError", "InlineHazardError", "InlineConsumerError",
    "InlineDepthError",
]


class InlineBodyPatternError(ScheduleError):
    """The block body is not a single Store whose indices are distinct plain iter vars covering
    every var the computation uses."""


class InlineReductionError(ScheduleError):
    """A reduction block (or a block reading its own output) cannot be inlined."""


class InlineMultipleWritersError(ScheduleError):
    """The inlined tensor is written by more than one block."""


class InlineOutputError(ScheduleError):
    """The inlined tensor is a function argument (an output): removing its writer loses it."""


class InlineHazardError(ScheduleError):
    """A block between producer and consumer writes a buffer the inlined expression reads."""


class InlineDepthError(ScheduleError):
    """Inlining would make an expression deeper than MAX_EXPR_DEPTH (the producer stays a block)."""


class InlineConsumerError(ScheduleError):
    """reverse_compute_inline: the consumer does not read exactly one produced tensor, reads it
    with other indices, or does not cover the producer's iteration domain."""


def _check_in_func(prim: str, func: LoweredFunc, block: ScheduleBlockRealize) -> StmtIndex:
    index = index_of(func)
    if not isinstance(block, ScheduleBlockRealize) or not index.contains(block) or not block.iter_values:
        name = getattr(block, "name", type(block).__name__)
        raise schedule_error(StaleHandleError, prim, f"block '{name}' is not a schedule block of the current "
                             "function (stale handle or the root block)", func)
    return index


def _single_store(prim: str, func: LoweredFunc, block: ScheduleBlockRealize) -> Store:
    stores = block_stores(block)
    body = block.schedule_block.body
    if len(stores) != 1 or body is not stores[0]:
        raise schedule_error(InlineBodyPatternError, prim,
                             f"block '{block.name}' must have a body of exactly "
                             f"one Store, but has {len(stores)} store(s) in a {type(body).__name__}",
                             func, block)
    return stores[0]


def _plain_distinct_vars(indices: tuple[Expr, ...], iter_vars: tuple[Var, ...]) -> bool:
    return all(isinstance(i, Var) and i in iter_vars for i in indices) and len(set(indices)) == len(indices)


def _check_not_reduction(prim: str, func: LoweredFunc, block: ScheduleBlockRealize, store: Store) -> None:
    reduce_vars = reduce_iter_vars(block)
    self_read = store.tensor.buffer.name in block_buffers_read(block)
    if reduce_vars or self_read:
        what = f"reduce iter vars {', '.join(v.name for v in reduce_vars)}" if reduce_vars \
            else f"a load of its own output '{store.tensor.name}'"
        raise schedule_error(InlineReductionError, prim, f"block '{block.name}' must not be a reduction, "
                             f"but it has {what}", func, block)


def _check_sole_writer(prim: str, func: LoweredFunc, block: ScheduleBlockRealize, tensor: Tensor) -> None:
    writers = writers_of(func, tensor.buffer.name)
    if len(writers) != 1:
        names = ", ".join(w.name for w in writers)
        raise schedule_error(InlineMultipleWritersError, prim,
                             f"tensor '{tensor.name}' must have exactly one "
                             f"writer block, but {len(writers)} write it ({names})", func, *writers)


def _check_not_output(prim: str, func: LoweredFunc, block: ScheduleBlockRealize, tensor: Tensor) -> None:
    if tensor.buffer.name in argument_buffers(func):
        raise schedule_error(InlineOutputError, prim,
                             f"tensor '{tensor.name}' must be a temporary, but it is "
                             f"an argument of function '{func.name}'", func, block)


def _check_no_hazard(prim: str, func: LoweredFunc, producer: ScheduleBlockRealize,
                     consumer: ScheduleBlockRealize, reads: set[str]) -> None:
    for mid in blocks_between(func, producer, consumer):
        clobbered = block_buffers_written(mid) & reads
        if clobbered:
            raise schedule_error(InlineHazardError, prim, f"block '{mid.name}' between '{producer.name}' and "
                                 f"'{consumer.name}' writes {', '.join(sorted(clobbered))}, which the "
                                 "inlined "
                                 "expression reads", func, mid)


# ----------------------------------------------------------------------------------------------
# compute_inline
# ----------------------------------------------------------------------------------------------
class _InlineLoads(Mutator):
    """Replace loads of `tensor` by `value` with the store's index vars bound to the load indices."""

    def __init__(self, tensor: Tensor, index_vars: tuple[Var, ...], value: Expr) -> None:
        self.tensor, self.index_vars, self.value = tensor, index_vars, value

    def visit_load(self, load: Load) -> Expr:
        indices = tuple(self.visit(i) for i in load.indices)
        if load.tensor != self.tensor:
            return load if all(a is b for a, b in zip(indices, load.indices)) else dataclasses.replace(
                load, indices=indices)
        return substitute(self.value, dict(zip(self.index_vars, indices)))


@primitive
def compute_inline(func: LoweredFunc, block: ScheduleBlockRealize) -> LoweredFunc:
    """Inline the producer `block` into every load of its tensor and remove it.

    Raises:
        InlineBodyPatternError, InlineReductionError, InlineMultipleWritersError,
        InlineOutputError, InlineHazardError, StaleHandleError.
    """
    prim = "compute_inline"
    _check_in_func(prim, func, block)
    store = _single_store(prim, func, block)
    _check_not_reduction(prim, func, block, store)
    iter_vars = block.schedule_block.iter_vars
    used = {n for n in walk(store.value) if isinstance(n, Var) and n in iter_vars}
    if not _plain_distinct_vars(store.indices, iter_vars) or not used <= set(store.indices):
        shown = ", ".join(print_ir(i) for i in store.indices)
        raise schedule_error(InlineBodyPatternError, prim, "the store indices must be distinct iter vars "
                             f"covering every iter var of the value, but are [{shown}]", func, block)
    _check_sole_writer(prim, func, block, store.tensor)
    _check_not_output(prim, func, block, store.tensor)
    reads = block_buffers_read(block)
    for consumer in consumers(func, block):
        _check_no_hazard(prim, func, block, consumer, reads)
    rewritten = remove_stmt(func, block)
    # the indices are the block's iter vars (checked above)
    result = _InlineLoads(store.tensor, tuple(store.indices), store.value).visit(rewritten)  # type: ignore[arg-type]
    _check_depth(prim, func, block, result)
    return result  # type: ignore[no-any-return]


def _check_depth(prim: str, func: LoweredFunc, block: ScheduleBlockRealize, result: LoweredFunc) -> None:
    """Refuse an inlining that grows an expression past MAX_EXPR_DEPTH (a chain of 1,000
    elementwise ops is kept as blocks of bounded depth instead of one 1,000-deep expression)."""
    for node in walk(result.body):
        if isinstance(node, Store) and expr_depth(node.value) > MAX_EXPR_DEPTH:
            raise schedule_error(InlineDepthError, prim,
                                 f"inlining '{block.name}' would make the value stored to "
                                 f"'{node.tensor.name}' {expr_depth(node.value)} levels deep, more than "
                                 f"MAX_EXPR_DEPTH = {MAX_EXPR_DEPTH}; keep '{block.name}' as its own block",
                                 func,
                                 block)


# ----------------------------------------------------------------------------------------------
# reverse_compute_inline
# ----------------------------------------------------------------------------------------------
def _inlined_tensor(prim: str, func: LoweredFunc, block: ScheduleBlockRealize) -> Tensor:
    """The one tensor the consumer reads that some other block produces."""
    produced = {w for p in producers(func, block) for w in block_buffers_written(p)}
    loads = [ld for ld in walk(block.schedule_block.body) if isinstance(ld, Load)]
    tensors = {ld.tensor for ld in loads if ld.tensor.buffer.name in produced}
    if len(tensors) != 1:
        names = ", ".join(sorted(t.name for t in tensors)) or "none"
        raise schedule_error(InlineConsumerError, prim, f"block '{block.name}' must read exactly one tensor "
                             f"produced by another block, but reads {len(tensors)} ({names})", func, block)
    return tensors.pop()


def _check_consumer_loads(prim: str, func: LoweredFunc, block: ScheduleBlockRealize, store: Store,
                          tensor: Tensor) -> tuple[Var, ...]:
    iter_vars = block.schedule_block.iter_vars
    loads = [ld for ld in walk(store.value) if isinstance(ld, Load) and ld.tensor == tensor]
    first = loads[0].indices
    other_vars = {n for n in walk(store) if isinstance(n, Var) and n in iter_vars}
    if any(ld.indices != first for ld in loads) or not _plain_distinct_vars(first, iter_vars) \
            or not other_vars <= set(first):
        shown = ", ".join(print_ir(i) for i in first)
        raise schedule_error(InlineBodyPatternError, prim, f"every load of '{tensor.name}' must use the same "
                             f"distinct iter vars covering all iter vars of the block, but got [{shown}]",
                             func, block)
    return tuple(first)  # type: ignore[return-value]


def _check_covers_tensor(prim: str, func: LoweredFunc, index: StmtIndex, block: ScheduleBlockRealize,
                         load_vars: tuple[Var, ...], tensor: Tensor) -> None:
    """The consumer's iteration domain must be the whole tensor (it will run where the producer
    runs)."""
    binding = dict(zip(block.schedule_block.iter_vars, block.iter_values))
    ranges = loop_ranges(index.enclosing_loops(block))
    for k, var in enumerate(load_vars):
        bounds = index_bounds(binding[var], ranges)
        full_hi = simplify_index(Sub(tensor.shape[k], as_expr(1, tensor.shape[k].dtype)))
        ok = bounds is not None and simplify_index(bounds[0]) == as_expr(0, bounds[0].dtype) \
            and simplify_index(Sub(bounds[1], full_hi)) == as_expr(0, full_hi.dtype)
        if not ok:
            raise schedule_error(InlineConsumerError, prim, f"block '{block.name}' must read all of "
                                 f"'{tensor.name}' (dimension {k}: 0..{print_ir(full_hi)}), but its iter var "
                                 f"'{var.name}' covers {_show(bounds)}", func, block)


def _show(bounds: tuple[Expr, Expr] | None) -> str:
    return "an unknown range" if bounds is None else f"{print_ir(bounds[0])}..{print_ir(bounds[1])}"


@primitive
def reverse_compute_inline(func: LoweredFunc, block: ScheduleBlockRealize) -> LoweredFunc:
    """Inline the consumer `block` into its unique producer and remove it.

    Raises:
        InlineBodyPatternError, InlineReductionError, InlineMultipleWritersError, InlineOutputError,
        InlineConsumerError, InlineHazardError, StaleHandleError.
    """
    prim = "reverse_compute_inline"
    index = _check_in_func(prim, func, block)
    store = _single_store(prim, func, block)
    _check_not_reduction(prim, func, block, store)
    tensor = _inlined_tensor(prim, func, block)
    load_vars = _check_consumer_loads(prim, func, block, store, tensor)
    _check_sole_writer(prim, func, block, tensor)
    producer = writers_of(func, tensor.buffer.name)[0]
    p_store = _single_store(prim, func, producer)
    _check_not_reduction(prim, func, producer, p_store)
    _check_not_output(prim, func, producer, tensor)
    other_readers = [b for b in readers_of(func, tensor.buffer.name) if b is not block]
    if other_readers:
        raise schedule_error(InlineConsumerError, prim, f"'{block.name}' must be the only reader of "
                             f"'{tensor.name}', but {', '.join(b.name for b in other_readers)} also read it",
                             func, *other_readers)
    _check_covers_tensor(prim, func, index, block, load_vars, tensor)
    touched = block_buffers_read(block) | {store.tensor.buffer.name}
    for mid in blocks_between(func, producer, block):
        clash = (block_buffers_written(mid) | block_buffers_read(mid)) & touched
        if clash:
            raise schedule_error(InlineHazardError, prim, f"block '{mid.name}' between '{producer.name}' and "
                                 f"'{block.name}' accesses {', '.join(sorted(clash))}, which the consumer "
                                 "touches", func, mid)
    mapping = dict(zip(load_vars, p_store.indices))
    # Each load T[w] becomes the producer's value f(v); every other use of w becomes p(v).
    value = substitute(_InlineLoads(tensor, (), p_store.value).visit(store.value), mapping)
    new_store = Store(store.tensor, value, tuple(substitute(i, mapping) for i in store.indices))
    if expr_depth(value) > MAX_EXPR_DEPTH:
        raise schedule_error(InlineDepthError, prim,
                             f"inlining '{block.name}' into '{producer.name}' would make its "
                             f"value {expr_depth(value)} levels deep, more than MAX_EXPR_DEPTH = "
                             f"{MAX_EXPR_DEPTH}",
                             func, block)
    new_producer = dataclasses.replace(producer, schedule_block=dataclasses.replace(
        producer.schedule_block, body=new_store))
    return replace(remove_stmt(func, block), producer, new_producer)
