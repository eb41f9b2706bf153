"""Tensor creation: full, zeros, ones, scalar_tensor, ..."""

from __future__ import annotations

from typing import Any

from cinn_py.frontend.program import Variable
from cinn_py.torch.converters.base import (
    Converter,
    Emitter,
    Value,
    converts,
    is_strided_layout,
)


def _plain_full(*args: Any, device: Any = None, layout: Any = None, pin_memory: Any = None,
                **_: Any) -> str | None:
    return (None if is_strided_layout(layout) and not pin_memory
            else "full with a sparse layout or pinned memory")


@converts("aten.full.default", "aten.scalar_tensor.default", "aten.new_full.default",
          "aten.full_like.default",
          check=_plain_full)
def _full(e: Emitter, *args: Any, **_: Any) -> Value:
    value = args[-1] if args else 0
    if isinstance(value, Variable):  # a size used as the fill value: the 0-d input of its value
        return e.broadcast(value if str(value.dtype) == e.dtype else e.nb.cast(value, e.dtype))
    return e.nb.fill_constant(list(e.shape), value, dtype=e.dtype)


@converts("prims.convert_element_type.default")
def _convert_element_type(e: Emitter, x: Variable, dtype: Any) -> Value:
    return x if str(x.dtype) == e.dtype else e.nb.cast(x, e.dtype)


@converts("aten.pow.Tensor_Tensor")
def _pow_tensors(e: Emitter, x: Variable, y: Variable) -> Value:
    x, y = (v if str(v.dtype) == e.dtype else e.nb.cast(v, e.dtype) for v in (x, y))
    return e.nb.pow(e.broadcast(x), e.broadcast(y))


def _constant(value: float) -> Converter:
    return lambda e, *_, **__: e.nb.fill_constant(list(e.shape), value, dtype=e.dtype)


for _name in ("zeros_like", "new_zeros", "zeros"):
    converts(f"aten.{_name}.default", check=_plain_full)(_constant(0))
# uninitialised memory (functionalisation's buffers, overwritten by copy/scatter): zeros are one valid content
converts("aten.new_empty_strided.default", "aten.new_empty.default", "aten.empty_like.default",
         "aten.empty.memory_format", "aten.empty_strided.default", check=_plain_full)(_constant(0))
for _name in ("ones_like", "new_ones", "ones"):
    converts(f"aten.{_name}.default", check=_plain_full)(_constant(1))
