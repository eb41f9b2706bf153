"""Data-movement ops: `broadcast_to` (kBroadcast) and `reshape`, `transpose` (kInjective); `slice`
and `concat` are `slice_concat`.

Each is an index remapping in the compute DSL. `reshape` differs from CINN, which registers it
as ElementWise because there it only re-labels a buffer; here it computes its elements through
`ravel`/`unravel` index arithmetic, so it is injective and stays out of reduction groups.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cinn_py.frontend import compute as cdsl
from cinn_py.frontend.ops.base import (
    Attrs, Dim, FrontendError, OpDef, OpPatternKind, Shape, SymbolEnv, TensorType, register,
)
from cinn_py.frontend.ops.signature import Signature, any_value, attr, int_list, tensor
from cinn_py.frontend.ops.testing import Case, Input, OpTest
from cinn_py.frontend.ops.reduce import frontend_dims
from cinn_py.frontend.ops.shapes import (
    dims_equal, div_dims, eval_shape, fmt_dim, fmt_shape, normalize_axis, numel, to_dim,
)
from cinn_py.ir import Expr, IntImm, const

INT_MAX = 2**31 - 1
MOVE_DTYPES = ("float32", "float16", "bfloat16", "int32", "bool")


def _first(values: Sequence[Any], attrs: Attrs, ins: Sequence[TensorType], out: TensorType) -> Any:
    return values[0]


def _index_const(value: int, like: Expr) -> Expr:
    return const(value, like.dtype)


def _like(dim: Expr, index: Expr) -> Expr:
    """A DSL tensor dim in the dtype of the loop index (static dims of a tensor are int32 even in a
    function whose other tensors are symbolic, hence int64)."""
    return const(dim.value, index.dtype) if isinstance(dim, IntImm) else dim


# -- broadcast_to ------------------------------------------------------------------------------------
def broadcast_attrs(x: TensorType, out_shape: Shape, broadcast_axes: Sequence[int] | None) -> dict[str, Any]:
    """Validated attrs: input dim `d` maps to output axis `broadcast_axes[d]` (CINN); default is
    numpy's right alignment. The mapped dims must be equal or 1."""
    rank = len(out_shape)
    if broadcast_axes is None:
        if x.ndim > rank:
            raise FrontendError(f"broadcast_to: cannot broadcast {fmt_shape(x.shape)} to the lower-rank "
                                f"shape {fmt_shape(out_shape)}")
        axes = tuple(range(rank - x.ndim, rank))
    else:
        axes = tuple(normalize_axis(a, rank, "broadcast_to", "broadcast axis") for a in broadcast_axes)
    if len(axes) != x.ndim:
        raise FrontendError(f"broadcast_to: broadcast_axes {list(axes)} must name one output axis per input "
                            f"dim ({x.ndim} for {fmt_shape(x.shape)})")
    if any(b <= a for a, b in zip(axes, axes[1:])):
        raise FrontendError(f"broadcast_to: broadcast_axes {list(axes)} must be strictly increasing "
                            "(use transpose to reorder dims)")
    for d, a in enumerate(axes):
        src, dst = x.shape[d], out_shape[a]
        if not (isinstance(src, int) and src == 1) and not dims_equal(src, dst):
            raise FrontendError(f"broadcast_to: cannot broadcast {fmt_shape(x.shape)} to "
                                f"{fmt_shape(out_shape)}: "
                                f"input dim {d} ({fmt_dim(src)}) maps to output axis {a} ({fmt_dim(dst)}); "
                                "it must be equal or 1")
    return {"shape": tuple(out_shape), "broadcast_axes": axes}


def _broadcast_infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    broadcast_attrs(ins[0], attrs["shape"], attrs["broadcast_axes"])
    return [TensorType(tuple(attrs["shape"]), ins[0].dtype)]


def _broadcast_numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    x = arrays[0]
    out_shape = eval_shape(attrs["shape"], env)
    view = [1] * len(out_shape)
    for d, a in enumerate(attrs["broadcast_axes"]):
        view[a] = x.shape[d]
    return [np.broadcast_to(x.reshape(view), out_shape).copy()]


def _broadcast_compute(ins: Sequence[cdsl.ComputeTensor], attrs: Attrs, out: TensorType,
                       out_name: str) -> cdsl.ComputeTensor:
    x = ins[0]
    src = frontend_dims(x)

    def body(*idx: Expr) -> Expr:
        index = []
        for d, a in enumerate(attrs["broadcast_axes"]):
            dst = out.shape[a]
            one_to_many = src[d] == 1 and not (isinstance(dst, int) and dst == 1)
            index.append(_index_const(0, idx[a]) if one_to_many else idx[a])
        return x[tuple(index)]

    return cdsl.compute(out.shape, body, out_name)


