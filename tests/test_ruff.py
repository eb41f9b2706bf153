"""The tree is lint clean: `ruff check` (pycodestyle errors and warnings with the 110-column line
length, pyflakes: unused imports and variables, undefined names) with the configuration in
pyproject.toml (`[tool.ruff]`). Formatting is by hand: the tree is not run through `ruff format`."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _ruff() -> list[str]:
    """The ruff command: the module of this interpreter's environment, else one on PATH."""
    probe = subprocess.run([sys.executable, "-m", "ruff", "--version"], capture_output=True, text=True)
    if probe.returncode == 0:
        return [sys.executable, "-m", "ruff"]
    found = shutil.which("ruff")
    if found is None:
        pytest.skip("ruff is not installed (pip install -e '.[test]' installs it)")
    return [found]


def test_ruff_check_is_clean() -> None:
    result = subprocess.run([*_ruff(), "check", "--no-cache", "--output-format", "concise", "."],
                            capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, ("ruff check found problems (fix them, or `ruff check --fix`):\n"
                                    + result.stdout + result.stderr)


def test_ruff_sees_the_project_configuration(tmp_path: Path) -> None:
    """The check above is not vacuous: the configured rules catch an unused import and a long line."""
    probe = tmp_path / "probe.py"
    probe.write_text("import os\n\nx = '" + "a" * 120 + "'\n")
    result = subprocess.run([*_ruff(), "check", "--no-cache", "--output-format", "concise",
                             "--config", str(ROOT / "pyproject.toml"), str(probe)],
                            capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 1
    assert "F401" in result.stdout and "E501" in result.stdout, result.stdout
