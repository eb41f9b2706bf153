"""Generate docs/primitives.md, the IRSchedule reference, from the code itself.

What comes from where, so the page cannot drift from the code:

- the family introductions are the docstrings of the `schedules.primitives.<family>` modules;
- each method's signature is the source text of its `def` in `schedules/schedule.py` (AST);
- its description is the `IRSchedule` method docstring plus the pure primitive function's one;
- its errors are found by reading the primitive's code: every `schedule_error(<Class>, ...)`
  (and direct `raise <ScheduleError subclass>`) reachable from the primitive function through
  plain calls inside `schedules.primitives` / `schedules.analysis`, with the class docstrings;
- its example is the `EXAMPLES` entry below, *executed* here: the printed IR is what the code
  prints today, and pytest re-runs it as a doctest of the page.

Regenerate with `python tests/docs/gen_primitives.py`; `tests/docs/test_primitives_doc.py` fails
when the committed page differs from what this script produces.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import inspect
import io
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUTPUT = ROOT / "docs" / "primitives.md"
REGEN = "python tests/docs/gen_primitives.py"

# (family module under schedules.primitives or None, section title, methods in reading order)
SECTIONS: list[tuple[str | None, str, list[str]]] = [
    ("get", "Queries",
     ["get_block", "get_loops", "get", "get_all_blocks", "get_child_blocks", "get_root_block"]),
    ("split", "split", ["split"]),
    ("fuse", "fuse", ["fuse"]),
    ("reorder", "reorder", ["reorder"]),
    ("flatten", "flatten_loops and add_unit_loop", ["flatten_loops", "add_unit_loop"]),
    ("for_type", "Loop kinds", ["parallel", "vectorize", "unroll", "bind"]),
    ("annotate", "Block attributes", ["annotate", "unannotate"]),
    ("storage", "Storage and synchronisation", ["set_buffer", "sync_threads"]),
    ("compute_at", "Moving blocks: compute_at family",
     ["compute_at", "simple_compute_at", "reverse_compute_at"]),
    ("compute_inline", "Inlining", ["compute_inline", "reverse_compute_inline"]),
    ("cache", "Caches", ["cache_read", "cache_write"]),
    ("reduction", "Reductions", ["rfactor", "factorize_reduction"]),
    ("decompose", "Decomposing a reduction", ["decompose_reduction"]),
    ("align", "Loop alignment", ["align_iter_space"]),
    (None, "Trying a sequence of primitives: fork and adopt", ["fork", "adopt"]),
]

SETUP: list[str] = [
    "import cinn_py as cp",
    "from cinn_py.ir import reset_name_ids, print_ir",
    '''def elementwise():
    """A[64, 32] -> B = A * 2 -> C = B + 1 (two loop nests)."""
    reset_name_ids()
    A = cp.placeholder((64, 32), "float32", "A")
    B = cp.compute((64, 32), lambda i, j: A[i, j] * 2.0, "B")
    C = cp.compute((64, 32), lambda i, j: B[i, j] + 1.0, "C")
    return cp.IRSchedule(cp.lower("fn", [A, C]))''',
    '''def reduction():
    """B[i] = sum_k A[i, k] over A[16, 64] (an init block and an update block)."""
    reset_name_ids()
    A = cp.placeholder((16, 64), "float32", "A")
    k = cp.reduce_axis(64, "k")
    B = cp.compute((16,), lambda i: cp.reduce_sum(A[i, k], [k]), "B")
    return cp.IRSchedule(cp.lower("fn", [A, B]))''',
    "print(elementwise())",
    "print(reduction())",
]

ERROR_EXAMPLE: list[str] = [
    "sch = elementwise()",
    'i, j = sch.get_loops("B")',
    '''try:
    sch.vectorize(j, 0)
except cp.ScheduleError as err:
    print(type(err).__name__)
    print(err)''',
    "sch.fuse([i, j])",
    '''try:
    sch.split(i, [2, -1])
except cp.ScheduleError as err:
    print(err.message)''',
]

EXAMPLES: dict[str, list[str]] = {
    "fork": ["sch = elementwise()", "trial = sch.fork()", 'trial.vectorize(trial.get_loops("B")[1], 8)',
             "len(trial.trace), len(sch.trace)"],
    "adopt": ["sch = elementwise()", "trial = sch.fork()", 'trial.parallel(trial.get_loops("C")[0])',
              "sch.adopt(trial)",
              'print(sch.get(sch.get_loops("C")[0]).for_type.value, len(sch.trace))'],
    "get_block": ["sch = elementwise()", 'sch.get_block("B")', '''try:
    sch.get_block("D")
except cp.ScheduleError as err:
    print(type(err).__name__, "-", err.message)'''],
    "get_loops": ["sch = elementwise()", 'sch.get_loops("C")'],
    "get": ["sch = elementwise()", 'i, j = sch.get_loops("C")',
            "str(sch.get(j).extent), sch.get(j).for_type.value",
            'print(sch.get("B"))'],
    "get_all_blocks": ["sch = reduction()", "sch.get_all_blocks()"],
    "get_child_blocks": ["sch = reduction()", 'i, k = sch.get_loops("B")', "sch.get_child_blocks(i)",
                         "sch.get_child_blocks(k)"],
    "get_root_block": ["sch = elementwise()", "sch.get_root_block()"],
    "split": ["sch = elementwise()", 'i, j = sch.get_loops("B")', "sch.split(i, [-1, 10])",
              'print(sch.get(sch.get_loops("B")[0]))'],
    "fuse": ["sch = elementwise()", 'fused = sch.fuse(sch.get_loops("B"))', "print(sch.get(fused))"],
    "reorder": ["sch = elementwise()", 'i, j = sch.get_loops("B")', "sch.reorder([j, i])",
                "print(sch.get(j))"],
    "flatten_loops": ["sch = elementwise()", 'flat = sch.flatten_loops(sch.get_loops("B"))',
                      "print(sch.get(flat))"],
    "add_unit_loop": ["sch = elementwise()", 'unit = sch.add_unit_loop("B")',
                      'print(sch.get(sch.get_loops("B")[1]))'],
    "parallel": ["sch = elementwise()", 'i, j = sch.get_loops("B")', "sch.parallel(i)", "print(sch.get(i))"],
    "vectorize": ["sch = elementwise()", 'i, j = sch.get_loops("B")', "sch.vectorize(j, 8)",
                  "print(sch.get(i))"],
    "unroll": ["sch = elementwise()", 'i, j = sch.get_loops("B")', "_ = sch.split(j, [-1, 4])",
               'sch.unroll(sch.get_loops("B")[2])', "print(sch.get(i))"],
    "bind": ["sch = elementwise()", 'i, j = sch.get_loops("B")', 'sch.bind(i, "blockIdx.x")',
             'sch.bind(j, "threadIdx.x")', "print(sch.get(i))"],
    "annotate": ["sch = elementwise()", 'sch.annotate("B", "tile", 4)', 'print(sch.get("B"))'],
    "unannotate": ["sch = elementwise()", 'sch.annotate("B", "tile", 4)', 'sch.unannotate("B", "tile")',
                   'print(sch.get("B"))'],
    "set_buffer": ["sch = elementwise()", 'sch.set_buffer("B", "local")',
                   'print(print_ir(sch.func, decls=True).splitlines()[0])',
                   "[(b.name, b.memory_type.value) for b in sch.func.temp_bufs]"],
    "sync_threads": ["sch = elementwise()", 'i, j = sch.get_loops("B")', "sch.sync_threads(i)", "print(sch)"],
    "compute_at": ["sch = elementwise()", 'i, j = sch.get_loops("C")', 'sch.compute_at("B", i)',
                   "print(sch)"],
    "simple_compute_at": ["sch = elementwise()", 'i, j = sch.get_loops("C")', 'sch.simple_compute_at("B", j)',
                          "print(sch)"],
    "reverse_compute_at": ["sch = elementwise()", 'i, j = sch.get_loops("B")',
                           'sch.reverse_compute_at("C", i)', "print(sch)"],
    "compute_inline": ["sch = elementwise()", 'sch.compute_inline("B")', "print(sch)"],
    "reverse_compute_inline": ["sch = elementwise()", 'sch.reverse_compute_inline("C")', "print(sch)"],
    "cache_read": ["sch = elementwise()", 'sch.cache_read("C", 0, "local")', "print(sch)"],
    "cache_write": ["sch = elementwise()", 'sch.cache_write("B", 0, "local")', "print(sch)"],
    "decompose_reduction": ["sch = reduction()", 'i, k = sch.get_loops("B")',
                            "io, ii = sch.split(i, [-1, 4])",
                            'init = sch.decompose_reduction("B", ii)', "sch.reorder([k, ii])", "print(sch)"],
    "rfactor": ["sch = reduction()", 'i, k = sch.get_loops("B")', "ko, ki = sch.split(k, [-1, 8])",
                "rf = sch.rfactor(ki, 0)", "rf.name, [str(d) for d in rf.shape]", "print(sch)"],
    "factorize_reduction": ["sch = reduction()", 'i, k = sch.get_loops("B")',
                            "ko, ki = sch.split(k, [8, -1])",
                            "rf = sch.factorize_reduction(ko, 1)", "rf.name, [str(d) for d in rf.shape]",
                            "print(sch)"],
    "align_iter_space": ["sch = reduction()", "sch.align_iter_space()", "print(sch)"],
}

INTRO = """\
# Schedule primitives reference

