"""IR assertions with readable failures: a unified diff of the printed forms."""

from __future__ import annotations

import difflib
from typing import Any


def ir_diff(a: Any, b: Any, decls: bool = True) -> str:
    """Unified diff of the printed forms of `a` (expected) and `b` (actual)."""
    from cinn_py.ir import print_ir

    lines_a = print_ir(a, decls=decls).splitlines()
    lines_b = print_ir(b, decls=decls).splitlines()
    diff = list(difflib.unified_diff(lines_a, lines_b, "expected", "actual", lineterm=""))
    if not diff:
        return "(the printed forms are identical; the trees differ in a field the text does not show)"
    return "\n".join(diff)


def assert_ir_equal(a: Any, b: Any, allow_name_suffix_diff: bool = False) -> None:
    """Assert `a` and `b` are structurally equal IR; on failure show the diff of their printed
    forms (with the decl header, so dtype/shape differences are visible too)."""
    from cinn_py.ir import structural_equal

    if structural_equal(a, b, allow_name_suffix_diff):
        return
    raise AssertionError("IR trees differ:\n" + ir_diff(a, b))
