"""Row-major flattening: the 1-D offset of a multi-dimensional buffer access.

Every backend flattens (CINN does it in codegen): the CUDA index simplifier, the C-family printer
and the LLVM emitter all use `flatten_index`/`flatten_numel`, so a buffer's layout is decided in
one place.
"""

from __future__ import annotations

from cinn_py.diagnostics import CompileError
from cinn_py.ir import Add, DType, Div, Expr, IntImm, Mod, Mul, int32, is_const_int


def flatten_index(indices: tuple[Expr, ...], shape: tuple[Expr, ...]) -> Expr:
    """Row-major offset of `indices` in a buffer of `shape`: `((i0 * d1) + i1)`.

    Multiplications by 1 and additions of 0 are folded so that one-element and unit dims do not
    clutter the output.
    """
    if len(indices) != len(shape):
        raise CompileError(f"codegen: {len(indices)} indices for a buffer of rank {len(shape)}")
    if not indices:
        return IntImm(int32, 0)
    acc = indices[0]
    for index, dim in zip(indices[1:], shape[1:]):
        if _is_div_mod_pair(acc, index, dim):
            acc = acc.a  # type: ignore[attr-defined]  # ((x / d) * d) + (x % d) == x (also in C)
            continue
        if is_const_int(dim, 1) or is_const_int(acc, 0):
            scaled = acc
        else:
            scaled = Mul(acc, _as_dtype(dim, acc.dtype))
        if is_const_int(scaled, 0):
            acc = index
        elif is_const_int(index, 0):
            acc = scaled
        else:
            acc = Add(scaled, _as_dtype(index, scaled.dtype))
    return acc


def _same_int(a: Expr, b: Expr) -> bool:
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return a.value == b.value
    return a == b


def _is_div_mod_pair(outer: Expr, inner: Expr, dim: Expr) -> bool:
    """`outer = x / d`, `inner = x % d` over a dim of extent `d`: the pair is just `x` flattened
    (the index a fused-then-split loop gives a `[.., d]` buffer, as in the seed's `sp / S2, sp % S2`)."""
    return (isinstance(outer, Div) and isinstance(inner, Mod) and outer.a == inner.a
            and _same_int(outer.b, inner.b) and _same_int(outer.b, dim))


def flatten_numel(shape: tuple[Expr, ...]) -> Expr:
    """Number of elements of a buffer of `shape` (a constant when every dim is)."""
    if all(isinstance(d, IntImm) for d in shape):
        total = 1
        for d in shape:
            total *= d.value  # type: ignore[attr-defined]
        dtype = shape[0].dtype if shape else int32
        return IntImm(dtype, total)
    acc: Expr = shape[0]
    for d in shape[1:]:
        acc = Mul(acc, _as_dtype(d, acc.dtype))
    return acc


def _as_dtype(e: Expr, dtype: DType) -> Expr:
    """Re-type an integer immediate (the IR mixes int32 shape immediates with int64 indices)."""
    if isinstance(e, IntImm) and e.dtype != dtype and dtype.is_int:
        return IntImm(dtype, e.value)
    return e
