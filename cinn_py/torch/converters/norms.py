"""Batch and group normalisation, forward (training and inference) and backward.

Inference batch norm is a per-channel `x * scale + shift` (scale and shift computed on the [C]
statistics): an elementwise epilogue that fusion puts into the preceding conv's group, so a
conv + batch-norm pair is one kernel. Training batch norm computes the batch statistics over
every axis but the channel axis (1), returns `save_mean` / `save_invstd` for the backward and
the updated running statistics (`_native_batch_norm_legit_functional`: the functional graph
copies them back into the module's buffers; the running variance is the unbiased one, as
torch's).

Low-precision inputs (bf16/fp16 under autocast) are normalised in float32, as torch's CPU
kernels accumulate them, and cast back by the graph's dtype check.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cinn_py.frontend.ops.base import Dim
from cinn_py.frontend.program import Variable
from cinn_py.torch.converters.base import Emitter, Value, as_dtype, compute_dtype, converts

def _per_channel(e: Emitter, v: Variable, like: Variable) -> Variable:
    """A [C] vector broadcast along axis 1 of `like` (NC..., any rank >= 2)."""
    return e.nb.broadcast_to(v, list(like.shape), [1])


def _reduce_axes(x: Variable) -> list[int]:
    return [0, *range(2, x.ndim)]


def _count(x: Variable) -> int:
    """The number of elements per channel (the reduced axes must be static: the check)."""
    n = 1
    for d in _reduce_axes(x):
        n *= int(x.shape[d])
    return n


def _static_reduced(x: Any, *_: Any, **__: Any) -> str | None:
    fake = getattr(x, "meta", {}).get("val")
    if fake is None:
        return None
    if fake.dim() < 2:
        return f"batch norm of a {fake.dim()}-d input"
    dims = [fake.shape[0], *fake.shape[2:]]
    bad = [d for d in dims if not isinstance(d, int)]
    return f"batch norm over the symbolic extent {bad[0]}" if bad else None


def _affine(e: Emitter, x: Variable, mean: Variable, invstd: Variable, w: Variable | None,
            b: Variable | None) -> Variable:
    """(x - mean) * invstd * w + b with the per-channel part folded into one scale and shift:
    y = x * scale + shift (an epilogue fusion merges into the producer's group)."""
    nb = e.nb
    scale = invstd if w is None else nb.multiply(invstd, w)
    shift = nb.negative(nb.multiply(mean, scale))
    shift = shift if b is None else nb.add(shift, b)
    return nb.add(nb.multiply(x, _per_channel(e, scale, x)), _per_channel(e, shift, x))


def _inference(e: Emitter, x: Variable, w: Variable | None, b: Variable | None, mean: Variable,
               var: Variable, eps: float) -> Variable:
    dtype = compute_dtype(x, w, b, mean, var)
    x32, mean, var = as_dtype(e, x, dtype), as_dtype(e, mean, dtype), as_dtype(e, var, dtype)
    w, b = as_dtype(e, w, dtype), as_dtype(e, b, dtype)
    invstd = e.nb.rsqrt(e.nb.scale(var, 1.0, float(eps)))
    return _affine(e, x32, mean, invstd, w, b)


@converts("aten._native_batch_norm_legit_no_training.default", check=_static_reduced)
def _bn_no_training(e: Emitter, x: Variable, w: Variable | None, b: Variable | None, running_mean: Variable,
                    running_var: Variable, momentum: float, eps: float) -> Value:
    """(out, save_mean, save_invstd); the saved statistics are empty (shape [0]) at inference."""
    out = _inference(e, x, w, b, running_mean, running_var, eps)
    return out, _empty(e, out), _empty(e, out)


def _empty(e: Emitter, like: Variable) -> Variable:
    """A [0] tensor: what the op returns for the statistics it does not compute (AOT may save it
    for the backward, which ignores it)."""
    return e.nb.fill_constant([0], 0, dtype=str(like.dtype))


def _batch_stats(e: Emitter, x: Variable, eps: float) -> tuple[Variable, Variable, Variable]:
    """(mean [C], biased variance [C], invstd [C]) over every axis but 1."""
    nb, axes = e.nb, _reduce_axes(x)
    mean = nb.reduce_mean(x, axes)
    centred = nb.subtract(x, _per_channel(e, mean, x))
    var = nb.reduce_mean(nb.multiply(centred, centred), axes)
    return mean, var, nb.rsqrt(nb.scale(var, 1.0, float(eps)))


def _training(e: Emitter, x: Variable, w: Variable | None, b: Variable | None, eps: float
              ) -> tuple[Variable, Variable, Variable, Variable]:
    """(out, mean, invstd, biased var) of training-mode batch norm."""
    dtype = compute_dtype(x, w, b)
    x32, w, b = as_dtype(e, x, dtype), as_dtype(e, w, dtype), as_dtype(e, b, dtype)
    mean, var, invstd = _batch_stats(e, x32, eps)
    return _affine(e, x32, mean, invstd, w, b), mean, invstd, var


def _updated(e: Emitter, running: Variable, batch: Variable, momentum: float) -> Variable:
    """(1 - momentum) running + momentum batch, in the running statistic's dtype."""
    batch = as_dtype(e, batch, str(running.dtype))
    return e.nb.add(e.nb.scale(running, 1.0 - float(momentum)), e.nb.scale(batch, float(momentum)))


@converts("aten._native_batch_norm_legit_functional.default", check=_static_reduced)
def _bn_functional(e: Emitter, x: Variable, w: Variable | None, b: Variable | None, running_mean: Variable,
                   running_var: Variable, training: bool, momentum: float, eps: float) -> Value:
    """(out, save_mean, save_invstd, new running_mean, new running_var)."""
    if not training:
        out = _inference(e, x, w, b, running_mean, running_var, eps)
        return out, _empty(e, out), _empty(e, out), running_mean, running_var
    out, mean, invstd, var = _training(e, x, w, b, eps)
    n = _count(x)
    unbiased = e.nb.scale(var, n / max(n - 1, 1))
    return (out, mean, invstd, _updated(e, running_mean, mean, momentum),
            _updated(e, running_var, unbiased, momentum))


@converts("aten._native_batch_norm_legit.no_stats", check=_static_reduced)
def _bn_no_stats(e: Emitter, x: Variable, w: Variable | None, b: Variable | None, training: bool,
                 momentum: float, eps: float) -> Value:
    """Batch norm without running statistics (track_running_stats=False): always batch statistics."""
    out, mean, invstd, _ = _training(e, x, w, b, eps)
    return out, mean, invstd


def _reserve(e: Emitter) -> Variable:
    """The [0] uint8 `reserve` of the `_batch_norm_with_update` family (cuDNN's workspace; empty on
    the CPU, and `batch_norm_backward` ignores it)."""
    return e.nb.fill_constant([0], 0, dtype="uint8")


@converts("aten._batch_norm_with_update_functional.default", check=_static_reduced)
def _bn_with_update(e: Emitter, x: Variable, w: Variable | None, b: Variable | None, running_mean: Variable,
                    running_var: Variable, momentum: float, eps: float) -> Value:
    """Training batch norm as torch >= 2.4 functionalises it: (out, save_mean, save_invstd,
    reserve, new running_mean, new running_var)."""
    out, mean, invstd, new_mean, new_var = _bn_functional(e, x, w, b, running_mean, running_var, True,
                                                          momentum, eps)
    return out, mean, invstd, _reserve(e), new_mean, new_var


@converts("aten._batch_norm_no_update.default", check=_static_reduced)
def _bn_no_update(e: Emitter, x: Variable, w: Variable | None, b: Variable | None,
                  running_mean: Variable | None,
                  running_var: Variable | None, momentum: float, eps: float) -> Value:
    """(out, save_mean, save_invstd, reserve): the running statistics when given (eval mode; the
    saved ones empty), else the batch's (track_running_stats=False)."""
    if running_mean is not None and running_var is not None:
        out = _inference(e, x, w, b, running_mean, running_var, eps)
        return out, _empty(e, out), _empty(e, out), _reserve(e)
    out, mean, invstd, _ = _training(e, x, w, b, eps)
    return out, mean, invstd, _reserve(e)


def _no_running_update(x: Any, w: Any, b: Any, running_mean: Any, running_var: Any, training: bool,
                       *rest: Any) -> str | None:
    """native_batch_norm updates running_mean/var in place when training: a mutation a Program
    cannot express (functionalised graphs use `_native_batch_norm_legit_functional`)."""
    if training and running_mean is not None:
        return "native_batch_norm updating running statistics in place"
    return _static_reduced(x)


@converts("aten.native_batch_norm.default", "aten._native_batch_norm_legit.default", check=_no_running_update)
def _native_bn(e: Emitter, x: Variable, w: Variable | None, b: Variable | None, running_mean: Variable | None,
               running_var: Variable | None, training: bool, momentum: float, eps: float) -> Value:
    if not training and running_mean is not None and running_var is not None:
        out = _inference(e, x, w, b, running_mean, running_var, eps)
        return out, _empty(e, out), _empty(e, out)
    out, mean, invstd, _ = _training(e, x, w, b, eps)
    return out, mean, invstd


@converts("aten.native_batch_norm_backward.default", check=lambda g, x, *rest: _static_reduced(x))
def _bn_backward(e: Emitter, g: Variable, x: Variable, w: Variable | None, running_mean: Variable | None,
                 running_var: Variable | None, save_mean: Variable | None, save_invstd: Variable | None,
                 train: bool, eps: float, mask: Sequence[bool]) -> Value:
    """(dx, dw, db). Training: dx = invstd w (g - mean(g) - xhat mean(g xhat)); inference
    (statistics are constants): dx = g w invstd."""
    nb = e.nb
    dtype = compute_dtype(g, x, w)
    g, x, w = as_dtype(e, g, dtype), as_dtype(e, x, dtype), as_dtype(e, w, dtype)
    mean, invstd = _backward_stats(e, train, running_mean, running_var, save_mean, save_invstd, eps, dtype)
    axes = _reduce_axes(x)
    xhat = nb.multiply(nb.subtract(x, _per_channel(e, mean, x)), _per_channel(e, invstd, x))
    scale = invstd if w is None else nb.multiply(invstd, w)
    dw = nb.reduce_sum(nb.multiply(g, xhat), axes) if mask[1] or (train and mask[0]) else None
    db = nb.reduce_sum(g, axes) if mask[2] or (train and mask[0]) else None
    dx = None
    if mask[0] and train:
        n = float(_count(x))
        assert dw is not None and db is not None
        centred = nb.subtract(g, nb.add(_per_channel(e, nb.scale(db, 1.0 / n), x),
                                        nb.multiply(xhat, _per_channel(e, nb.scale(dw, 1.0 / n), x))))
        dx = nb.multiply(centred, _per_channel(e, scale, x))
    elif mask[0]:
        dx = nb.multiply(g, _per_channel(e, scale, x))
    return dx, (dw if mask[1] and w is not None else None), (db if mask[2] else None)


def _backward_stats(e: Emitter, train: bool, running_mean: Variable | None, running_var: Variable | None,
                    save_mean: Variable | None, save_invstd: Variable | None, eps: float, dtype: str
                    ) -> tuple[Variable, Variable]:
    """The (mean, invstd) the forward normalised with: the saved batch statistics when training,
    the running ones at inference."""
    if train:
        if save_mean is None or save_invstd is None:
            raise _missing("save_mean/save_invstd when train=True")
        return as_dtype(e, save_mean, dtype), as_dtype(e, save_invstd, dtype)
    if running_mean is None or running_var is None:
        raise _missing("running_mean/running_var when train=False")
    var = as_dtype(e, running_var, dtype)
    return as_dtype(e, running_mean, dtype), e.nb.rsqrt(e.nb.scale(var, 1.0, float(eps)))


def _missing(what: str) -> Exception:
    from cinn_py.frontend.ops.base import FrontendError  # noqa: PLC0415
    return FrontendError(f"native_batch_norm_backward: needs {what}")


@converts("aten.batch_norm_backward.default", check=lambda g, x, *rest: _static_reduced(x))
def _bn_backward_update(e: Emitter, g: Variable, x: Variable, w: Variable | None,
                        running_mean: Variable | None,
                        running_var: Variable | None, save_mean: Variable | None,
                        save_invstd: Variable | None,
                        update: bool, eps: float, mask: Sequence[bool],
                        reserve: Variable | None = None) -> Value:
    """The backward of the `_batch_norm_with_update` family: `native_batch_norm_backward` with
    `update` as its `train` (the reserve is ignored)."""
    return _bn_backward(e, g, x, w, running_mean, running_var, save_mean, save_invstd, update, eps, mask)


# ---------------------------------------------------------------------------------------------------------
# group norm
# ---------------------------------------------------------------------------------------------------------
def _static_groups(x: Any, *args: Any) -> str | None:
    fake = getattr(x, "meta", {}).get("val")
    if fake is None:
        return None
    bad = [d for d in fake.shape if not isinstance(d, int)]
    return f"group norm with the symbolic extent {bad[0]}" if bad else None


def _grouped(e: Emitter, x: Variable, n: int, group: int) -> Variable:
    """x [N, C, *] as [N, G, C/G * prod(*)]: the statistics reduce the last axis."""
    rest = 1
    for d in x.shape[1:]:
        rest *= int(d)
    return e.to_shape(x, [n, group, rest // group])


def _group_channel(e: Emitter, v: Variable, x: Variable, n: int, group: int) -> Variable:
    """A per-(N, G) statistic [N, G] broadcast to x's [N, C, *] (C = G * C/G)."""
    c = int(x.shape[1])
    spread = e.nb.broadcast_to(v, [n, group, c // group], [0, 1])
    return e.nb.broadcast_to(e.to_shape(spread, [n, c]), list(x.shape), [0, 1])


@converts("aten.native_group_norm.default", check=_static_groups)
def _group_norm(e: Emitter, x: Variable, w: Variable | None, b: Variable | None, n: Dim, c: Dim, hxw: Dim,
                group: int, eps: float) -> Value:
    """(out, mean [N, G], rstd [N, G])."""
    nb = e.nb
    dtype = compute_dtype(x, w, b)
    x, w, b = as_dtype(e, x, dtype), as_dtype(e, w, dtype), as_dtype(e, b, dtype)
    n_ = int(x.shape[0])
    flat = _grouped(e, x, n_, group)
    mean = nb.reduce_mean(flat, [2])
    centred = nb.subtract(flat, nb.broadcast_to(mean, list(flat.shape), [0, 1]))
    rstd = nb.rsqrt(nb.scale(nb.reduce_mean(nb.multiply(centred, centred), [2]), 1.0, float(eps)))
    y = e.to_shape(nb.multiply(centred, nb.broadcast_to(rstd, list(flat.shape), [0, 1])), list(x.shape))
    y = y if w is None else nb.multiply(y, _per_channel(e, w, y))
    y = y if b is None else nb.add(y, _per_channel(e, b, y))
    return y, mean, rstd


@converts("aten.native_group_norm_backward.default", check=lambda g, x, *rest: _static_groups(x))
def _group_norm_backward(e: Emitter, g: Variable, x: Variable, mean: Variable, rstd: Variable,
                         w: Variable | None, n: Dim, c: Dim, hxw: Dim, group: int,
                         mask: Sequence[bool]) -> Value:
    """(dx, dw, db): with gw = g w per channel, dx = rstd (gw - mean_g(gw) - xhat mean_g(gw xhat))
    where mean_g averages over a group's C/G * HxW elements."""
    nb = e.nb
    dtype = compute_dtype(g, x, w)
    g, x, w = as_dtype(e, g, dtype), as_dtype(e, x, dtype), as_dtype(e, w, dtype)
    mean, rstd = as_dtype(e, mean, dtype), as_dtype(e, rstd, dtype)
    n_ = int(x.shape[0])
    xhat = nb.multiply(nb.subtract(x, _group_channel(e, mean, x, n_, group)),
                       _group_channel(e, rstd, x, n_, group))
    spatial = [0, *range(2, x.ndim)]
    dw = nb.reduce_sum(nb.multiply(g, xhat), spatial) if mask[1] and w is not None else None
    db = nb.reduce_sum(g, spatial) if mask[2] else None
    if not mask[0]:
        return None, dw, db
    gw = g if w is None else nb.multiply(g, _per_channel(e, w, g))
    flat_gw, flat_xhat = _grouped(e, gw, n_, group), _grouped(e, xhat, n_, group)
    inner = nb.subtract(nb.subtract(flat_gw, nb.reduce_mean(flat_gw, [2], keep_dim=True)),
                        nb.multiply(flat_xhat,
                                    nb.reduce_mean(nb.multiply(flat_gw, flat_xhat), [2], keep_dim=True)))
    dx = nb.multiply(e.to_shape(inner, list(x.shape)), _group_channel(e, rstd, x, n_, group))
    return dx, dw, db

