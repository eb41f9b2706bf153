"""ATen ops to NetBuilder ops: the converters of the `torch.compile` backend.

Each converter takes the `Emitter` (the NetBuilder and the FX node's output types), the node's
arguments with FX nodes replaced by their `Variable`s, and returns the node's value: a Variable,
or a tuple for multi-output ops (`native_layer_norm`: out, mean, rstd). Converters are keyed by the
overload's name (`aten.add.Tensor`), as AOT autograd's graphs call them. An optional `check` per op
says why a particular call cannot be converted (an attribute outside what the converter handles):
such a node stays in eager PyTorch and is reported with the reason.

Shape-changing view ops (`view`, `expand`, `squeeze`, ...) take the target shape from the node's
fake-tensor metadata (`node.meta["val"]`), so `-1` and size inference are torch's own.

One module per op family registers its converters in `CONVERTERS` when imported: `views`,
`indexing`, `elementwise`, `matmul`, `reductions`, `conv`, `creation`, `norms` (batch and group
norm), `activations`, `attention` (SDPA, `_safe_softmax`),
`encoder` (nn.TransformerEncoderLayer's fused inference op), `losses` (nll_loss), `random`
(dropout), `resize` (adaptive pooling), `statistics` (var/std, logsumexp), `math` (unary/binary
math), `nonlinear` (elu family, softplus, glu, shrink, ...), `logical` (bitwise, logical,
masked), `padding`, `shaping` (view copies, stack, roll, tril, arange, unfold), `stats` (std_mean,
arg/max/min, norms, sort/topk), `linalg` (dot, mv, addr, diagonal), `regression` (mse, huber,
smooth_l1, soft_margin), `scatters` (scatter_reduce, index_reduce, index_copy), `scans` (cumprod,
logcumsumexp, cummax), `ordering` (median, kthvalue, aminmax, bucketize, searchsorted),
`special` (lgamma, digamma, trigamma, erfinv, frexp), `assembly` (block_diag, _chunk_cat,
as_strided and its scatter), `distances` (cdist). `shaping` comes after `views`: it aliases the
views' converters. A new family is a new module imported below.
"""

from __future__ import annotations

from cinn_py.torch.converters import (
    activations, attention, conv, creation, elementwise, encoder, indexing, losses, matmul, norms, random,
    reductions, resize,
    statistics, views,
)
from cinn_py.torch.converters import (
    linalg, logical, math, nonlinear, ordering, padding, regression, scans, scatters, shaping, special, stats,
)
from cinn_py.torch.converters import assembly, distances
from cinn_py.torch.converters.base import CONVERTERS, Emitter, Rule, converts

__all__ = ["CONVERTERS", "Emitter", "Rule", "converts", "activations", "assembly", "attention", "conv",
           "creation", "distances", "elementwise", "encoder", "indexing", "linalg", "logical", "losses",
           "math", "matmul", "nonlinear", "norms", "ordering", "padding", "random", "reductions",
           "regression", "resize", "scans", "scatters", "shaping", "special", "statistics", "stats", "views"]
