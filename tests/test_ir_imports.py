"""One import idiom for the IR, enforced: outside `cinn_py/ir/`, the three packages import IR names
from the `cinn_py.ir` facade, by name (`from cinn_py.ir import For, Var, int64`).

Not allowed: submodule imports (`from cinn_py.ir.expr import Var`, `import cinn_py.ir.stmt`),
module aliases (`from cinn_py.ir import expr as E`, `from cinn_py import ir`), and names the
facade does not export (add them to `cinn_py/ir/__init__.py` instead).
"""

from __future__ import annotations

import ast
import types
from pathlib import Path

import cinn_py.ir as facade

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("cinn_py", "schedules", "codegen")
INSIDE = "cinn_py/ir/"
EXPORTED = {name for name in facade.__all__ if not isinstance(getattr(facade, name), types.ModuleType)}


def _violations(path: Path, rel: str) -> list[str]:
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), rel)):
        where = f"{rel}:{node.lineno}" if isinstance(node, ast.stmt) else rel
        if isinstance(node, ast.Import):
            found += [f"{where}: 'import {a.name}': use 'from cinn_py.ir import <names>'"
                      for a in node.names if a.name == "cinn_py.ir" or a.name.startswith("cinn_py.ir.")]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found += _from_import_violations(where, node)
    return found


def _from_import_violations(where: str, node: ast.ImportFrom) -> list[str]:
    module = node.module or ""
    if module == "cinn_py" and any(a.name == "ir" for a in node.names):
        return [f"{where}: 'from cinn_py import ir': import the names ('from cinn_py.ir import For, Var')"]
    if module.startswith("cinn_py.ir."):
        names = ", ".join(a.name for a in node.names)
        return [f"{where}: 'from {module} import {names}': import from the facade "
                f"('from cinn_py.ir import {names}'; export them there if missing)"]
    if module != "cinn_py.ir":
        return []
    return [f"{where}: 'from cinn_py.ir import {a.name}': not a name cinn_py.ir exports (a module "
            f"alias or a missing export; add it to cinn_py/ir/__init__.py)"
            for a in node.names if a.name not in EXPORTED]


def test_ir_is_imported_through_the_facade_by_name() -> None:
    paths = [p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))
             if not p.relative_to(ROOT).as_posix().startswith(INSIDE)]
    found = [v for p in paths for v in _violations(p, p.relative_to(ROOT).as_posix())]
    assert not found, "IR imports outside the one idiom (tests/test_ir_imports.py):\n" + "\n".join(found)


def test_rule_catches_each_bypass(tmp_path: Path) -> None:
    bad = ("from cinn_py.ir.expr import Var\nfrom cinn_py.ir import expr as E\nfrom cinn_py import ir\n"
           "import cinn_py.ir.stmt\nfrom cinn_py.ir import NotAName\nfrom cinn_py.ir import For, Var\n")
    path = tmp_path / "probe.py"
    path.write_text(bad)
    found = _violations(path, "probe.py")
    assert [v.split(":")[1] for v in found] == ["1", "2", "3", "4", "5"], found
