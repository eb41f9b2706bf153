"""Expression nodes of the CINN AST IR that reach beyond arithmetic (`paddle/cinn/ir/ir.h`):
memory reads (`Load`), calls (`Call`, `CallType`), reductions (`Reduce`, `ReduceType`) and the
vector nodes `Ramp` and `Broadcast`. The base class, immediates, variables and operators are
`expr`; like them these nodes are frozen dataclasses compared by value, and their generated
`__eq__`/`__hash__` are depth-guarded (`structural.install_depth_guards`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cinn_py.ir.dtype import DType
from cinn_py.ir.expr import Expr, Var, _derived_dtype, _set_dtype
from cinn_py.ir.structural import install_depth_guards

if TYPE_CHECKING:
    from cinn_py.ir.buffer import Tensor


# --------------------------------------------------------------------------------------------
# Memory and calls
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Load(Expr):
    """`T[i0, i1]`: read one element (or a vector when an index is a Ramp)."""

    tensor: Tensor
    indices: tuple[Expr, ...]
    dtype: DType = _derived_dtype()

    def __post_init__(self) -> None:
        lanes = max((i.dtype.lanes for i in self.indices), default=1)
        _set_dtype(self, self.tensor.dtype.with_lanes(lanes))


class CallType(enum.Enum):
    """CINN `CallType`: who implements the callee."""

    EXTERN = "extern"  # math functions (exp, tanh, ...) and runtime helpers
    INTRINSIC = "intrinsic"  # __syncthreads and friends
    CINN = "cinn"  # another lowered function


@dataclass(frozen=True, slots=True)
class Call(Expr):
    """`name(args...)`: a math intrinsic (`exp`), runtime helper, or `__syncthreads()`."""

    name: str
    args: tuple[Expr, ...]
    dtype: DType
    call_type: CallType = CallType.EXTERN


class ReduceType(enum.Enum):
    """CINN `Reduce::ReduceType`, with the printed tag as value."""

    SUM = "sum"
    SUB = "sub"
    DIV = "Div"
    MUL = "Mul"
    MAX = "Max"
    MIN = "Min"
    ALL = "&&"
    ANY = "||"


@dataclass(frozen=True, slots=True)
class Reduce(Expr):
    """`Reduce(sum, body,init)`: a reduction over `reduce_axis` (compute-DSL level only; lowering
    turns it into an init block and an update block)."""

    reduce_type: ReduceType
    body: Expr
    init: Expr
    reduce_axis: tuple[Var, ...]
    dtype: DType = _derived_dtype()

    def __post_init__(self) -> None:
        _set_dtype(self, self.body.dtype)


@dataclass(frozen=True, slots=True)
class Ramp(Expr):
    """`Ramp(base,stride,lanes)`: the vector `base + k*stride` for k < lanes (vectorization)."""

    base: Expr
    stride: Expr
    lanes: int
    dtype: DType = _derived_dtype()

    def __post_init__(self) -> None:
        _set_dtype(self, self.base.dtype.with_lanes(self.lanes))


@dataclass(frozen=True, slots=True)
class Broadcast(Expr):
    """`Broadcast(v,lanes)`: a scalar repeated in every lane."""

    value: Expr
    lanes: int
    dtype: DType = _derived_dtype()

    def __post_init__(self) -> None:
        _set_dtype(self, self.value.dtype.with_lanes(self.lanes))


# Equality and hashing of any depth, as for expr's operator nodes (see `structural`).
install_depth_guards([Load, Call, Reduce, Ramp, Broadcast])
