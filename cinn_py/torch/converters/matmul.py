"""Matrix products: mm, bmm, matmul and addmm (a transposed operand feeds matmul's transpose flags)."""

from __future__ import annotations

from typing import Any

from cinn_py.frontend.net_builder import NetBuilder
from cinn_py.frontend.program import Variable
from cinn_py.torch.converters.base import (
    Emitter,
    Value,
    converts,
    scaled,
)


def _transposed_operand(nb: NetBuilder, a: Variable) -> Variable | None:
    """What `a` is the transpose of when it is a transpose of its last two axes (a weight
    gradient's `t(x)`), else None."""
    producer = next((op for op in reversed(nb.ops) if op.output is a), None)
    if producer is None or producer.type != "transpose" or a.ndim < 2:
        return None
    swap = [*range(a.ndim - 2), a.ndim - 1, a.ndim - 2]
    return producer.inputs[0] if list(producer.attrs["perm"]) == swap else None


@converts("aten.mm.default", "aten.bmm.default", "aten.matmul.default")
def _mm(e: Emitter, a: Variable, b: Variable) -> Value:
    """A left operand that is a transpose is read transposed by the matmul (`transpose_x`) instead
    of copied first (the x86 tactic reads a transposed A as fast as a plain one; a transposed right
    operand stays a copy: read in place it is 2x slower than the copy and the plain matmul)."""
    source = _transposed_operand(e.nb, a) if a.ndim == b.ndim else None
    if source is not None:
        return e.nb.matmul(source, b, transpose_x=True)
    return e.nb.matmul(a, b)


@converts("aten.addmm.default")
def _addmm(e: Emitter, bias: Variable, a: Variable, b: Variable, beta: Any = 1, alpha: Any = 1) -> Value:
    prod = scaled(e, e.nb.matmul(a, b), alpha)
    return prod if beta == 0 else e.nb.add(prod, e.broadcast(scaled(e, bias, beta)))


