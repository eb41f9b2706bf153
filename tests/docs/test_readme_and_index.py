"""README.md and docs/index.md stay true: the README's commands are the ones CI runs, its Python
examples run, and the index links every page and names every public API entry."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import cinn_py

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
INDEX = ROOT / "docs" / "index.md"
INSTALL_AND_RUN = 'python -m pip install -e . && cinn-py demo'
INSTALL_AND_TEST = 'python -m pip install -q -e ".[test]" && python -m pytest -q'


def _bash_blocks(text: str) -> list[str]:
    return [b.strip() for b in re.findall(r"```bash\n(.*?)```", text, re.S)]


def test_readme_commands_are_exact_and_ci_runs_the_test_command() -> None:
    assert _bash_blocks(README.read_text()) == [INSTALL_AND_RUN, INSTALL_AND_TEST]
    ci = (ROOT / ".ci" / "run").read_text()
    commands = ([line.strip() for line in ci.splitlines() if line.strip()
                 and not line.lstrip().startswith("#")])
    assert commands[-2:] == [INSTALL_AND_TEST, "python -m pytest -q -m slow"]


def test_readme_python_examples_run() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert blocks, "README.md has no ```python example"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for k, block in enumerate(blocks):
            # Each block in a namespace of its own: a reader pastes one block, not the page.
            namespace: dict[str, object] = {"__name__": "__readme__"}
            exec(compile(block, f"README.md python block {k}", "exec"), namespace)  # noqa: S102
    printed = out.getvalue()
    assert "function rms_norm (_X, _Y, S)" in printed  # the lowered AST
    assert "vectorize[8] for (j, 0ll, 768ll)" in printed  # the hand schedule
    assert "__global__" in printed  # the auto-scheduled CUDA kernel


def test_readme_points_into_docs() -> None:
    text = README.read_text()
    for page in ("docs/index.md", "docs/tutorial.md", "docs/primitives.md", "docs/auto_schedule.md",
                 "docs/dynamic_shapes.md", "docs/net_builder.md", "docs/cli.md"):
        assert page in text, page
        assert (ROOT / page).exists(), page


def test_index_links_every_doc_page_and_links_resolve() -> None:
    text = INDEX.read_text()
    links = re.findall(r"\]\(([^)#]+)\)", text)
    for link in links:
        assert (INDEX.parent / link).resolve().exists(), f"docs/index.md links to missing {link}"
    pages = {p.name for p in (ROOT / "docs").glob("*.md")} - {"index.md"}
    linked = {Path(link).name for link in links}
    assert pages <= linked, f"docs/index.md does not link {sorted(pages - linked)}"


def test_index_names_every_public_api_entry() -> None:
    text = INDEX.read_text()
    missing = [name for name in cinn_py.__all__ if f"`{name}`" not in text]
    assert not missing, f"docs/index.md does not describe {missing} (cinn_py.__all__)"
