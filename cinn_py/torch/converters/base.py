"""The converters' registry and what every converter shares: `Emitter`, `Rule`, `converts`, axis helpers."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, overload

from cinn_py.frontend.net_builder import NetBuilder
from cinn_py.frontend.ops.base import Dim
from cinn_py.frontend.ops.shapes import shapes_equal
from cinn_py.frontend.program import Variable

Value = Any  # Variable | tuple[Variable | None, ...] | None
Converter = Callable[..., Value]
Check = Callable[..., "str | None"]


@dataclass(frozen=True)
class Emitter:
    """What a converter needs besides its arguments: the builder and the node's output shape/dtype."""

    nb: NetBuilder
    shape: tuple[Dim, ...]
    """Ints and, for symbolic sizes, cinn-py symbolic dims (cinn_py/torch/symbolic.py)."""
    dtype: str

    def to_shape(self, x: Variable, shape: Sequence[Dim] | None = None) -> Variable:
        """`x` reshaped to `shape` (the node's by default); the same Variable when it already has it."""
        target = list(self.shape if shape is None else shape)
        if shapes_equal(x.shape, target):
            return x
        if any(isinstance(d, int) and d == 0 for d in target):
            # NetBuilder's reshape reads a 0 as "keep the input's dim" (CINN's rule), torch as an
            # empty dim; a tensor with no elements has no data to move: a new empty tensor
            return self.nb.fill_constant(target, 0, dtype=str(x.dtype))
        return self.nb.reshape(x, target)

    def broadcast(self, x: Any, shape: Sequence[Dim] | None = None) -> Variable:
        """`x` (a Variable or a Python number) broadcast numpy-style to `shape` (the node's by default)."""
        target = list(self.shape if shape is None else shape)
        if not isinstance(x, Variable):
            return self.nb.fill_constant(target, x, dtype=self.dtype)
        if shapes_equal(x.shape, target):
            return x
        lead = len(target) - x.ndim
        return self.nb.broadcast_to(x, target, list(range(lead, len(target))))


@dataclass(frozen=True)
class Rule:
    convert: Converter
    check: Check | None = None


CONVERTERS: dict[str, Rule] = {}


def converts(*names: str, check: Check | None = None) -> Callable[[Converter], Converter]:
    def register(fn: Converter) -> Converter:
        for name in names:
            CONVERTERS[name] = Rule(fn, check)
        return fn
    return register


def zero_d_as_1d(fn: Converter) -> Converter:
    """A converter of an op taking a `dim` that torch also applies to 0-d tensors (as to one
    element along dim 0 or -1): 0-d tensor arguments become [1], the result the node's shape.
    For single-output ops."""
    def convert(e: Emitter, *args: Any, **kwargs: Any) -> Value:
        if not any(isinstance(a, Variable) and a.ndim == 0 for a in args):
            return fn(e, *args, **kwargs)
        lifted = [e.nb.reshape(a, [1]) if isinstance(a, Variable) and a.ndim == 0 else a for a in args]
        inner = Emitter(e.nb, e.shape or (1,), e.dtype)
        return e.to_shape(fn(inner, *lifted, **kwargs))
    convert.__doc__, convert.__name__ = fn.__doc__, fn.__name__
    return convert


def axis_of(dim: int, ndim: int) -> int:
    """A non-negative axis; 0 for a 0-d tensor (torch accepts dim 0 and -1 there)."""
    return dim % ndim if ndim else 0


def axes_of(dims: Any, ndim: int) -> list[int]:
    """Non-negative axes of a dim or dim list (empty or None: every axis, as aten's reductions)."""
    if ndim == 0:  # dim 0 or -1 of a 0-d tensor: its one element, no axis
        return []
    if dims is None:
        return list(range(ndim))
    items = [dims] if isinstance(dims, int) else list(dims)
    if not items:
        return list(range(ndim))
    return sorted(d % ndim for d in items)


def static_axis(x: Any, dim: int, op: str) -> str | None:
    """Converters that compute with the size of axis `dim` need it static (a symbolic size there
    keeps the op in eager PyTorch)."""
    fake = getattr(x, "meta", {}).get("val")
    if fake is None or not fake.dim():
        return None
    size = fake.shape[dim % fake.dim()]
    return None if isinstance(size, int) else f"{op} along symbolic dim {size}"


def static_dim(d: Any) -> int:
    """A dim the op's check made sure is static (`static_axis`)."""
    if not isinstance(d, int):
        raise TypeError(f"expected a static dim, got symbolic {d}")
    return d


def no_dtype(*args: Any, dtype: Any = None, **_: Any) -> str | None:
    return None if dtype is None else f"reduction with dtype={dtype}"

def scaled(e: Emitter, y: Any, alpha: Any) -> Any:
    if alpha == 1:
        return y
    return y * alpha if not isinstance(y, Variable) else e.nb.scale(y, float(alpha))


def is_strided_layout(layout: Any) -> bool:
    return layout is None or str(layout) == "torch.strided"


LOW_PRECISION = frozenset({"bfloat16", "float16"})


def compute_dtype(*xs: Variable | None) -> str:
    """float32 when any operand is bf16/fp16 (statistics accumulate in float32), else the first's."""
    given = [str(x.dtype) for x in xs if x is not None]
    return "float32" if any(d in LOW_PRECISION for d in given) else given[0]


@overload
def as_dtype(e: Emitter, x: Variable, dtype: str) -> Variable: ...
@overload
def as_dtype(e: Emitter, x: None, dtype: str) -> None: ...
@overload
def as_dtype(e: Emitter, x: Variable | None, dtype: str) -> Variable | None: ...
def as_dtype(e: Emitter, x: Variable | None, dtype: str) -> Variable | None:
    """`x` cast to `dtype` (itself when it has it; None stays None)."""
    return x if x is None or str(x.dtype) == dtype else e.nb.cast(x, dtype)
