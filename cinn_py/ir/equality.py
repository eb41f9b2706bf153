"""Structural equality of IR trees (CINN `IrEqualVisitor`).

Statements compare by identity elsewhere; here two trees are equal when they have the same node
kinds, fields and names. Statement uids are ignored. With `allow_name_suffix_diff`, names that
differ only in numeric `_N` suffixes (`i0` vs `i0_3`, `B__reduce_init` vs `B__reduce_init_1`)
are equal, as in CINN's `IRCompare(lhs, rhs, allow_name_suffix_diff=true)`.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any

from cinn_py.ir.buffer import Buffer, Tensor
from cinn_py.ir.expr import Var
from cinn_py.ir.nesting import deep_nesting

_SUFFIX = re.compile(r"(_\d+)+$")
_IGNORED = frozenset({"uid"})


def _names_equal(a: str, b: str, allow_suffix: bool) -> bool:
    if a == b:
        return True
    return allow_suffix and _SUFFIX.sub("", a) == _SUFFIX.sub("", b)


@deep_nesting
def structural_equal(a: Any, b: Any, allow_name_suffix_diff: bool = False) -> bool:
    """True when `a` and `b` are the same IR up to statement identity (and `_N` name suffixes)."""
    return _equal(a, b, allow_name_suffix_diff)


def _equal(a: Any, b: Any, allow: bool) -> bool:
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_equal(x, y, allow) for x, y in zip(a, b))
    if isinstance(a, Var):
        return a.dtype == b.dtype and _names_equal(a.name, b.name, allow)
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if not dataclasses.is_dataclass(a):
        return bool(a == b)
    for f in dataclasses.fields(a):
        if f.name in _IGNORED:
            continue
        x, y = getattr(a, f.name), getattr(b, f.name)
        if f.name == "name" and isinstance(x, str) and isinstance(a, (Tensor, Buffer, object)):
            if not _names_equal(x, y, allow):
                return False
            continue
        if not _equal(x, y, allow):
            return False
    return True


def assert_structural_equal(a: Any, b: Any, allow_name_suffix_diff: bool = False) -> None:
    """Raise AssertionError with a unified diff of the printed forms when not equal."""
    if structural_equal(a, b, allow_name_suffix_diff):
        return
    import difflib

    from cinn_py.ir.text.printer import print_ir

    diff = difflib.unified_diff(print_ir(a).splitlines(), print_ir(b).splitlines(),
                                "lhs", "rhs", lineterm="")
    raise AssertionError("IR trees differ:\n" + "\n".join(diff))
