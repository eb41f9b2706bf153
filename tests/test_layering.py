"""The import rule of docs/design.md §2, enforced.

- `cinn_py` (the core) imports nothing from `schedules` or `codegen`, except the entry points
  that tie them together lazily (`cinn_py/pipeline.py`, `cinn_py/cli.py` and its input loading
  `cinn_py/cli_inputs.py`, `cinn_py/__main__.py`)
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
ENTRY_POINTS = {"cinn_py/pipeline.py", "cinn_py/cli.py", "cinn_py/cli_inputs.py", "cinn_py/__main__.py"}
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


@pytest.mark.parametrize("path", sorted((ROOT / FRONTEND).rglob("*.py")), ids=lambda p: p.name)
def test_frontend_is_a_leaf(path: Path) -> None:
    ours = {m for m in _imported_modules(path) if m.split(".")[0] in PACKAGES}
    bad = sorted(m for m in ours if not any(m == ok or m.startswith(ok + ".") for ok in FRONTEND_MAY_IMPORT))
    assert not bad, (f"{path.relative_to(ROOT)} imports {bad}: the frontend imports only "
                     f"{FRONTEND_MAY_IMPORT} (the pipeline compiles programs, cinn_py/pipeline.py)")


# -- layers and cycles (the order is docs/architecture.md's "Layers") ------------------------------------
ARCHITECTURE = ROOT / "docs" / "architecture.md"
# `from cinn_py import __version__`: a constant of the root package, which Python has already run
# before any submodule; not a dependency on the facade's exports.
ROOT_CONSTANTS = {"__version__"}


def _layers() -> list[list[str]]:
    """The layer lines of docs/architecture.md's "Layers" block, low to high."""
    text = ARCHITECTURE.read_text()
    block = text.split("## Layers", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    return [[name.strip() for name in line.split(",")] for line in block.strip().splitlines()]


def _module_names() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


MODULES = _module_names()


def _resolve(name: str) -> str | None:
    """The module of ours that `import name` runs (the deepest existing prefix)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _layer_unit(module: str) -> str:
    """What the layer list names: `schedules`/`codegen` whole, `cinn_py.<subpackage>`, or one
    top-level module of `cinn_py` (`cinn_py.pipeline`); `cinn_py` is the root facade."""
    parts = module.split(".")
    if parts[0] != "cinn_py" or len(parts) == 1:
        return parts[0]
    return f"cinn_py.{parts[1]}"


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """ids of the import nodes under `if TYPE_CHECKING:` (type names only, never run)."""
    ids: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            ids.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return ids


def _imports(module: str) -> list[tuple[str, int, bool]]:
    """(imported module of ours, line, type-only) for every import in `module`, lazy ones too."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(), str(path))
    type_only = _type_checking_nodes(tree)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[str, int, bool]] = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            if base == "cinn_py" and {a.name for a in node.names} <= ROOT_CONSTANTS:
                continue
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "import_module" and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                names = [arg.value]
        for name in names:
            target = _resolve(name)
            if target is not None and target != module:
                found.append((target, getattr(node, "lineno", 0), id(node) in type_only))
    return found


def _cross_package_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of the module graph that span more than one package (the
    units of the layer list: a cycle inside `cinn_py.ir` or inside `schedules` is that package's
    own business)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        # iterative Tarjan: (node, iterator over its successors)
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            advanced = False
            for nxt in successors:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return [c for c in components if len({_layer_unit(m) for m in c}) > 1]


def test_layer_list_names_every_package_once() -> None:
    listed = [unit for layer in _layers() for unit in layer]
    assert len(listed) == len(set(listed)), f"docs/architecture.md lists a package twice: {listed}"
    units = {_layer_unit(m) for m in MODULES}
    assert units == set(listed), (f"docs/architecture.md's layers miss {sorted(units - set(listed))} "
                                  f"or name unknown packages {sorted(set(listed) - units)}")


def test_no_import_from_a_lower_layer_to_a_higher_one() -> None:
    rank = {unit: k for k, layer in enumerate(_layers()) for unit in layer}
    upward = [f"{MODULES[m].relative_to(ROOT)}:{line}: {_layer_unit(m)} imports {target} "
              f"({_layer_unit(target)} is a higher layer)"
              for m in sorted(MODULES) for target, line, _ in _imports(m)
              if rank[_layer_unit(target)] > rank[_layer_unit(m)]]
    assert not upward, "imports against the layer order of docs/architecture.md:\n" + "\n".join(upward)


def test_no_import_cycle_across_packages() -> None:
    graph = {m: {t for t, _, type_only in _imports(m) if not type_only} for m in MODULES}
    cycles = _cross_package_cycles(graph)
    assert not cycles, "import cycles joining modules of different packages:\n" + "\n".join(
        " <-> ".join(c) for c in cycles)


def test_the_checks_see_lazy_imports_and_cycles() -> None:
    """The checks are not vacuous: a lazy import inside a function is an edge, and a two-package
    cycle is reported while a cycle inside one package is not."""
    graph = {"cinn_py.frontend.program": {"cinn_py.pipeline"},
             "cinn_py.pipeline": {"cinn_py.frontend.program"},
             "cinn_py.ir.expr": {"cinn_py.ir.stmt"}, "cinn_py.ir.stmt": {"cinn_py.ir.expr"}}
    assert _cross_package_cycles(graph) == [["cinn_py.frontend.program", "cinn_py.pipeline"]]
    # the pipeline reaches the automatic scheduler only inside a function, by importlib
    assert "schedules.tactics" in {t for t, _, _ in _imports("cinn_py.pipeline")}
