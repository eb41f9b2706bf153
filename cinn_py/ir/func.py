"""`LoweredFunc` and `Module` (CINN `_LoweredFunc_`, `_Module_`).

Argument order follows CINN: input tensors, output tensors, then one int64 scalar per symbolic
dim. Intermediate tensors that are not arguments are `temp_bufs`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from cinn_py.ir.buffer import Buffer, Tensor
from cinn_py.ir.expr import Expr, Var
from cinn_py.ir.stmt import Stmt, new_uid


class ArgIO(enum.Enum):
    INPUT = "input"
    OUTPUT = "output"
    SCALAR = "scalar"


@dataclass(frozen=True, slots=True)
class Argument:
    """One function argument: a tensor (input or output) or a scalar Var (symbolic dim)."""

    io: ArgIO
    tensor: Tensor | None = None
    var: Var | None = None

    def __post_init__(self) -> None:
        if (self.tensor is None) == (self.var is None):
            raise ValueError("Argument needs exactly one of tensor or var")

    @property
    def name(self) -> str:
        """Printed name: the buffer name (`_A`) for tensors, the var name for scalars."""
        if self.tensor is not None:
            return self.tensor.buffer.name
        assert self.var is not None
        return self.var.name

    @property
    def is_tensor(self) -> bool:
        return self.tensor is not None


@dataclass(frozen=True, slots=True)
class CudaAxisInfo:
    """Grid and block dims (x, y, z) as expressions of the symbolic dims (default 1)."""

    grid_dims: tuple[Expr, Expr, Expr]
    block_dims: tuple[Expr, Expr, Expr]


@dataclass(frozen=True, slots=True, eq=False)
class LoweredFunc:
    """`function name (_A, _B, S0) { ... }`."""

    name: str
    args: tuple[Argument, ...]
    body: Stmt
    temp_bufs: tuple[Buffer, ...] = ()
    cuda_axis_info: CudaAxisInfo | None = None
    uid: int = field(default_factory=new_uid, repr=False)

    def __str__(self) -> str:
        from cinn_py.ir.text.printer import print_ir

        return print_ir(self)

    @property
    def inputs(self) -> tuple[Tensor, ...]:
        return tuple(a.tensor for a in self.args if a.io is ArgIO.INPUT and a.tensor is not None)

    @property
    def outputs(self) -> tuple[Tensor, ...]:
        return tuple(a.tensor for a in self.args if a.io is ArgIO.OUTPUT and a.tensor is not None)

    @property
    def scalar_args(self) -> tuple[Var, ...]:
        return tuple(a.var for a in self.args if a.var is not None)


@dataclass(frozen=True, slots=True, eq=False)
class Module:
    """`Module name { functions }`."""

    name: str
    functions: tuple[LoweredFunc, ...]

    def __str__(self) -> str:
        from cinn_py.ir.text.printer import print_ir

        return print_ir(self)
