"""Statistics and selections along dims (var/std/var_mean and logsumexp: `statistics`): std_mean,
prod, any/all, argmax/argmin, max/min (over everything or along a dim, with indices), vector norms, sort and
topk."""

from __future__ import annotations

import math
from typing import Any

from cinn_py.frontend.ops.shapes import numel
from cinn_py.frontend.program import Variable
from cinn_py.torch.converters.base import Emitter, Value, axes_of, axis_of, converts, no_dtype, static_dim
from cinn_py.torch.converters.math import as_dtype, full
from cinn_py.torch.converters.logical import truth


def _static_reduced(x: Any, dims: Any = None, *_: Any, **__: Any) -> str | None:
    """Ops that divide by or index with the reduced extent need it static."""
    fake = getattr(x, "meta", {}).get("val")
    if fake is None:
        return None
    axes = axes_of(dims, fake.dim())
    sym = [fake.shape[a] for a in axes if not isinstance(fake.shape[a], int)]
    return f"reduction over symbolic dims {sym}" if sym else None


def _sum(e: Emitter, x: Variable, axes: list[int], keepdim: bool) -> Variable:
    """A sum over `axes` (none: x itself; NetBuilder's empty `dim` means all)."""
    return e.nb.reduce_sum(x, axes, keep_dim=keepdim) if axes else x


def _moments(e: Emitter, x: Variable, dims: Any, correction: Any, keepdim: bool) -> tuple[Variable, Variable]:
    """(variance, mean) with torch's `correction` (None: 1), in x's float dtype."""
    nb = e.nb
    axes = axes_of(dims, x.ndim) if x.ndim else []
    count = numel([static_dim(x.shape[a]) for a in axes])
    mean = (nb.scale(_sum(e, x, axes, True), 1.0 / count) if count
            else nb.scale(_sum(e, x, axes, True), math.nan))
    centred = nb.subtract(x, mean)
    dof = count - (1 if correction is None else correction)
    squares = _sum(e, nb.multiply(centred, centred), axes, keepdim)
    var = (nb.scale(squares, 1.0 / dof) if dof > 0
           else nb.divide(squares, e.broadcast(0.0, list(squares.shape))))
    kept = mean if keepdim or not axes else e.to_shape(mean, list(var.shape))
    return var, kept


@converts("aten.std_mean.correction", check=_static_reduced)
def _std_mean(e: Emitter, x: Variable, dims: Any = None, *, correction: Any = None,
              keepdim: bool = False) -> Value:
    var, mean = _moments(e, x, dims, correction, keepdim)
    return e.nb.sqrt(var), mean


@converts("aten.prod.default", "aten.prod.dim_int", check=no_dtype)
def _prod(e: Emitter, x: Variable, dim: Any = None, keepdim: bool = False, **_: Any) -> Value:
    x = as_dtype(e, x)
    axes = axes_of(dim, x.ndim) if x.ndim else []
    return e.nb.reduce_prod(x, axes, keep_dim=keepdim) if axes else x


def _any_all(method: str) -> Any:
    def convert(e: Emitter, x: Variable, dim: Any = None, keepdim: bool = False) -> Value:
        x = truth(e, x)
        axes = axes_of(dim, x.ndim) if x.ndim else []
        return as_dtype(e, getattr(e.nb, method)(x, axes, keep_dim=keepdim) if axes else x)
    return convert


converts("aten.any.default", "aten.any.dim", "aten.any.dims")(_any_all("reduce_any"))
converts("aten.all.default", "aten.all.dim", "aten.all.dims")(_any_all("reduce_all"))


def _arg(method: str) -> Any:
    def convert(e: Emitter, x: Variable, dim: Any = None, keepdim: bool = False) -> Value:
        if dim is None or x.ndim == 0:  # over the flattened tensor
            x, axis = e.to_shape(x, [numel(x.shape)]) if x.ndim != 1 else x, 0
        else:
            axis = axis_of(dim, x.ndim)
        x = x if str(x.dtype) != "bool" else e.nb.cast(x, "int32")  # NetBuilder orders numbers only
        return e.to_shape(getattr(e.nb, method)(x, axis=axis, keep_dim=keepdim))
    return convert


converts("aten.argmax.default")(_arg("argmax"))
converts("aten.argmin.default")(_arg("argmin"))


def _arg_index(e: Emitter, x: Variable, axis: int, largest: bool) -> Variable:
    """argmax/argmin along `axis`, kept as a size-1 dim, int64."""
    method = e.nb.argmax if largest else e.nb.argmin
    x = x if str(x.dtype) != "bool" else e.nb.cast(x, "int32")
    return e.nb.cast(method(x, axis=axis, keep_dim=True), "int64")


def _with_indices(largest: bool) -> Any:
    def convert(e: Emitter, x: Variable, dim: int, keepdim: bool = False) -> Value:
        nb = e.nb
        lifted = x if x.ndim else e.to_shape(x, [1])
        axis = axis_of(dim, lifted.ndim)
        index = _arg_index(e, lifted, axis, largest)
        values = nb.gather(lifted, index, axis=axis)
        shape = [d for k, d in enumerate(lifted.shape) if k != axis or keepdim] if x.ndim else []
        if keepdim and x.ndim:
            shape = list(index.shape)
        return e.to_shape(values, shape), e.to_shape(index, shape)
    return convert


converts("aten.max.dim")(_with_indices(True))
converts("aten.min.dim")(_with_indices(False))


