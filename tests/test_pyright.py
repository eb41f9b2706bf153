"""pyright (standard mode, via basedpyright) over `cinn_py`, `schedules` and `codegen`.

The configuration is `[tool.pyright]` in pyproject.toml (stubs for untyped libraries in
`typings/`). The three packages are clean: `BASELINE` (errors allowed) is 0 and must stay so. A
failure lists every error as `file:line:col: error: message [rule]`; fix them (for an optional
dependency that is absent, `# pyright: ignore[reportMissingImports]` on its import). Locally:
`basedpyright` (or `python -m basedpyright`) in the repository root.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BASELINE = 0


def _pyright_errors() -> list[str]:
    proc = subprocess.run([sys.executable, "-m", "basedpyright", "--outputjson"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        pytest.fail("basedpyright gave no JSON report (exit "
                    f"{proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    errors = []
    for diag in report["generalDiagnostics"]:
        if diag["severity"] != "error":
            continue
        start = diag["range"]["start"]
        path = Path(diag["file"]).resolve().relative_to(ROOT).as_posix()
        message = diag["message"].replace("\n", " ")
        errors.append(f"{path}:{start['line'] + 1}:{start['character'] + 1}: error: {message} "
                      f"[{diag.get('rule', '')}]")
    return errors


def test_pyright_standard_mode_errors_do_not_grow() -> None:
    pytest.importorskip("basedpyright", reason="basedpyright is in the 'test' extra: pip install -e .[test]")
    errors = _pyright_errors()
    assert len(errors) <= BASELINE, (
        f"pyright (standard mode) reports {len(errors)} errors (allowed: {BASELINE}, "
        f"tests/test_pyright.py); fix them:\n" + "\n".join(errors))
