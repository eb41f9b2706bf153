"""Defaults shared by the printer side (`decl_printer`: a decl line is emitted only where a default
would be wrong) and the parser side of the `// decl` header (`decls`): how a literal token decodes
(`decode_literal`, `half_from_bits`, the typed literal prefixes), the dtype and call type of a
call (`default_call_signature`), a reduction's axes (`default_reduce_axes`) and the text of
attribute values (`decode_attr_value`, `format_decl_value`, `attr_value_equal`).
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from cinn_py.ir import dtype as dt
from cinn_py.ir import expr as E
from cinn_py.ir.dtype import DType
from cinn_py.ir.intrinsics import lookup as lookup_intrinsic


LITERAL_PREFIXES: dict[str, DType] = {
    "int8_t": dt.int8, "int16_t": dt.int16, "uint8_t": dt.uint8, "uint16_t": dt.uint16,
    "float16": dt.float16, "bfloat16": dt.bfloat16,
}
RAW_HALF_FUNCS: dict[str, DType] = {
    "cinn::common::raw_uint16_to_float16": dt.float16,
    "cinn::common::raw_uint16_to_bfloat16": dt.bfloat16,
}
_INT_RE = re.compile(r"-?\d+")
_FLOAT_RE = re.compile(r"-?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|inf|nan)")


# --------------------------------------------------------------------------------------------
# Defaults shared by the printer side and the parser side
# --------------------------------------------------------------------------------------------
def decode_literal(text: str, prefix: str | None = None) -> E.Expr:
    """The immediate a literal token denotes by default (`text` may start with `-`).

    `7` int32, `7ll` int64, `7ull` uint64, `2.5f` float32, `2.5` float64, `inf`/`nan` float32,
    `true`/`false` bool; `prefix` is a C cast prefix such as `int8_t` or `float16`.
    Raises ValueError when the text does not fit the prefix.
    """
    if text in ("true", "false"):
        if prefix is not None:
            raise ValueError(f"'({prefix})' cannot prefix '{text}'")
        return E.UIntImm(dt.bool_, int(text == "true"))
    body = text.lstrip("-")
    negative = text.startswith("-")
    if prefix is not None:
        target = LITERAL_PREFIXES[prefix]
        if target.is_float:
            if not body.endswith("f") and body not in ("inf", "nan"):
                raise ValueError(f"'({prefix})' needs a float literal with an 'f' suffix, got '{text}'")
            return E.FloatImm(target, _float_value(body.rstrip("f"), negative))
        if not body.isdigit():
            raise ValueError(f"'({prefix})' needs a plain integer literal, got '{text}'")
        value = -int(body) if negative else int(body)
        return E.IntImm(target, value) if target.is_int else E.UIntImm(target, value)
    if body in ("inf", "nan"):
        return E.FloatImm(dt.float32, _float_value(body, negative))
    if body.endswith("ull"):
        return E.UIntImm(dt.uint64, _int_value(body[:-3], negative))
    if body.endswith("ll"):
        return E.IntImm(dt.int64, _int_value(body[:-2], negative))
    if body.endswith("f"):
        return E.FloatImm(dt.float32, _float_value(body[:-1], negative))
    if any(c in body for c in ".eE") and not body.lower().startswith("0x"):
        return E.FloatImm(dt.float64, _float_value(body, negative))
    return E.IntImm(dt.int32, _int_value(body, negative))


def _int_value(body: str, negative: bool) -> int:
    value = int(body, 16) if body.lower().startswith("0x") else int(body)
    return -value if negative else value


def _float_value(body: str, negative: bool) -> float:
    value = float(body)
    return -value if negative else value


def half_from_bits(bits: int, dtype: DType) -> float:
    """The value of a float16/bfloat16 bit pattern (`raw_uint16_to_float16(0x7c00)` is inf)."""
    if not 0 <= bits <= 0xFFFF:
        raise ValueError(f"0x{bits:x} is not a 16-bit pattern")
    if dtype.kind == "bfloat":
        return float(np.frombuffer(np.uint32(bits << 16).tobytes(), np.float32)[0])
    return float(np.frombuffer(np.uint16(bits).tobytes(), np.float16)[0])


_INTRINSIC_CALLS = frozenset({"__syncthreads", "__syncwarp", "__threadfence", "__threadfence_block"})


def default_call_signature(name: str, args: tuple[E.Expr, ...]) -> tuple[DType, E.CallType]:
    """(dtype, call type) the parser gives `name(args)` when no decl says otherwise.

    `__`-prefixed names are intrinsics; `isnan`-like predicates return bool; otherwise the call
    has the dtype of its first non-string argument (float32 when it has none).
    """
    call_type = (E.CallType.INTRINSIC if name in _INTRINSIC_CALLS or name.startswith("__")
                 else E.CallType.EXTERN)
    typed = [a for a in args if not isinstance(a, E.StringImm)]
    if not typed:
        return (dt.int32 if call_type is E.CallType.INTRINSIC else dt.float32), call_type
    intrinsic = lookup_intrinsic(name)
    if intrinsic is not None:
        return intrinsic.result_dtype(typed[0].dtype), call_type
    return typed[0].dtype, call_type


def default_reduce_axes(body: E.Expr) -> tuple[E.Var, ...]:
    """The reduce-flagged vars of `body` in order of first use (the parser's default axes)."""
    from cinn_py.ir.visitor import walk

    seen: dict[str, E.Var] = {}
    for node in walk(body):
        if isinstance(node, E.Var) and node.is_reduce_axis and node.name not in seen:
            seen[node.name] = node
    return tuple(seen.values())


def decode_attr_value(text: str) -> Any:
    """A printed attr value read back by default: an int, a float, else the text as a string."""
    if _INT_RE.fullmatch(text):
        return int(text)
    if _FLOAT_RE.fullmatch(text):
        return float(text)
    return text


def attr_value_equal(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a) and math.isnan(b):
        return True
    return bool(a == b)


def format_decl_value(value: Any) -> str:
    """An attr or literal value in decl syntax: `true`, `3`, `0.1`, `"text"`."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ("nan" if math.isnan(value) else
                                                          ("inf" if value > 0 else "-inf"))
    if isinstance(value, int):
        return str(value)
    escaped = str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


# --------------------------------------------------------------------------------------------