<!-- Generated by tests/docs/gen_primitives.py from the IRSchedule and primitive docstrings and
code; do not edit by hand. Regenerate: python tests/docs/gen_primitives.py -->

`cinn_py.IRSchedule` (`schedules.IRSchedule`) is CINN's `ir::IRSchedule` in snake_case over an
immutable IR. This page lists every method: signature, what it does, the generated names, the
errors its preconditions raise, and a before/after example in CINN's printed format. Every
example on this page runs as a doctest (`python -m pytest docs/primitives.md`).

How the API works:

- `sch = cp.IRSchedule(func)` wraps a `LoweredFunc` (or every function of a `Module`); `sch.func`
  / `sch.mod` is the current IR and `print(sch)` prints it. The original is never mutated.
- Queries return handles: `LoopRV` for loops and `BlockRV` for blocks (`sch.get(handle)` is the
  node behind one). Blocks may also be named by string (`"B"`). A handle stays valid while its
  node survives; a primitive that replaces a node (split, fuse, ...) makes its handles stale, and
  using one raises `StaleHandleError` naming the primitive that removed it.
- Every method checks its preconditions before building anything; on a violation it raises a
  `ScheduleError` subclass whose message reads `<primitive>: <rule, expected vs actual>` and
  whose `detail` is the function's IR with the offending node underlined by `^^^`. The schedule is
  unchanged after an error. Bad Python arguments (a loop handle where a block is expected, a
  non-int factor) raise `TypeError`; bad values (`InvalidArgumentError`) are also `ValueError`s.
