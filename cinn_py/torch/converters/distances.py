"""Pairwise distances: `cdist` (`_cdist_forward`) and its backward, as broadcast differences
reduced over the feature dim (x1 [*, P, M] and x2 [*, R, M] to [*, P, R, M]), with torch's
special cases of the p-norm: p = 0 (a count of the differing features), 1, 2, inf, and a general
p (p < 1 included, with torch's zero gradient at a zero difference)."""

from __future__ import annotations

import math
from typing import Any

from cinn_py.frontend.program import Variable
from cinn_py.torch.converters.base import Emitter, Value, converts
from cinn_py.torch.converters.math import as_dtype


def _static(x1: Any, x2: Any, *_: Any, **__: Any) -> str | None:
    for x in (x1, x2):
        fake = getattr(x, "meta", {}).get("val")
        if fake is not None and not all(isinstance(s, int) for s in fake.shape):
            return f"cdist of symbolic shape {tuple(fake.shape)}"
    return None


def _differences(e: Emitter, x1: Variable, x2: Variable, batch: list[Any]) -> Variable:
    """x1[..., p, :] - x2[..., r, :] as [*batch, P, R, M] (the batch dims broadcast, as torch)."""
    nb = e.nb
    p, r, m = x1.shape[-2], x2.shape[-2], x1.shape[-1]
    full = [*batch, p, r, m]
    lead1, lead2 = len(batch) - (x1.ndim - 2), len(batch) - (x2.ndim - 2)
    left = nb.broadcast_to(as_dtype(e, x1), full, [*range(lead1, len(batch)), len(batch), len(batch) + 2])
    right = nb.broadcast_to(as_dtype(e, x2), full,
                            [*range(lead2, len(batch)), len(batch) + 1, len(batch) + 2])
    return nb.subtract(left, right)


def _const(e: Emitter, like: Variable, value: float) -> Variable:
    return e.nb.fill_constant(list(like.shape), value, dtype=str(like.dtype))


@converts("aten._cdist_forward.default", check=_static)
def _cdist(e: Emitter, x1: Variable, x2: Variable, p: float, compute_mode: Any = None) -> Value:
    """||x1_i - x2_j||_p for each pair (compute_mode picks torch's matmul formula for p = 2 on
    large inputs, an implementation choice: the direct sum here is at least as exact)."""
    nb = e.nb
    diff = _differences(e, x1, x2, list(e.shape[:-2]))
    axis = diff.ndim - 1
    if p == 0:
        return nb.reduce_sum(nb.cast(nb.not_equal(diff, _const(e, diff, 0.0)), e.dtype), [axis])
    magnitude = nb.abs(diff)
    if math.isinf(p):
        return nb.reduce_max(magnitude, [axis])
    if p == 1:
        return nb.reduce_sum(magnitude, [axis])
    if p == 2:
        return nb.sqrt(nb.reduce_sum(nb.multiply(diff, diff), [axis]))
    total = nb.reduce_sum(nb.pow(magnitude, _const(e, magnitude, float(p))), [axis])
    return nb.pow(total, _const(e, total, 1.0 / p))


@converts("aten._cdist_backward.default", check=lambda g, x1, x2, *rest: _static(x1, x2))
def _cdist_backward(e: Emitter, g: Variable, x1: Variable, x2: Variable, p: float, dist: Variable) -> Value:
    """d/dx1 of sum(g * cdist): sum over j of g_ij times torch's per-norm derivative of the
    distance (zero where the distance is 0; p < 1: also where a difference is 0)."""
    nb = e.nb
    batch = list(dist.shape[:-2])
    diff = _differences(e, x1, x2, batch)
    spread = [*range(len(batch) + 2)]
    grad = nb.broadcast_to(as_dtype(e, g), list(diff.shape), spread)
    distance = nb.broadcast_to(as_dtype(e, dist), list(diff.shape), spread)
    zero = _const(e, diff, 0.0)
    if p == 0:
        return e.to_shape(nb.reduce_sum(zero, [len(batch) + 1]))
    sign = nb.sign(diff)
    if p == 1:
        term = nb.multiply(sign, grad)
    elif math.isinf(p):
        term = nb.multiply(nb.multiply(sign, grad), nb.cast(nb.equal(nb.abs(diff), distance), e.dtype))
    elif p == 2:
        term = nb.divide(nb.multiply(diff, grad), distance)
    else:
        power = _const(e, diff, float(p) - 1.0)
        term = nb.divide(nb.multiply(nb.multiply(sign, nb.pow(nb.abs(diff), power)), grad),
                         nb.pow(distance, power))
    undefined = nb.equal(distance, zero)
    if p < 1:
        undefined = nb.logical_or(undefined, nb.equal(diff, zero))
    term = nb.select(undefined, zero, term) if p != 1 else term
    return e.to_shape(nb.reduce_sum(term, [len(batch) + 1]))
