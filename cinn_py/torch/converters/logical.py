"""Bitwise, logical and masked ops: bitwise_and/or/xor/not and the shifts, logical_and/or/xor/not
of any dtype (a number is its truth, `x != 0`), masked_fill, where with number branches and
index_fill."""

from __future__ import annotations

from typing import Any

from cinn_py.frontend.ops.shapes import numel
from cinn_py.frontend.program import Variable
from cinn_py.torch.converters.base import (
    Converter, Emitter, Value, axis_of, converts, static_axis, static_dim, zero_d_as_1d,
)
from cinn_py.torch.converters.math import as_dtype, full


def truth(e: Emitter, x: Any) -> Any:
    """`x != 0` as bool (a bool Variable as it is, a number as a Python bool)."""
    if not isinstance(x, Variable):
        return bool(x)
    return x if str(x.dtype) == "bool" else e.nb.not_equal(x, 0)


def _bitwise(method: str, logical: str) -> Converter:
    """On bools torch's bitwise ops are the logical ones (NetBuilder's bitwise ops take integers)."""
    def convert(e: Emitter, a: Any, b: Any) -> Value:
        if e.dtype == "bool":
            return getattr(e.nb, logical)(full(e, a), full(e, b))
        return getattr(e.nb, method)(full(e, a), full(e, b))
    return convert


for _name, _bool_op in (("and", "logical_and"), ("or", "logical_or"), ("xor", "logical_xor")):
    converts(f"aten.bitwise_{_name}.Tensor", f"aten.bitwise_{_name}.Scalar",
             f"aten.bitwise_{_name}.Scalar_Tensor")(_bitwise(f"bitwise_{_name}", _bool_op))
for _name, _method in (("left_shift", "left_shift"), ("right_shift", "right_shift")):
    _dunder = "lshift" if _name == "left_shift" else "rshift"
    converts(f"aten.bitwise_{_name}.Tensor", f"aten.bitwise_{_name}.Tensor_Scalar",
             f"aten.bitwise_{_name}.Scalar_Tensor", f"aten.__{_dunder}__.Scalar",
             f"aten.__{_dunder}__.Tensor")(
        lambda e, a, b, _m=_method: getattr(e.nb, _m)(full(e, a), full(e, b)))


@converts("aten.bitwise_not.default")
def _bitwise_not(e: Emitter, x: Variable) -> Value:
    return e.nb.logical_not(x) if e.dtype == "bool" else e.nb.bitwise_not(x)


def _bool_operand(e: Emitter, v: Any) -> Variable:
    """The truth of `v` in the node's shape."""
    if isinstance(v, Variable):
        return e.broadcast(truth(e, v))
    return e.nb.fill_constant(list(e.shape), bool(v), dtype="bool")


def _logical(method: str) -> Converter:
    """The truth of each operand combined; the result cast to the node's dtype (torch lets the
    output dtype be any)."""
    def convert(e: Emitter, a: Any, b: Any) -> Value:
        return as_dtype(e, getattr(e.nb, method)(_bool_operand(e, a), _bool_operand(e, b)))
    return convert


for _name in ("and", "or", "xor"):
    converts(f"aten.logical_{_name}.default")(_logical(f"logical_{_name}"))
converts("aten.logical_not.default")(lambda e, x: as_dtype(e, e.nb.logical_not(truth(e, x))))


@converts("aten.masked_fill.Scalar", "aten.masked_fill.Tensor")
def _masked_fill(e: Emitter, x: Variable, mask: Variable, value: Any) -> Value:
    return e.nb.select(e.broadcast(mask), full(e, value), full(e, x))


@converts("aten.where.self", "aten.where.ScalarSelf", "aten.where.ScalarOther", "aten.where.Scalar")
def _where(e: Emitter, cond: Variable, a: Any, b: Any) -> Value:
    return e.nb.select(e.broadcast(truth(e, cond)), full(e, a), full(e, b))


@converts("aten.index_fill.int_Scalar", "aten.index_fill.int_Tensor",
          check=lambda x, dim, *_: static_axis(x, dim, "index_fill"))
@zero_d_as_1d
def _index_fill(e: Emitter, x: Variable, dim: int, index: Variable, value: Any) -> Value:
    """`value` at the rows `index` along `dim`: a mask of the rows, from scattering ones."""
    nb = e.nb
    axis = axis_of(dim, x.ndim)
    size = x.shape[axis]
    flat = e.to_shape(index, [int(index.shape[0]) if index.ndim else 1])
    flat = nb.select(nb.less_than(flat, 0), nb.add(flat, size), flat)
    marks = nb.scatter_assign(nb.fill_constant([size], 0, dtype="int32"),
                              nb.fill_constant(list(flat.shape), 1, dtype="int32"), flat, axis=0)
    shape = [1] * x.ndim
    shape[axis] = size
    rows = e.broadcast(e.to_shape(nb.not_equal(marks, 0), shape))
    return nb.select(rows, full(e, value), x)


def _static_test(elements: Any, test: Any, **_: Any) -> str | None:
    fake = getattr(test, "meta", {}).get("val")
    if fake is None or all(isinstance(s, int) for s in fake.shape):
        return None
    return f"isin with symbolic test elements {fake.shape}"


@converts("aten.isin.Tensor_Tensor", "aten.isin.Tensor_Scalar", "aten.isin.Scalar_Tensor", check=_static_test)
def _isin(e: Emitter, elements: Any, test: Any, *, assume_unique: bool = False,
          invert: bool = False) -> Value:
    """Whether each element equals some test element: an [elements, tests] comparison, any over
    the tests."""
    nb = e.nb
    if not isinstance(test, Variable):
        found = nb.equal(elements, test)
        return nb.logical_not(found) if invert else found
    flat_test = e.to_shape(test, [static_dim(numel(test.shape))]) if test.ndim != 1 else test
    if not isinstance(elements, Variable):
        elements = nb.fill_constant([], elements, dtype=str(test.dtype))
    n = static_dim(flat_test.shape[0])
    shape = [*elements.shape, n]
    lhs = nb.broadcast_to(elements, shape, list(range(elements.ndim)))
    rhs = nb.broadcast_to(flat_test, shape, [elements.ndim])
    found = nb.reduce_any(nb.equal(lhs,
                                   rhs if str(rhs.dtype) == str(lhs.dtype) else nb.cast(rhs, str(lhs.dtype))),
                          [elements.ndim])
    return nb.logical_not(found) if invert else found
