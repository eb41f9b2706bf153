"""Losses: `nll_loss_forward` / `nll_loss2d_forward` and their backward (cross_entropy is
log_softmax + nll_loss in AOT graphs), with class weights, `ignore_index` and every reduction.

The class axis is 1 ([N, C] or [N, C, H, W]; a single [C] sample is a batch of one). A target
equal to `ignore_index` weighs 0 and reads class 0 instead (it may be out of range, -100 by
default). `total_weight` is the sum of the picked weights for 'mean' and 'sum', 0 for 'none', as
aten returns it.
"""

from __future__ import annotations

from typing import Any

from cinn_py.frontend.program import Variable
from cinn_py.torch.converters.base import Emitter, Value, as_dtype, converts

_NONE, _MEAN, _SUM = 0, 1, 2


def _static_ignore(x: Any, target: Any, weight: Any, reduction: int, ignore_index: Any,
                   *_: Any) -> str | None:
    if not isinstance(ignore_index, int):
        return f"nll_loss with a symbolic ignore_index {ignore_index}"
    return None if reduction in (_NONE, _MEAN, _SUM) else f"nll_loss reduction {reduction}"


def _backward_reason(g: Any, x: Any, target: Any, weight: Any, reduction: int, ignore_index: Any,
                     *_: Any) -> str | None:
    return _static_ignore(x, target, weight, reduction, ignore_index)


def _batched(e: Emitter, x: Variable, target: Variable) -> tuple[Variable, Variable]:
    """A single sample ([C], 0-d target) as a batch of one."""
    if x.ndim == 1:
        return e.nb.reshape(x, [1, int(x.shape[0])]), e.nb.reshape(target, [1])
    return x, target


def _picked_weights(e: Emitter, target: Variable, weight: Variable | None, ignore_index: int,
                    dtype: str) -> tuple[Variable, Variable]:
    """(the target with ignored entries read as class 0, the per-element weight: weight[target]
    or 1, and 0 where the target is ignored)."""
    nb = e.nb
    target = as_dtype(e, target, "int64")
    shape = list(target.shape)
    keep = nb.not_equal(target, ignore_index)
    safe = nb.select(keep, target, nb.fill_constant(shape, 0, dtype="int64"))
    zeros = nb.fill_constant(shape, 0.0, dtype=dtype)
    if weight is None:
        return safe, nb.select(keep, nb.fill_constant(shape, 1.0, dtype=dtype), zeros)
    flat = nb.reshape(safe, [_numel(shape)])
    picked = nb.reshape(nb.gather(as_dtype(e, weight, dtype), flat, axis=0), shape)
    return safe, nb.select(keep, picked, zeros)


def _numel(shape: list[Any]) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


def _unsqueezed(e: Emitter, t: Variable) -> Variable:
    """[N, *] -> [N, 1, *]: the class axis inserted for a gather along it."""
    return e.nb.reshape(t, [t.shape[0], 1, *t.shape[1:]])


@converts("aten.nll_loss_forward.default", "aten.nll_loss2d_forward.default", check=_static_ignore)
def _nll_loss(e: Emitter, x: Variable, target: Variable, weight: Variable | None, reduction: int,
              ignore_index: int) -> Value:
    nb = e.nb
    single = x.ndim == 1
    x, target = _batched(e, x, target)
    dtype = str(x.dtype)
    safe, w = _picked_weights(e, target, weight, ignore_index, dtype)
    picked = nb.reshape(nb.gather(x, _unsqueezed(e, safe), axis=1), list(safe.shape))
    losses = nb.negative(nb.multiply(picked, w))
    axes = list(range(losses.ndim))
    if reduction == _NONE:
        zero = nb.fill_constant([], 0.0, dtype=dtype)
        return (nb.reshape(losses, []) if single else losses), zero
    total = nb.reduce_sum(w, axes)
    summed = nb.reduce_sum(losses, axes)
    return (nb.divide(summed, total) if reduction == _MEAN else summed), total


@converts("aten.nll_loss_backward.default", "aten.nll_loss2d_backward.default", check=_backward_reason)
def _nll_loss_backward(e: Emitter, g: Variable, x: Variable, target: Variable, weight: Variable | None,
                       reduction: int, ignore_index: int, total_weight: Variable) -> Value:
    """d/dx[n, c] = -w_n g_n where c is the target of n ('mean': g / total_weight), 0 elsewhere."""
    nb = e.nb
    shape = list(x.shape)
    x, target = _batched(e, x, target)
    dtype = str(x.dtype)
    safe, w = _picked_weights(e, target, weight, ignore_index, dtype)
    g = as_dtype(e, g, dtype)
    if reduction == _NONE:
        per = nb.multiply(w, nb.reshape(g, list(w.shape)))
    else:
        scalar = g if reduction == _SUM else nb.divide(g, as_dtype(e, total_weight, dtype))
        per = nb.multiply(w, nb.broadcast_to(nb.reshape(scalar, [1]), list(w.shape), [w.ndim - 1]))
    classes = int(x.shape[1])
    hit = nb.equal(nb.broadcast_to(nb.arange(0, classes, 1, dtype="int64"), list(x.shape), [1]),
                   nb.broadcast_to(_unsqueezed(e, safe), list(x.shape), list(range(x.ndim))))
    spread = nb.broadcast_to(_unsqueezed(e, nb.negative(per)), list(x.shape), list(range(x.ndim)))
    grad = nb.select(hit, spread, nb.fill_constant(list(x.shape), 0.0, dtype=dtype))
    return nb.reshape(grad, shape) if len(shape) != x.ndim else grad
