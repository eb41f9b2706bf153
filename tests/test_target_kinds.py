"""Targets are values, not strings: outside the Target/Backend table, no code compares a target's
kind with a literal ("x86", "cuda") or keeps its own table keyed by kinds.

Code asks the target instead (`target.is_gpu`, `target.limits`, `target.passes`) and reaches the
backend through `cinn_py.backend.get_backend`. Allowed: `cinn_py/target.py` and
`cinn_py/backend.py` (the table), and a backend's own module `codegen/<name>/backend.py` checking
that it was handed its own kind. String *defaults* (`target="x86"`) and CLI `choices=KINDS` are
spellings `Target.parse` reads, not comparisons.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from cinn_py.target import KINDS

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("cinn_py", "schedules", "codegen")
TABLE = {"cinn_py/target.py", "cinn_py/backend.py"}
BACKEND_MODULE = re.compile(r"codegen/[^/]+/backend\.py")
TARGETISH = re.compile(r"target|kind|backend", re.IGNORECASE)


def _is_kind_literal(node: ast.expr | None) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in KINDS
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_is_kind_literal(e) for e in node.elts)
    return False


def _violations(source: str, rel: str) -> list[str]:
    found: list[str] = []
    for node in ast.walk(ast.parse(source, rel)):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            others = [s for s in sides if not _is_kind_literal(s)]
            if len(others) < len(sides) and any(TARGETISH.search(ast.unparse(s)) for s in others):
                found.append(f"{rel}:{node.lineno}: '{ast.unparse(node)}': ask the Target "
                             f"(is_gpu, limits, passes) instead of comparing its kind")
        elif isinstance(node, ast.Dict) and any(_is_kind_literal(k) for k in node.keys):
            found.append(f"{rel}:{node.lineno}: a table keyed by target kinds: put it on the Target "
                         f"or in cinn_py/backend.py")
    return found


def test_no_target_kind_comparisons_outside_the_table() -> None:
    found: list[str] = []
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel in TABLE or BACKEND_MODULE.fullmatch(rel):
                continue
            found += _violations(path.read_text(), rel)
    assert not found, "target kinds compared as strings (tests/test_target_kinds.py):\n" + "\n".join(found)


def test_rule_catches_each_form() -> None:
    probe = ("if target == 'x86': pass\n"
             "if t.kind in ('cuda', 'x86'): pass\n"
             "if 'cuda' != backend_name: pass\n"
             "LIMITS = {'x86': 1, 'cuda': 2}\n"
             "if device == 'cuda': pass\n"          # a device type, not a target: allowed
             "def f(target='x86'): pass\n")         # a default spelling: allowed
    lines = [v.split(":")[1] for v in _violations(probe, "probe.py")]
    assert lines == ["1", "2", "3", "4"], lines
