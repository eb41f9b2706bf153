"""The op registry of the NetBuilder frontend: `OpPatternKind`, `OpDef`, `FrontendError`.

Every primitive and composite op of a `Program` is described by one `OpDef` (CINN registers the
same facts per op as attributes: `infershape`, `inferdtype`, `OpPattern`, `CINNStrategy`):

- `infer(inputs, attrs) -> [TensorType]`: output shapes and dtypes, raising `FrontendError` that
  names the op and the mismatch;
- `pattern`: the `OpPatternKind` that drives fusion (`fusion.py`);
- `numpy(arrays, attrs, env) -> [ndarray]`: the reference semantics (the differential oracle);
- `compute(tensors, attrs, out_types, names) -> [ComputeTensor]`: the definition in the compute
  DSL used to lower a fused group (None for composite ops, which are decomposed first);
- `fold`: whether an op of uniform-valued (fill_constant) inputs yields a uniform value that
  constant folding may compute (`graph_passes.fold_constants`).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Union

import numpy as np

from cinn_py.diagnostics import CinnError
from cinn_py.ir import ALL_SCALAR_DTYPES, DType, Expr, bfloat16, dtype_of

Dim = Union[int, Expr]
"""A dim of a frontend shape: a Python int (static) or an int64 expression of symbolic dims."""
Shape = tuple[Dim, ...]
Attrs = Mapping[str, Any]
SymbolEnv = Mapping[str, int]


class FrontendError(CinnError, ValueError):
    """A NetBuilder op got operands or attributes it cannot accept (shape, dtype, attribute)."""


class OpPatternKind(enum.IntEnum):
    """CINN's op pattern kinds (`hlir/framework/op.h`), ordered so that a group's kind is the max
    of its ops' kinds."""

    kElementWise = 0
    kBroadcast = 1
    kInjective = 2
    kReduction = 3
    kOutFusible = 4
    kNonFusible = 8


@dataclass(frozen=True)
class TensorType:
    """Shape and dtype of a variable."""

    shape: Shape
    dtype: DType

    @property
    def ndim(self) -> int:
        return len(self.shape)


InferFn = Callable[[Sequence[TensorType], Attrs], list[TensorType]]
NumpyFn = Callable[[Sequence[np.ndarray], Attrs, SymbolEnv], list[np.ndarray]]
ComputeFn = Callable[..., Any]
FoldFn = Callable[[Sequence[Any], Attrs, Sequence[TensorType], TensorType], Any]


@dataclass(frozen=True)
class OpDef:
    name: str
    pattern: OpPatternKind
    infer: InferFn
    numpy: NumpyFn
    compute: ComputeFn | None = None
    composite: bool = False
    fold: FoldFn | None = None
    """For uniform-valued inputs (their scalar values), the uniform value of the output, or None
    when it is not uniform or not computable statically. None: the op is never folded."""
    arity: int | None = None
    """Number of inputs, or None for variadic ops (concat)."""


REGISTRY: dict[str, OpDef] = {}


def register(op: OpDef) -> OpDef:
    if op.name in REGISTRY:
        raise ValueError(f"op '{op.name}' is registered twice")
    REGISTRY[op.name] = op
    return op


def get_op(name: str) -> OpDef:
    op = REGISTRY.get(name)
    if op is None:
        raise FrontendError(f"unknown op '{name}'; registered ops: {', '.join(sorted(REGISTRY))}")
    return op


# NetBuilder dtypes: everything numpy (the reference) can hold. bfloat16 has no numpy dtype.
SUPPORTED_DTYPES: tuple[DType, ...] = tuple(d for d in ALL_SCALAR_DTYPES if d != bfloat16)


def check_dtype(value: object, op: str) -> DType:
    """A supported scalar dtype from a string / DType / numpy dtype."""
    try:
        resolved = dtype_of(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, KeyError):
        raise TypeError(f"{op}: unknown dtype {value!r}") from None
    if resolved not in SUPPORTED_DTYPES:
        names = ", ".join(d.scalar_name() for d in SUPPORTED_DTYPES)
        raise TypeError(f"{op}: dtype {resolved} is not supported by NetBuilder (expected one of {names})")
    return resolved