- Errors every method that takes handles can raise, not repeated below: `StaleHandleError` (the
  node was replaced or removed), `BlockNotFoundError` (no block, or several, with that name),
  `InvalidArgumentError` (a handle of another `IRSchedule`, nodes of different functions).
- Every call is recorded in `sch.trace` (`sch.trace.as_python()` prints it as a script that
  replays on a fresh lowering); handles get trace names `e0, e1, ...`, shown in their repr.

## Setup used by the examples

Two small functions, built fresh (with a fresh name context) by each example:

"""

ERRORS_INTRO = """\
## Errors

A violated precondition leaves the schedule untouched. The exception names the primitive and the
rule, and `str(err)` includes the IR with the offending node marked (`err.message` is the first
line, `err.detail` the IR):

"""


# ------------------------------------------------------------------------------------------------
# running examples


def run_statements(statements: list[str], namespace: dict[str, object]) -> list[str]:
    """Execute each statement as the interactive interpreter (and doctest) does; return the
    output of each (printed text and the repr of a bare expression's value)."""
    outputs = []
    for source in statements:
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            # mode "single" prints the value of a bare expression through sys.displayhook,
            # exactly what doctest compares
            code = compile(source + "\n", "<example>", "single")
            old_hook = sys.displayhook
            sys.displayhook = _displayhook
            try:
                exec(code, namespace)  # noqa: S102 - our own example source
            finally:
                sys.displayhook = old_hook
        outputs.append(buffer.getvalue())
    return outputs


def _displayhook(value: object) -> None:
    if value is not None:
        print(repr(value))


def doctest_block(statements: list[str], outputs: list[str]) -> str:
    """A fenced ```python block of `>>>` examples with their expected output."""
    lines = ["```python"]
    for source, output in zip(statements, outputs):
        first, *rest = source.split("\n")
        lines.append(f">>> {first}")
        lines.extend(f"... {line}" if line else "..." for line in rest)
        if "\n" in source:
            lines.append("...")
        lines.extend(line if line.strip() else "<BLANKLINE>" for line in output.rstrip("\n").split("\n")
                     if output)
    lines += ["", "```"]
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------
# reading the code


@dataclass(frozen=True)
class ErrorDoc:
    name: str
    summary: str


def _module_ast(module: str) -> ast.Module:
    return ast.parse(Path(importlib.import_module(module).__file__ or "").read_text())


def method_signature(name: str) -> str:
    """`name(params) -> ret` as written in schedules/schedule.py (without `self`)."""
    tree = _module_ast("schedules.schedule")
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "IRSchedule")
    # The implementation, not a typing `@overload` stub before it.
    fn = [n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == name][-1]
    fn.args.args = fn.args.args[1:]
    fn.decorator_list, fn.body = [], [ast.Expr(ast.Constant(...))]
    text = ast.unparse(fn).split("\n")[0]
    return text.removeprefix("def ").removesuffix(":")


