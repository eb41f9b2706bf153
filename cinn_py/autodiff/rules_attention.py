"""Gradient rule of the fused attention op: its dedicated backward kernel (`flash_attention_grad`),
fed the forward's packed output (out and lse: the probabilities are recomputed from the lse, as
flash attention does) and its packed cotangent (d_out and d_lse)."""

from __future__ import annotations

from cinn_py.autodiff.core import GradContext, define_grad
from cinn_py.frontend.ops.attention import attention_grads
from cinn_py.frontend.program import Variable


@define_grad("flash_attention")
def _flash_attention(c: GradContext) -> list[Variable | None]:
    q, k, v = c.inputs[:3]
    mask = list(c.inputs[3:])
    grads = c.nb.emit("flash_attention_grad", [q, k, v, c.out, c.dout, *mask], dict(c.attrs))
    # the mask gets none: torch's fused CPU kernel passes none either (a mask that needs one goes
    # through the decomposed matmul/softmax form)
    return [*attention_grads(c.nb, grads, q, k, v), *[None for _ in mask]]