def _max_all(e: Emitter, x: Variable, largest: bool) -> Value:
    nb = e.nb
    flat = e.to_shape(x, [numel(x.shape)]) if x.ndim != 1 else x
    return e.to_shape(nb.gather(flat, _arg_index(e, flat, 0, largest), axis=0))


converts("aten.max.default")(lambda e, x: _max_all(e, x, True))
converts("aten.min.default")(lambda e, x: _max_all(e, x, False))


def _norm_check(x: Any, ord: Any = 2, dim: Any = None, keepdim: bool = False, *,
                dtype: Any = None) -> str | None:
    return None if isinstance(ord, (int, float)) else f"linalg_vector_norm ord={ord}"


@converts("aten.linalg_vector_norm.default", check=_norm_check)
def _vector_norm(e: Emitter, x: Variable, ord: float = 2, dim: Any = None, keepdim: bool = False, *,
                 dtype: Any = None) -> Value:
    nb = e.nb
    x = as_dtype(e, x)
    axes = axes_of(dim, x.ndim) if x.ndim else []
    mag = nb.abs(x)
    if not axes:
        return mag if ord != 0 else as_dtype(e, nb.not_equal(x, 0))
    if ord == math.inf:
        return nb.reduce_max(mag, axes, keep_dim=keepdim)
    if ord == -math.inf:
        return nb.reduce_min(mag, axes, keep_dim=keepdim)
    if ord == 0:
        return nb.reduce_sum(as_dtype(e, nb.not_equal(x, 0)), axes, keep_dim=keepdim)
    if ord == 1:
        return nb.reduce_sum(mag, axes, keep_dim=keepdim)
    if ord == 2:
        return nb.sqrt(nb.reduce_sum(nb.multiply(x, x), axes, keep_dim=keepdim))
    powered = nb.reduce_sum(nb.pow(mag, e.broadcast(float(ord), list(mag.shape))), axes, keep_dim=keepdim)
    return nb.pow(powered, e.broadcast(1.0 / float(ord), list(powered.shape)))


@converts("aten.sort.default", "aten.sort.stable")
def _sort(e: Emitter, x: Variable, dim: int = -1, descending: bool = False, *, stable: Any = None,
          **_: Any) -> Value:
    """Stable sort (NaN last ascending, first descending, as torch); indices int64."""
    nb = e.nb
    if isinstance(dim, bool):  # sort.stable(x, *, stable, dim, descending) passed positionally
        dim = -1
    lifted = x if x.ndim else e.to_shape(x, [1])
    axis = axis_of(dim, lifted.ndim)
    order: Any = nb.argsort(lifted, axis=axis, is_ascend=not descending)  # [indices, positions]
    index = nb.cast(order[0], "int64")
    values = nb.gather(lifted, index, axis=axis)
    shape = list(x.shape)
    return e.to_shape(values, shape), e.to_shape(index, shape)


def _topk_check(x: Any, k: Any, dim: int = -1, *_: Any, **__: Any) -> str | None:
    return None if isinstance(k, int) else f"topk with a symbolic k={k}"


@converts("aten.topk.default", check=_topk_check)
def _topk(e: Emitter, x: Variable, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> Value:
    nb = e.nb
    lifted = x if x.ndim else e.to_shape(x, [1])
    axis = axis_of(dim, lifted.ndim)
    pair: Any = nb.top_k(lifted, k, axis=axis, largest=largest)  # [values, indices]
    values, index = pair
    shape = [*lifted.shape[:axis], k, *lifted.shape[axis + 1:]] if x.ndim else []
    return e.to_shape(values,
                      shape), e.to_shape(nb.cast(index, "int64") if str(index.dtype) != "int64" else index,
                                                 shape)



@converts("aten.count_nonzero.default", "aten.count_nonzero.dim_IntList")
def _count_nonzero(e: Emitter, x: Variable, dim: Any = None) -> Value:
    nonzero = as_dtype(e, truth(e, x))
    axes = axes_of(dim, x.ndim)
    return e.nb.reduce_sum(nonzero, axes) if axes else nonzero


@converts("aten.norm.ScalarOpt_dim", "aten.norm.Scalar", "aten.norm.ScalarOpt_dtype",
          check=lambda x, p=2, *rest, **kw: None if p is None or isinstance(p, (int, float))
          else f"norm p={p}")
def _norm(e: Emitter, x: Variable, p: Any = 2, dim: Any = None, keepdim: bool = False, **_: Any) -> Value:
    return _vector_norm(e, x, 2 if p is None else p,
                        dim if dim is not None and not isinstance(dim, bool) else None,
                        keepdim if not isinstance(dim, bool) else False)


@converts("aten.dist.default", check=lambda a, b, p=2: None if isinstance(p, (int, float)) else f"dist p={p}")
def _dist(e: Emitter, a: Variable, b: Variable, p: Any = 2) -> Value:
    diff = e.nb.subtract(full(Emitter(e.nb, _broadcast_shape(a, b), e.dtype), a),
                         full(Emitter(e.nb, _broadcast_shape(a, b), e.dtype), b))
    return _vector_norm(e, diff, p)


def _broadcast_shape(a: Variable, b: Variable) -> tuple[Any, ...]:
    rank = max(a.ndim, b.ndim)
    sa, sb = [1] * (rank - a.ndim) + list(a.shape), [1] * (rank - b.ndim) + list(b.shape)
    return tuple(y if isinstance(x, int) and x == 1 else x for x, y in zip(sa, sb))