def primitive_function(name: str) -> object | None:
    """The pure function registered (`@primitive`) under `name`, or the query function of that
    name (None for `get`)."""
    from schedules.primitives import get as queries
    from schedules.registry import PRIMITIVES

    prim = PRIMITIVES.get(name)
    fn = prim.fn if prim is not None else getattr(queries, name, None)
    return fn if inspect.isfunction(fn) else None


class _CallGraph:
    """Module-level functions of schedules.primitives.* and schedules.analysis.* with the plain
    calls between them (resolved through local defs and `from schedules... import` names)."""

    PACKAGES = ("schedules.primitives", "schedules.analysis")

    def __init__(self) -> None:
        self.defs: dict[tuple[str, str], ast.FunctionDef] = {}
        self.imports: dict[str, dict[str, tuple[str, str]]] = {}
        for package in self.PACKAGES:
            folder = Path(importlib.import_module(package).__file__ or "").parent
            for path in sorted(folder.glob("*.py")):
                module = f"{package}.{path.stem}" if path.stem != "__init__" else package
                tree = ast.parse(path.read_text())
                self.imports[module] = {}
                for node in tree.body:
                    if isinstance(node, ast.FunctionDef):
                        self.defs[(module, node.name)] = node
                    elif (isinstance(node, ast.ImportFrom) and node.module
                          and node.module.startswith("schedules")):
                        for alias in node.names:
                            self.imports[module][alias.asname or alias.name] = (node.module, alias.name)

    def resolve(self, module: str, name: str) -> tuple[str, str] | None:
        if (module, name) in self.defs:
            return module, name
        target = self.imports.get(module, {}).get(name)
        if target is None:
            return None
        return self.resolve(*target) if target[0] in self.imports else None

    def reachable(self, start: tuple[str, str]) -> list[tuple[str, str]]:
        seen, todo = [start], [start]
        while todo:
            module, name = todo.pop()
            for node in ast.walk(self.defs[(module, name)]):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                    found = self.resolve(module, node.func.id)
                    if found is not None and found not in seen:
                        seen.append(found)
                        todo.append(found)
        return seen

    def errors(self, primitive: str, fn: object) -> list[ErrorDoc]:
        """ScheduleError classes the primitive `primitive` (function `fn`) can raise."""
        from cinn_py.diagnostics import ScheduleError

        start = (fn.__module__, fn.__name__)  # type: ignore[attr-defined]
        found: dict[str, type] = {}
        for module, name in self.reachable(start):
            namespace = vars(importlib.import_module(module))
            for node in ast.walk(self.defs[(module, name)]):
                cls_name = _raised_class(node, primitive)
                cls = namespace.get(cls_name) if cls_name else None
                if isinstance(cls, type) and issubclass(cls, ScheduleError) and cls is not ScheduleError:
                    found.setdefault(cls.__name__, cls)
        return [ErrorDoc(n, _summary(c)) for n, c in sorted(found.items())]


