"""Statistics: var / std / var_mean (with Bessel's `correction`), logsumexp and renorm.

The count the correction divides by is the product of the reduced extents, so those must be
static. bf16/fp16 inputs are accumulated in float32 (cast back to torch's dtype by the graph).
"""

from __future__ import annotations

from typing import Any

from cinn_py.frontend.program import Variable
from cinn_py.torch.converters.base import Emitter, Value, as_dtype, axes_of, compute_dtype, converts


def _fake(node: Any) -> Any:
    return getattr(node, "meta", {}).get("val")


def _static_reduced(x: Any, dims: Any = None, *_: Any, **__: Any) -> str | None:
    fake = _fake(x)
    if fake is None:
        return None
    sizes = [fake.shape[d] for d in axes_of(dims, fake.dim())] if fake.dim() else []
    bad = [s for s in sizes if not isinstance(s, int)]
    return f"var/std over the symbolic extent {bad[0]}" if bad else None


def _moments(e: Emitter, x: Variable, dims: Any, correction: Any, keepdim: bool) -> tuple[Variable, Variable]:
    """(var, mean) over `dims`; var divides by count - correction (torch: at least 0)."""
    nb = e.nb
    x = as_dtype(e, x, compute_dtype(x))
    axes = axes_of(dims, x.ndim)
    count = 1
    for a in axes:
        count *= int(x.shape[a])
    mean = nb.reduce_mean(x, axes, keep_dim=True)
    centred = nb.subtract(x, nb.broadcast_to(mean, list(x.shape), list(range(x.ndim))))
    fix = 1.0 if correction is None else float(correction)
    squares = nb.reduce_sum(nb.multiply(centred, centred), axes, keep_dim=keepdim)
    var = nb.scale(squares, 1.0 / max(count - fix, 0.0)) if count - fix > 0 else \
        nb.divide(squares, nb.fill_constant(list(squares.shape), 0.0, dtype=str(squares.dtype)))
    return var, (mean if keepdim else nb.reduce_mean(x, axes, keep_dim=False))


@converts("aten.var.correction", check=_static_reduced)
def _var(e: Emitter, x: Variable, dims: Any = None, *, correction: Any = None,
         keepdim: bool = False) -> Value:
    return _moments(e, x, dims, correction, keepdim)[0]


@converts("aten.std.correction", check=_static_reduced)
def _std(e: Emitter, x: Variable, dims: Any = None, *, correction: Any = None,
         keepdim: bool = False) -> Value:
    return e.nb.sqrt(_moments(e, x, dims, correction, keepdim)[0])


@converts("aten.var_mean.correction", check=_static_reduced)
def _var_mean(e: Emitter, x: Variable, dims: Any = None, *, correction: Any = None,
              keepdim: bool = False) -> Value:
    return _moments(e, x, dims, correction, keepdim)


@converts("aten.logsumexp.default")
def _logsumexp(e: Emitter, x: Variable, dims: Any, keepdim: bool = False) -> Value:
    """max + log(sum(exp(x - max))); a max of +-inf is shifted by 0 instead (torch's guard)."""
    nb = e.nb
    x = as_dtype(e, x, e.dtype if e.dtype not in ("bfloat16", "float16") else "float32")
    axes = axes_of(dims, x.ndim)
    m = nb.reduce_max(x, axes, keep_dim=True)
    m = nb.select(nb.is_inf(m), nb.fill_constant(list(m.shape), 0.0, dtype=str(m.dtype)), m)
    shifted = nb.exp(nb.subtract(x, nb.broadcast_to(m, list(x.shape), list(range(x.ndim)))))
    out = nb.add(nb.log(nb.reduce_sum(shifted, axes, keep_dim=True)), m)
    return out if keepdim else e.to_shape(out)


def _static_shape(x: Any, *_: Any) -> str | None:
    fake = _fake(x)
    if fake is None or all(isinstance(s, int) for s in fake.shape):
        return None
    return f"renorm of symbolic shape {tuple(fake.shape)}"


def _p_norm(e: Emitter, x: Variable, p: float, axes: list[int]) -> Variable:
    """The p-norm over `axes` (kept): max |x| (inf), the count of non-zeros (0), or (sum |x|^p)^(1/p)."""
    nb = e.nb
    magnitude = nb.abs(x)
    if p == float("inf"):
        return nb.reduce_max(magnitude, axes, keep_dim=True)
    if p == 0:
        zero = nb.fill_constant(list(x.shape), 0.0, dtype=str(x.dtype))
        return nb.reduce_sum(nb.cast(nb.not_equal(x, zero), str(x.dtype)), axes, keep_dim=True)
    if p == 1:
        return nb.reduce_sum(magnitude, axes, keep_dim=True)
    powered = nb.pow(magnitude, nb.fill_constant(list(x.shape), p, dtype=str(x.dtype)))
    total = nb.reduce_sum(powered, axes, keep_dim=True)
    return nb.pow(total, nb.fill_constant(list(total.shape), 1.0 / p, dtype=str(x.dtype)))


@converts("aten.renorm.default", check=_static_shape)
def _renorm(e: Emitter, x: Variable, p: Any, dim: int, maxnorm: Any) -> Value:
    """Each slice along `dim` whose p-norm exceeds maxnorm scaled by maxnorm / (norm + 1e-7), as
    torch (the others unchanged)."""
    nb = e.nb
    x = as_dtype(e, x, e.dtype)
    if x.ndim == 0:
        axes: list[int] = []
    else:
        keep = dim % x.ndim
        axes = [d for d in range(x.ndim) if d != keep]
    norm = _p_norm(e, x, float(p), axes) if axes else nb.abs(x)
    bound = nb.fill_constant(list(norm.shape), float(maxnorm), dtype=e.dtype)
    factor = nb.select(nb.greater_than(norm, bound), nb.divide(bound, nb.scale(norm, 1.0, 1e-7)),
                       nb.fill_constant(list(norm.shape), 1.0, dtype=e.dtype))
    return nb.multiply(x, e.broadcast(factor, list(x.shape)) if axes else factor)
