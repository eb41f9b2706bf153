"""Buffers and tensors (CINN `_Buffer_`, `_Tensor_`, `MemoryType`).

A `Buffer` is storage (name `_A`, shape, dtype, memory type); a `Tensor` is a named view that
loads and stores go through. Several tensors may share one buffer: a reduction `B` and its
`B__reduce_init` both write `_B`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from cinn_py.ir.dtype import DType
from cinn_py.ir.expr import Expr


class MemoryType(enum.Enum):
    """Where a buffer lives. `from_scope` maps CINN's scope strings."""

    AUTO = "auto"
    HEAP = "global"
    GPU_SHARED = "shared"
    GPU_LOCAL = "local"

    @classmethod
    def from_scope(cls, scope: str | MemoryType) -> MemoryType:
        """`"global"` -> HEAP, `"shared"` -> GPU_SHARED, `"local"` -> GPU_LOCAL."""
        if isinstance(scope, MemoryType):
            return scope
        for member in (cls.HEAP, cls.GPU_SHARED, cls.GPU_LOCAL):
            if member.value == scope:
                return member
        raise ValueError(f"unknown memory type '{scope}'; expected 'global', 'shared' or 'local'")

    @property
    def scope(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class Buffer:
    """Storage: `_Buffer_<float32: 32, 64>(_A)`."""

    name: str
    shape: tuple[Expr, ...]
    dtype: DType
    memory_type: MemoryType = MemoryType.HEAP


@dataclass(frozen=True, slots=True)
class Tensor:
    """A named, typed, shaped view of a buffer; `Load`/`Store` refer to tensors."""

    name: str
    shape: tuple[Expr, ...]
    dtype: DType
    buffer: Buffer

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def with_buffer(self, buffer: Buffer) -> Tensor:
        return Tensor(self.name, self.shape, self.dtype, buffer)


def make_tensor(name: str, shape: tuple[Expr, ...], dtype: DType,
                memory_type: MemoryType = MemoryType.HEAP, buffer_name: str | None = None) -> Tensor:
    """A tensor with its own buffer named `_<name>` (CINN's default buffer name)."""
    buffer = Buffer(buffer_name or f"_{name}", shape, dtype, memory_type)
    return Tensor(name, shape, dtype, buffer)


@dataclass(frozen=True, slots=True)
class BufferRange:
    """`buf[v(lo:hi), ...]`: an analysis-only read or write region of a schedule block."""

    tensor: Tensor
    ranges: tuple[tuple[Expr, Expr], ...]
    """Per dimension, (min, extent)."""
