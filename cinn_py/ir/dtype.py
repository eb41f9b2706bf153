"""Scalar and vector element types of the IR (CINN `common::Type`).

A `DType` is (kind, bits, lanes). It prints the way CINN's `Type2Str` does: `int32`, `float16`,
`bfloat16`, `bool`, `uint8`, and `float32<4>` for vectors.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

Kind = Literal["int", "uint", "float", "bfloat", "bool", "handle", "string"]


@dataclass(frozen=True, slots=True)
class DType:
    """An element type; `lanes > 1` makes it a SIMD vector type."""

    kind: Kind
    bits: int
    lanes: int = 1

    def __str__(self) -> str:
        base = self.scalar_name()
        return base if self.lanes == 1 else f"{base}<{self.lanes}>"

    def scalar_name(self) -> str:
        if self.kind == "bool":
            return "bool"
        if self.kind == "bfloat":
            return "bfloat16"
        if self.kind in ("handle", "string"):
            return self.kind
        return f"{self.kind}{self.bits}"

    @property
    def is_float(self) -> bool:
        """True for float16/bfloat16/float32/float64."""
        return self.kind in ("float", "bfloat")

    @property
    def is_int(self) -> bool:
        return self.kind == "int"

    @property
    def is_uint(self) -> bool:
        return self.kind == "uint"

    @property
    def is_integral(self) -> bool:
        """Signed or unsigned integer (bool excluded)."""
        return self.kind in ("int", "uint")

    @property
    def is_bool(self) -> bool:
        return self.kind == "bool"

    def with_lanes(self, lanes: int) -> DType:
        return DType(self.kind, self.bits, lanes)

    def element_of(self) -> DType:
        return DType(self.kind, self.bits, 1)

    def to_numpy(self) -> np.dtype:
        """The numpy dtype used to store this type (bfloat16 is stored as its uint16 bit pattern
        by the runtime, but the interpreter computes it as float32; see `numpy_compute_dtype`)."""
        if self.kind == "bfloat":
            return np.dtype(np.uint16)
        if self.kind == "bool":
            return np.dtype(np.bool_)
        return np.dtype(f"{self.kind}{self.bits}")


bool_ = DType("bool", 1)
int8 = DType("int", 8)
int16 = DType("int", 16)
int32 = DType("int", 32)
int64 = DType("int", 64)
uint8 = DType("uint", 8)
uint16 = DType("uint", 16)
uint32 = DType("uint", 32)
uint64 = DType("uint", 64)
float16 = DType("float", 16)
bfloat16 = DType("bfloat", 16)
float32 = DType("float", 32)
float64 = DType("float", 64)
handle = DType("handle", 64)
string = DType("string", 0)

ALL_SCALAR_DTYPES: tuple[DType, ...] = (
    bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
    float16, bfloat16, float32, float64,
)
_BY_NAME = {d.scalar_name(): d for d in ALL_SCALAR_DTYPES} | {"handle": handle, "string": string}


def dtype_of(value: str | DType | np.dtype | type) -> DType:
    """Resolve a dtype given as a name (`"float32"`), a DType, or a numpy dtype/type."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str):
        name = value.strip()
        if "<" in name and name.endswith(">"):
            base, lanes = name[:-1].split("<")
            return dtype_of(base).with_lanes(int(lanes))
        if name in _BY_NAME:
            return _BY_NAME[name]
        raise TypeError(f"unknown dtype '{value}'; expected one of {sorted(_BY_NAME)}")
    np_dtype = np.dtype(value)
    if np_dtype == np.bool_:
        return bool_
    if np_dtype.name == "bfloat16" and np_dtype.itemsize == 2:  # ml_dtypes.bfloat16
        return bfloat16
    if np_dtype.kind in "iuf":
        return dtype_of(f"{ {'i': 'int', 'u': 'uint', 'f': 'float'}[np_dtype.kind]}{np_dtype.itemsize * 8}")
    raise TypeError(f"numpy dtype {np_dtype} has no cinn-py equivalent")
