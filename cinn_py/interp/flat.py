"""The vectorised execution of a planned loop nest (`stmts.StmtCompiler` plans it): the extents of
this execution decide whether a whole sub-nest runs as one flat numpy operation (independent
extents, within `FLAT_LIMIT` elements) or iteration by iteration; flat reductions scatter their
updates exactly (`np.add.at` and friends), so repeated indices accumulate as the serial loop
would.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from cinn_py.interp import depend
from cinn_py.interp import numerics as nm
from cinn_py.interp.errors import InterpError
from cinn_py.interp.exprs import Env, ExprFn
from cinn_py.ir import For, Store, print_ir

StmtFn = Callable[[Env], None]
Red = depend.ReducePattern | None
FLAT_LIMIT = 1 << 20
"""Most iterations evaluated at once (bounds the temporary arrays)."""


@dataclass
class _Level:
    var: str
    dtype: np.dtype
    min_fn: ExprFn
    extent_fn: ExprFn


@dataclass
class _Suffix:
    """Vectorisation facts for the sub-nest of levels `start..` of a perfect nest."""

    start: int
    loop_vars: frozenset[str]
    parallel_dims: list[list[depend.Coefs | None]] | None
    """Per written buffer, the affine coefficients of each index dim (None: not parallel)."""
    reduce_ok: bool
    lanes: int = 1


def _extents_independent(fors: list[For], k: int) -> bool:
    """Bounds of levels k+1.. do not use the loop vars of levels k.. (rectangular sub-nest)."""
    inner = set()
    for f in fors[k:]:
        used = depend.free_vars(f.min) | depend.free_vars(f.extent)
        if used & inner:
            return False
        inner.add(f.loop_var.name)
    return True


def _try_flat(suffix: _Suffix, levels: list[_Level], plain: StmtFn, reduce_body: StmtFn | None,
              env: Env) -> bool:
    """Run levels `suffix.start..` as one vectorised evaluation if legal here; report success."""
    sub = levels[suffix.start:]
    bounds = [(int(lv.min_fn(env)), int(lv.extent_fn(env))) for lv in sub]
    total = 1
    for _, n in bounds:
        total *= max(n, 0)
    if total > FLAT_LIMIT:
        return False
    extents = {lv.var: n for lv, (_, n) in zip(sub, bounds)}
    body: StmtFn | None = None
    if suffix.parallel_dims is not None and all(
            depend.injective(dims, _box(dims, extents, suffix.lanes), env) for dims in suffix.parallel_dims):
        body = plain
    if body is None and suffix.reduce_ok:
        body = reduce_body
    if body is None:
        return False
    if total == 0:
        return True
    if total == 1:  # one iteration: plain scalar evaluation (a column would not fit a scalar store)
        for level, (lo, _) in zip(sub, bounds):
            env[level.var] = level.dtype.type(lo)
        plain(env)
        return True
    _bind_flat(sub, bounds, total, env)
    env["__n__"] = total
    body(env)
    return True


def _box(dims: list[depend.Coefs | None], extents: dict[str, int], lanes: int) -> dict[str, int]:
    """The iteration box of one buffer's index: the loop extents, plus the vector lanes when the
    index is a Ramp (lanes of one store must be distinct elements too)."""
    if lanes > 1 and any(d is not None and depend.LANE in d for d in dims):
        return {**extents, depend.LANE: lanes}
    return extents


def _bind_flat(sub: list[_Level], bounds: list[tuple[int, int]], total: int, env: Env) -> None:
    """Bind each loop var of the sub-nest to an (total, 1) column in lexicographic order."""
    if len(sub) == 1:
        lo = bounds[0][0]
        env[sub[0].var] = np.arange(lo, lo + total, dtype=sub[0].dtype).reshape(total, 1)
        return
    rest = np.arange(total, dtype=np.int64)
    for level, (lo, n) in zip(reversed(sub), reversed(bounds)):
        env[level.var] = (rest % n + lo).astype(level.dtype).reshape(total, 1)
        rest = rest // n


def _run_serial(level: _Level, body: StmtFn, env: Env) -> None:
    lo, n = int(level.min_fn(env)), int(level.extent_fn(env))
    name = level.var
    for value in np.arange(lo, lo + max(n, 0), dtype=level.dtype):
        env[name] = value
        body(env)


def _view(views: dict[str, np.ndarray], name: str, node: Store) -> np.ndarray:
    try:
        return views[name]
    except KeyError:
        raise InterpError(f"interp: tensor '{name}' is written but its buffer is not allocated",
                          print_ir(node)) from None


def _per_iteration(value: Any, n: int, lane_shape: tuple[int, ...], node: Store) -> np.ndarray:
    """The reduction operand as an array (n, *lane_shape): one row per active iteration."""
    arr = np.asarray(value)
    if arr.ndim == 2 and not lane_shape:
        if arr.shape[1] != 1:
            raise InterpError("interp: vector value reduced into a scalar element", print_ir(node))
        return arr[:, 0]
    if arr.ndim == 2:
        return np.broadcast_to(arr, (n,) + lane_shape)
    return np.broadcast_to(arr, (n,) + lane_shape)


_SCATTER = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum,
            "all": np.logical_and, "any": np.logical_or}


def _scatter_exact(pattern: depend.ReducePattern) -> bool:
    """Whether `ufunc.at` reproduces the serial fold when the target element varies: it applies
    `T[idx_e] = T[idx_e] OP v_e` in iteration order, which is exact except for the bfloat16 rounding
    steps and the NaN/signed-zero rules of float cinn_max/cinn_min."""
    dtype = pattern.store.tensor.dtype
    if dtype.kind == "bfloat":
        return False
    return not (pattern.kind in ("max", "min") and dtype.is_float)


def _fold(kind: str, acc: Any, values: np.ndarray, dtype: Any) -> Any:
    """acc OP v_0 OP v_1 ... for the reduction `kind` (see module doc for float order)."""
    if kind in ("max", "min"):
        return nm.fold_min_max(acc, values, kind == "max")
    if kind == "all":
        return acc & np.logical_and.reduce(values, axis=0)
    if kind == "any":
        return acc | np.logical_or.reduce(values, axis=0)
    ufunc = np.add if kind == "sum" else np.multiply
    if dtype.kind == "bfloat":
        total = ufunc.reduce(values, axis=0, dtype=np.float32)
        return nm.round_bf16(ufunc(acc, nm.round_bf16(total)))
    # ufunc.at applies the operation element by element in order: the exact serial fold.
    buf = np.array(acc, dtype=values.dtype).reshape((1,) + values.shape[1:])
    ufunc.at(buf, np.zeros(values.shape[0], dtype=np.intp), values)
    return buf[0][()]