def _broadcast_sig_attrs(ins: Sequence[TensorType], at: Attrs) -> dict[str, Any]:
    shape = at["out_shape"]
    if not isinstance(shape, (list, tuple)):
        raise FrontendError(f"broadcast_to: argument 'out_shape' must be a list, got {type(shape).__name__}")
    dims = tuple(to_dim(v, f"broadcast_to: out_shape[{k}]") for k, v in enumerate(shape))
    return broadcast_attrs(ins[0], dims, at["broadcast_axes"] or None)


register(OpDef("broadcast_to", OpPatternKind.kBroadcast, _broadcast_infer, _broadcast_numpy,
               _broadcast_compute, fold=_first, arity=1,
               signature=Signature((tensor("x"), attr("out_shape", any_value),
                                    attr("broadcast_axes", int_list, ())),
                                   attrs=_broadcast_sig_attrs,
                                   doc="Broadcast `x` to `out_shape`; input dim d maps to output axis "
                                       "`broadcast_axes[d]` (default: trailing alignment)."),
               test=OpTest(MOVE_DTYPES, lambda d: [
                   Case((Input((1,)),), {"out_shape": [7]}), Case((Input((5,)),), {"out_shape": [3, 5]}),
                   Case((Input((3,)),), {"out_shape": [3, 4], "broadcast_axes": [0]}),
                   Case((Input((3, 1)),), {"out_shape": [2, 3, 5], "broadcast_axes": [1, 2]}),
                   Case((Input(("S0", 1)),), {"out_shape": ["S0", 6]})])))


# -- reshape -----------------------------------------------------------------------------------------
def reshape_shape(x: TensorType, shape: Sequence[Dim]) -> Shape:
    """Resolve 0 (copy the input dim) and one -1 (inferred; symbolic through sympy) and check that
    the element counts are provably equal."""
    dims: list[Dim] = []
    infer_at = None
    for k, s in enumerate(shape):
        if isinstance(s, int) and s == -1:
            if infer_at is not None:
                raise FrontendError(f"reshape: shape {list(shape)} has more than one -1")
            infer_at = k
            dims.append(1)
        elif isinstance(s, int) and s == 0:
            if k >= x.ndim:
                raise FrontendError(f"reshape: shape[{k}] = 0 copies input dim {k}, but the input "
                                    f"{fmt_shape(x.shape)} has rank {x.ndim}")
            dims.append(x.shape[k])
        elif isinstance(s, int) and s < 0:
            raise FrontendError(f"reshape: shape[{k}] = {s} is negative (only -1 is allowed)")
        else:
            dims.append(s)
    total, known = numel(x.shape), numel(dims)
    if infer_at is not None:
        dims[infer_at] = _exact_quotient(total, known, x, shape)
    elif not dims_equal(total, known):
        raise FrontendError(f"reshape: cannot reshape {fmt_shape(x.shape)} ({fmt_dim(total)} elements) to "
                            f"{fmt_shape(dims)} ({fmt_dim(known)} elements)")
    return tuple(dims)


def _exact_quotient(total: Dim, known: Dim, x: TensorType, shape: Sequence[Dim]) -> Dim:
    q = div_dims(total, known)
    if q is None:
        raise FrontendError(f"reshape: cannot infer -1 in {[fmt_dim(s) for s in shape]}: {fmt_dim(total)} "
                            f"elements of {fmt_shape(x.shape)} are not a multiple of {fmt_dim(known)}")
    return q


def _reshape_infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    return [TensorType(reshape_shape(ins[0], attrs["shape"]), ins[0].dtype)]


def _reshape_numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    return [arrays[0].reshape(eval_shape(attrs["shape"], env)).copy()]


def _strides(dims: Sequence[Any]) -> list[Any]:
    out: list[Any] = [1] * len(dims)
    for a in range(len(dims) - 2, -1, -1):
        out[a] = dims[a + 1] * out[a + 1]
    return out


def _dim_groups(src: Sequence[Any], dst: Sequence[Any]) -> list[tuple[int, int, int, int]] | None:
    """The shortest runs `src[a0:a1]`, `dst[b0:b1]` of equal size covering both shapes (static,
    nonzero dims; None otherwise): a reshape only regroups dims within each run, so a dim kept as
    it is (`[256, 512] -> [4, 64, 512]`: the 512) indexes the source by its own loop variable."""
    if not all(isinstance(d, int) and d > 0 for d in (*src, *dst)):
        return None
    groups: list[tuple[int, int, int, int]] = []
    i = j = 0
    while i < len(src) or j < len(dst):
        a0, b0, ps, pd = i, j, 1, 1
        if i < len(src):
            ps, i = src[i], i + 1
        if j < len(dst):
            pd, j = dst[j], j + 1
        while ps != pd:
            if ps < pd and i < len(src):
                ps, i = ps * src[i], i + 1
            elif pd < ps and j < len(dst):
                pd, j = pd * dst[j], j + 1
            else:
                return None
        groups.append((a0, i, b0, j))
    return groups


