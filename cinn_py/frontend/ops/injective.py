"""Data-movement ops: `broadcast_to` (kBroadcast) and `reshape`, `transpose`, `slice`, `concat`
(kInjective).

Each is an index remapping in the compute DSL. `reshape` differs from CINN, which registers it
as ElementWise because there it only re-labels a buffer; here it computes its elements through
`ravel`/`unravel` index arithmetic, so it is injective and stays out of reduction groups.
`concat` reads every operand with clamped indices and selects the right one, so no branch ever
reads out of bounds, whichever way a backend evaluates `select`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cinn_py.frontend import compute as cdsl
from cinn_py.frontend.ops.base import (
    Attrs, Dim, FrontendError, OpDef, OpPatternKind, Shape, SymbolEnv, TensorType, register,
)
from cinn_py.frontend.ops.elementwise_base import check_same_dtypes
from cinn_py.frontend.ops.signature import (OpCall, Signature, any_value, attr, int_list, integer, tensor,
                                            tensors)
from cinn_py.frontend.ops.testing import Case, Input, OpTest
from cinn_py.frontend.ops.reduce import frontend_dims
from cinn_py.frontend.ops.shapes import (
    add_dims, dims_equal, div_dims, eval_dim, eval_shape, fmt_dim, fmt_shape, normalize_axis, numel,
    simplify_dim,
    to_dim,
)
from cinn_py.ir import Expr, IntImm, as_expr, const

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


# -- slice -----------------------------------------------------------------------------------------------
def slice_attrs(x: TensorType, axes: Sequence[int], starts: Sequence[int], ends: Sequence[int],
                strides: Sequence[int] | None) -> dict[str, Any]:
    """Per sliced axis (start, stride, extent). Static dims follow Python slicing (negative
    indices, clamping). On a symbolic dim only stride 1 is accepted, with negative start/end taken
    from the end and `end >= 2^31 - 1` meaning "to the end"; a non-negative start/end cannot be
    checked against an unknown extent, so it is rejected (except start 0)."""
    strides = [1] * len(axes) if strides is None else list(strides)
    if not len(axes) == len(starts) == len(ends) == len(strides):
        raise FrontendError(f"slice: axes, starts, ends and strides must have one length, got "
                            f"{len(axes)}, {len(starts)}, {len(ends)}, {len(strides)}")
    norm = [normalize_axis(a, x.ndim, "slice") for a in axes]
    if len(set(norm)) != len(norm):
        raise FrontendError(f"slice: axes {list(axes)} name an axis twice")
    spec: dict[int, tuple[Dim, int, Dim]] = {}
    for a, s, e, st in zip(norm, starts, ends, strides):
        for what, v in (("start", s), ("end", e), ("stride", st)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise TypeError(f"slice: {what} must be an int, got {type(v).__name__}")
        if st == 0:
            raise FrontendError("slice: stride must not be 0")
        dim = x.shape[a]
        spec[a] = _static_slice(dim, int(s), int(e), int(st)) if isinstance(dim, int) \
            else _symbolic_slice(dim, int(s), int(e), int(st), a)
    out = tuple(spec[a][2] if a in spec else d for a, d in enumerate(x.shape))
    return {"spec": tuple(sorted((a, st, step) for a, (st, step, _) in spec.items())), "shape": out,
            "axes": tuple(norm), "starts": tuple(starts), "ends": tuple(ends), "strides": tuple(strides)}


def _static_slice(dim: int, s: int, e: int, st: int) -> tuple[Dim, int, Dim]:
    start, stop, step = slice(s, e, st).indices(dim)
    return start, step, len(range(start, stop, step))


def _symbolic_slice(dim: Expr, s: int, e: int, st: int, axis: int) -> tuple[Dim, int, Dim]:
    if st != 1:
        raise FrontendError(f"slice: axis {axis} has the symbolic extent {fmt_dim(dim)}; only stride 1 is "
                            f"supported there, got {st}")
    if s > 0 or (e >= 0 and e < INT_MAX):
        raise FrontendError(f"slice: axis {axis} has the symbolic extent {fmt_dim(dim)}; a non-negative "
                            "start "
                            f"or end ({s}:{e}) cannot be checked against it; index from the end "
                            "(negative values) or slice to the end (end = 2^31 - 1)")
    start: Dim = 0 if s == 0 else add_dims(dim, s)
    stop: Dim = dim if e >= INT_MAX else add_dims(dim, e)
    return start, 1, simplify_dim(as_expr(stop, None) - as_expr(start, None)) if not isinstance(stop, int) \
        or not isinstance(start, int) else stop - start


def _slice_infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    return [TensorType(tuple(attrs["shape"]), ins[0].dtype)]


def _slice_numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    x = arrays[0]
    out_shape = eval_shape(attrs["shape"], env)
    index: list[Any] = [slice(None)] * x.ndim
    for a, start, step in attrs["spec"]:
        s = eval_dim(start, env)
        stop = s + step * out_shape[a]
        # a negative step that reaches index 0 stops at -1, which numpy would read as the last index
        index[a] = slice(s, stop if stop >= 0 else None, step) if out_shape[a] > 0 else slice(0, 0)
    return [x[tuple(index)].copy()]


def _slice_compute(ins: Sequence[cdsl.ComputeTensor], attrs: Attrs, out: TensorType,
                   out_name: str) -> cdsl.ComputeTensor:
    x = ins[0]
    spec = {a: (start, step) for a, start, step in attrs["spec"]}

    def body(*idx: Expr) -> Expr:
        index = []
        for a, i in enumerate(idx):
            if a not in spec:
                index.append(i)
                continue
            start, step = spec[a]
            e = i * step if step != 1 else i
            index.append(e + start if not (isinstance(start, int) and start == 0) else e)
        return x[tuple(index)]

    return cdsl.compute(out.shape, body, out_name)


def _slice_build(nb: Any, call: OpCall) -> Any:
    """CINN slice: `strides` empty means 1; `decrease_axis` drops the listed (extent-1) axes of the
    result (a reshape; all dropped leaves shape [1], as CINN). `infer_flags` is accepted and
    ignored (Paddle's marker for starts/ends known only at run time)."""
    a = call.args
    x = nb.variable(a["x"], call.method, "x")
    strides = a["strides"] or None
    out = nb.emit(call.op, (x,), slice_attrs(x.type, a["axes"], a["starts"], a["ends"], strides))
    drop = {normalize_axis(d, out.ndim, call.method, "decrease_axis entry") for d in a["decrease_axis"]}
    if not drop:
        return out
    for d in sorted(drop):
        if not (isinstance(out.shape[d], int) and out.shape[d] == 1):
            raise FrontendError(f"{call.method}: decrease_axis names axis {d}, whose sliced extent is "
                                f"{fmt_dim(out.shape[d])}, expected 1")
    keep = [dim for k, dim in enumerate(out.shape) if k not in drop]
    return nb.reshape(out, keep or [1])


register(OpDef("slice", OpPatternKind.kInjective, _slice_infer, _slice_numpy, _slice_compute,
               fold=_first, arity=1,
               signature=Signature((tensor("x"), attr("axes", int_list), attr("starts", int_list),
                                    attr("ends", int_list), attr("infer_flags", int_list, ()),
                                    attr("strides", int_list, ()), attr("decrease_axis", int_list, ())),
                                   build=_slice_build),
               test=OpTest(MOVE_DTYPES, lambda d: [
                   Case((Input((7,)),), {"axes": [0], "starts": [1], "ends": [6]}),
                   Case((Input((3, 5)),), {"axes": [1], "starts": [4], "ends": [0], "strides": [-2]}),
                   Case((Input((3, 5)),), {"axes": [0, 1], "starts": [1, -3], "ends": [2, 100],
                                           "decrease_axis": [0]}),
                   Case((Input(("S0", 6)),), {"axes": [1], "starts": [0], "ends": [6], "strides": [2]}),
                   Case((Input(("S0", 6)),), {"axes": [0], "starts": [-1], "ends": [INT_MAX]})])))


# -- concat ---------------------------------------------------------------------------------------------
def _concat_infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    if not ins:
        raise FrontendError("concat: needs at least one operand")
    first = ins[0]
    axis = attrs["axis"]
    check_same_dtypes("concat", ins)
    total: Dim = 0
    for k, t in enumerate(ins):
        if t.ndim != first.ndim:
            raise FrontendError(f"concat: operand {k} has rank {t.ndim} but operand 0 has rank {first.ndim}")
        for d, (a, b) in enumerate(zip(first.shape, t.shape)):
            if d != axis and not dims_equal(a, b):
                raise FrontendError(f"concat: operand {k} {fmt_shape(t.shape)} differs from operand 0 "
                                    f"{fmt_shape(first.shape)} at axis {d}: {fmt_dim(b)} vs {fmt_dim(a)} "
                                    f"(only the concat axis {axis} may differ)")
        total = add_dims(total, t.shape[axis])
    shape = tuple(total if d == axis else s for d, s in enumerate(first.shape))
    return [TensorType(shape, first.dtype)]


def _concat_numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    return [np.concatenate(list(arrays), axis=attrs["axis"])]


def _concat_compute(ins: Sequence[cdsl.ComputeTensor], attrs: Attrs, out: TensorType,
                    out_name: str) -> cdsl.ComputeTensor:
    axis = attrs["axis"]

    def body(*idx: Expr) -> Expr:
        i = idx[axis]
        extents = [_like(t.shape[axis], i) for t in ins]
        offsets: list[Expr] = []
        acc: Expr = _index_const(0, i)
        for ext in extents:
            offsets.append(acc)
            acc = acc + ext
        value: Expr | None = None
        for t, off, ext in reversed(list(zip(ins, offsets, extents))):
            local = i - off if not (isinstance(off, IntImm) and off.value == 0) else i
            clamped = cdsl.minimum(cdsl.maximum(local, _index_const(0, i)), ext - 1)
            index = tuple(clamped if d == axis else e for d, e in enumerate(idx))
            load = t[index]
            value = load if value is None else cdsl.select(i < off + ext, load, value)
        return value  # type: ignore[return-value]

    return cdsl.compute(out.shape, body, out_name)


def _concat_fold(values: Sequence[Any], attrs: Attrs, ins: Sequence[TensorType], out: TensorType) -> Any:
    return values[0] if all(v == values[0] for v in values) else None


register(OpDef("concat", OpPatternKind.kInjective, _concat_infer, _concat_numpy, _concat_compute,
               fold=_concat_fold, arity=None,
               signature=Signature((tensors("xs"), attr("axis", integer, 0)),
                                   attrs=lambda ins, at: {"axis": normalize_axis(at["axis"], ins[0].ndim,
                                                                                 "concat")}),
               test=OpTest(MOVE_DTYPES, lambda d: [
                   Case(([Input((2, 5)), Input((3, 5))],), {"axis": 0}),
                   Case(([Input((3, 1)), Input((3, 4)), Input((3, 2))],), {"axis": -1}),
                   Case(([Input(("S0", 2)), Input(("S0", 3))],), {"axis": 1}),
                   Case(([Input((7,))],), {})])))
