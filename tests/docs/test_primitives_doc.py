"""docs/primitives.md is generated from the code (tests/docs/gen_primitives.py): it must be up to
date, cover every public IRSchedule method, and its error lists must agree with the primitives'
own `Raises:` sections. (pytest also runs the page itself as a doctest.)"""

from __future__ import annotations

import builtins
import inspect
import re

import pytest

from schedules import IRSchedule
from tests.docs import gen_primitives as gen


def test_primitives_md_is_up_to_date() -> None:
    expected = gen.render()
    current = gen.OUTPUT.read_text() if gen.OUTPUT.exists() else ""
    if current != expected:
        pytest.fail("docs/primitives.md is out of date with the schedule docstrings/code; regenerate it "
                    "with:\n"
                    f"    {gen.REGEN}")


def _public_methods() -> set[str]:
    return {name for name, value in vars(IRSchedule).items()
            if not name.startswith("_") and inspect.isfunction(value)}


def test_every_public_irschedule_method_is_documented_once() -> None:
    documented = list(gen.documented_methods())
    assert len(documented) == len(set(documented))
    assert set(documented) == _public_methods(), "add new IRSchedule methods to SECTIONS and EXAMPLES"
    assert set(gen.EXAMPLES) == set(documented)


@pytest.fixture(scope="module")
def graph() -> gen._CallGraph:
    return gen._CallGraph()


@pytest.mark.parametrize("name", sorted(n for n in gen.EXAMPLES if gen.primitive_function(n) is not None))
def test_error_scan_covers_the_documented_raises(name: str, graph: gen._CallGraph) -> None:
    """Every class a primitive's docstring lists under `Raises:` is found by the code scan (so the
    scan, which also covers primitives without a Raises section, is not missing call paths)."""
    fn = gen.primitive_function(name)
    doc = inspect.getdoc(fn) or ""
    raises = doc.split("Raises:", 1)[1] if "Raises:" in doc else ""
    listed = set(re.findall(r"\b([A-Z]\w*Error)\b", raises)) - set(dir(builtins))
    scanned = {e.name for e in graph.errors(name, fn)}
    assert listed <= scanned, f"{name}: Raises lists {sorted(listed - scanned)} that the scan did not find"


def test_error_scan_attributes_literal_names_to_their_primitive(graph: gen._CallGraph) -> None:
    unroll = {e.name for e in graph.errors("unroll", gen.primitive_function("unroll"))}
    bind = {e.name for e in graph.errors("bind", gen.primitive_function("bind"))}
    assert "BindLimitError" in bind and "BindLimitError" not in unroll
    assert "ExtentMismatchError" not in unroll  # vectorize's divisibility rule


def test_doctest_block_format_round_trips_through_doctest() -> None:
    import doctest

    statements = ["x = 1", "for k in range(2):\n    print(k)", "x + 1", "print('a\\n\\nb')"]
    block = gen.doctest_block(statements, gen.run_statements(statements, {}))
    source = block.removeprefix("```python\n").removesuffix("\n```")
    test = doctest.DocTestParser().get_doctest(source, {}, "block", None, 0)
    runner = doctest.DocTestRunner(verbose=False)
    runner.run(test, out=lambda _: None)
    assert runner.summarize(verbose=False) == (0, 4)
