"""The import rule of docs/design.md §2, enforced.

- `cinn_py` (the core) imports nothing from `schedules` or `codegen`, except the entry points
  that tie them together lazily (`cinn_py/driver.py`, `cinn_py/pipeline.py`, `cinn_py/cli.py`,
  `cinn_py/__main__.py`)
  and the tools (`cinn_py/tools/`: benchmarks, demo, fuzzer, runner, test helpers), which work at
  the command line's level.
- `schedules` and `codegen` import from `cinn_py` and never from each other.
- `import schedules`, `import codegen` and `import cinn_py` each work first in a fresh interpreter.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("cinn_py", "schedules", "codegen")
# Core modules allowed to reach schedules/codegen (lazily, inside functions).
ENTRY_POINTS = {"cinn_py/driver.py", "cinn_py/pipeline.py", "cinn_py/cli.py", "cinn_py/__main__.py"}
# The one folder whose modules may import at the command line's level (as the CLI does).
TOOLS = "cinn_py/tools/"
FORBIDDEN = {"cinn_py": {"schedules", "codegen"}, "schedules": {"codegen"}, "codegen": {"schedules"}}


def _imported_packages(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "import_module" and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                found.add(arg.value.split(".")[0])
    return found


def _modules() -> list[tuple[str, Path]]:
    return [(pkg, p) for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))]


@pytest.mark.parametrize(("package", "path"), _modules(), ids=lambda v: str(v))
def test_import_rule(package: str, path: Path) -> None:
    rel = path.relative_to(ROOT).as_posix()
    if rel in ENTRY_POINTS or rel.startswith(TOOLS):
        return
    bad = _imported_packages(path) & FORBIDDEN[package]
    assert not bad, f"{rel} imports {sorted(bad)}: the import rule (docs/design.md §2) forbids it"


@pytest.mark.parametrize(("package", "path"), _modules(), ids=lambda v: str(v))
def test_core_does_not_import_tools(package: str, path: Path) -> None:
    rel = path.relative_to(ROOT).as_posix()
    if package != "cinn_py" or rel in ENTRY_POINTS or rel.startswith(TOOLS):
        return
    tree = ast.parse(path.read_text(), rel)
    modules = {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    modules |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    bad = sorted(m for m in modules if m == "cinn_py.tools" or m.startswith("cinn_py.tools."))
    assert not bad, f"{rel} imports {bad}: only the CLI and the tools themselves use cinn_py/tools/"


def test_lazy_init_does_not_import_layers() -> None:
    code = "import sys, cinn_py; assert 'schedules' not in sys.modules and 'codegen' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


@pytest.mark.parametrize("package", PACKAGES)
def test_each_package_imports_first_in_a_fresh_interpreter(package: str) -> None:
    result = subprocess.run([sys.executable, "-c", f"import {package}"], capture_output=True, text=True,
                            cwd=ROOT)
    assert result.returncode == 0, result.stderr


# The frontend is a leaf: it builds, optimises and fuses programs and imports (even lazily) only
# the IR core (and the interpreter's math table); compiling a program is the pipeline's job
# (cinn_py/pipeline.py imports the frontend).
FRONTEND = "cinn_py/frontend"
FRONTEND_MAY_IMPORT = ("cinn_py.frontend", "cinn_py.ir", "cinn_py.diagnostics", "cinn_py.symbolic",
                       "cinn_py.interp")  # the IR interpreter's math table: numpy semantics of the ops


def _function_level_imports(path: Path) -> set[str]:
    """Modules imported inside a function body (not when the module itself is imported)."""
    tree = ast.parse(path.read_text(), str(path))
    funcs = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return ({node.module for f in funcs for node in ast.walk(f) if isinstance(node, ast.ImportFrom)
             and node.module})


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "import_module" and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                found.add(arg.value)
    return found


# The one exception, by API: CINN puts compile-and-run on the program
# (`Program.build_and_get_output`), so that method reaches the driver lazily, inside the function.
FRONTEND_LAZY_API = {"program.py": "cinn_py.driver"}


@pytest.mark.parametrize("path", sorted((ROOT / FRONTEND).rglob("*.py")), ids=lambda p: p.name)
def test_frontend_is_a_leaf(path: Path) -> None:
    ours = {m for m in _imported_modules(path) if m.split(".")[0] in PACKAGES}
    ours -= {FRONTEND_LAZY_API.get(path.name, "")} & _function_level_imports(path)
    bad = sorted(m for m in ours if not any(m == ok or m.startswith(ok + ".") for ok in FRONTEND_MAY_IMPORT))
    assert not bad, (f"{path.relative_to(ROOT)} imports {bad}: the frontend imports only "
                     f"{FRONTEND_MAY_IMPORT} (the pipeline compiles programs, cinn_py/pipeline.py)")