def _regrouped(idx: Sequence[Expr], src: Sequence[Any], dst: Sequence[Any]) -> list[Any]:
    """Source indices of the dims `src` for the indices `idx` of the dims `dst` (same size):
    the row-major linear index, split again."""
    if len(src) == 1 and len(dst) == 1:
        return [idx[0]]
    lin: Any = 0
    for i, stride in zip(idx, _strides(dst)):
        lin = lin + i * stride if not (isinstance(stride, int) and stride == 1) else lin + i
    index = []
    for b, stride in enumerate(_strides(src)):
        q = lin if isinstance(stride, int) and stride == 1 else lin // stride
        index.append(q % src[b] if b > 0 else q)
    return index


def _reshape_compute(ins: Sequence[cdsl.ComputeTensor], attrs: Attrs, out: TensorType,
                     out_name: str) -> cdsl.ComputeTensor:
    x = ins[0]
    src = [d.value if isinstance(d, IntImm) else d for d in x.shape]
    dst = list(out.shape)
    groups = _dim_groups(src, dst)

    def body(*idx: Expr) -> Expr:
        if not src:
            return x[()]
        if not idx:
            return x[tuple(_index_const(0, x.shape[0]) for _ in src)]
        if groups is None:
            return x[tuple(_regrouped(idx, src, dst))]
        index: list[Any] = []
        for a0, a1, b0, b1 in groups:
            if b0 == b1:  # source dims of extent 1 the result drops
                index += [_index_const(0, x.shape[a]) for a in range(a0, a1)]
            elif a0 < a1:
                index += _regrouped(idx[b0:b1], src[a0:a1], dst[b0:b1])
        return x[tuple(index)]

    return cdsl.compute(out.shape, body, out_name)


def _reshape_sig_attrs(ins: Sequence[TensorType], at: Attrs) -> dict[str, Any]:
    shape = at["shape"]
    if not isinstance(shape, (list, tuple)):
        raise FrontendError(f"reshape: argument 'shape' must be a list, got {type(shape).__name__}")
    raw = [v if isinstance(v, int) and not isinstance(v, bool) and v < 0
           else to_dim(v, f"reshape: shape[{k}]")
           for k, v in enumerate(shape)]
    return {"shape": reshape_shape(ins[0], raw)}


register(OpDef("reshape", OpPatternKind.kInjective, _reshape_infer, _reshape_numpy, _reshape_compute,
               fold=_first, arity=1,
               signature=Signature((tensor("x"), attr("shape", any_value)), attrs=_reshape_sig_attrs,
                                   doc="Reshape to `shape` (0 copies the input dim, one -1 is inferred)."),
               test=OpTest(MOVE_DTYPES, lambda d: [
                   Case((Input((3, 5)),), {"shape": [5, 3]}), Case((Input((2, 1, 6)),), {"shape": [-1]}),
                   Case((Input((7,)),), {"shape": [7, 1]}), Case((Input(("S0", 6)),), {"shape": [0, 2, 3]}),
                   Case((Input(("S0", 6)),), {"shape": [-1, 3]})])))


# -- transpose ------------------------------------------------------------------------------------------
def check_perm(x: TensorType, perm: Sequence[int]) -> tuple[int, ...]:
    p = tuple(normalize_axis(a, x.ndim, "transpose", "perm entry") for a in perm)
    if sorted(p) != list(range(x.ndim)):
        raise FrontendError(f"transpose: perm {list(perm)} is not a permutation of the {x.ndim} axes of "
                            f"{fmt_shape(x.shape)}")
    return p


def _transpose_infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    p = check_perm(ins[0], attrs["perm"])
    return [TensorType(tuple(ins[0].shape[a] for a in p), ins[0].dtype)]


def _transpose_numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    return [np.ascontiguousarray(np.transpose(arrays[0], attrs["perm"]))]


def _transpose_compute(ins: Sequence[cdsl.ComputeTensor], attrs: Attrs, out: TensorType,
                       out_name: str) -> cdsl.ComputeTensor:
    x, perm = ins[0], attrs["perm"]

    def body(*idx: Expr) -> Expr:
        index: list[Expr] = [idx[0]] * len(perm)
        for a, p in enumerate(perm):  # output axis a reads input axis perm[a]
            index[p] = idx[a]
        return x[tuple(index)]

    return cdsl.compute(out.shape, body, out_name)


register(OpDef("transpose", OpPatternKind.kInjective, _transpose_infer, _transpose_numpy,
               _transpose_compute, fold=_first, arity=1,
               signature=Signature((tensor("x"), attr("axis", int_list)),
                                   attrs=lambda ins, at: {"perm": check_perm(ins[0], at["axis"])},
                                   doc="Permute the dims: output axis k is input axis `axis[k]`."),
               test=OpTest(MOVE_DTYPES, lambda d: [
                   Case((Input((3, 5)),), {"axis": [1, 0]}), Case((Input((2, 1, 6)),), {"axis": [2, 0, 1]}),
                   Case((Input(("S0", 5)),), {"axis": [1, 0]}), Case((Input((7,)),), {"axis": [0]})])))