def _names_primitive(arg: ast.expr, primitive: str) -> bool:
    """Whether the primitive-name argument of an error may be `primitive` (a literal that is
    it, or a variable: helpers shared by several primitives take the name as a parameter)."""
    if isinstance(arg, ast.Constant):
        return arg.value == primitive
    if isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
        return str(arg.values[0].value).startswith(f"{primitive}:")
    return True


def _raised_class(node: ast.AST, primitive: str) -> str | None:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "schedule_error":
        if (len(node.args) >= 2 and isinstance(node.args[0], ast.Name)
            and _names_primitive(node.args[1], primitive)):
            return node.args[0].id
    if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and isinstance(node.exc.func, ast.Name):
        if node.exc.args and _names_primitive(node.exc.args[0], primitive):
            return node.exc.func.id
    return None


def _summary(obj: object) -> str:
    doc = inspect.getdoc(obj) or ""
    return " ".join(doc.split("\n\n")[0].split())


def _without_raises(doc: str) -> str:
    return doc.split("\nRaises:")[0].rstrip()


# ------------------------------------------------------------------------------------------------
# rendering


def render_method(name: str, graph: _CallGraph, namespace: dict[str, object]) -> str:
    from schedules import IRSchedule

    parts = [f"### `{name}`", "", "```", f"sch.{method_signature(name)}", "```", ""]
    parts += [inspect.getdoc(getattr(IRSchedule, name)) or "", ""]
    fn = primitive_function(name)
    if fn is not None:
        signature = f"{fn.__module__}.{fn.__name__}{inspect.signature(fn)}".replace("'", "")  # type: ignore[attr-defined]
        parts += [f"Pure function: `{signature}`", ""]
        doc = _without_raises(inspect.getdoc(fn) or "")
        if doc:
            parts += [textwrap.indent(doc, "> "), ""]
        errors = graph.errors(name, fn)
        if errors:
            parts += ["Errors:", ""] + [f"- `{e.name}`: {e.summary}" for e in errors] + [""]
    example = EXAMPLES[name]
    parts += ["Example:", "", doctest_block(example, run_statements(example, namespace)), ""]
    return "\n".join(parts)


def render() -> str:
    """The full text of docs/primitives.md."""
    graph = _CallGraph()
    namespace: dict[str, object] = {"__name__": "__primitives_doc__"}
    parts = [INTRO.rstrip() + "\n", doctest_block(SETUP, run_statements(SETUP, namespace)), ""]
    parts += [ERRORS_INTRO.rstrip() + "\n",
              doctest_block(ERROR_EXAMPLE, run_statements(ERROR_EXAMPLE, namespace)), ""]
    parts += ["## Contents", ""]
    for _, title, methods in SECTIONS:
        parts.append(f"- {title}: " + ", ".join(f"[`{m}`](#{m})" for m in methods))
    parts.append("")
    for family, title, methods in SECTIONS:
        parts += [f"## {title}", ""]
        if family is not None:
            module = importlib.import_module(f"schedules.primitives.{family}")
            parts += [inspect.getdoc(module) or "", ""]
        parts += [render_method(m, graph, namespace) for m in methods]
    return "\n".join(parts).rstrip() + "\n"


def documented_methods() -> Iterator[str]:
    for _, _, methods in SECTIONS:
        yield from methods


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        current = OUTPUT.read_text() if OUTPUT.exists() else ""
        if current != text:
            print(f"{OUTPUT} is out of date; regenerate with: {REGEN}")
            return 1
        return 0
    OUTPUT.write_text(text)
    print(f"wrote {OUTPUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main(sys.argv[1:]))
