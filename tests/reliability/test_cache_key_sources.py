"""The disk cache key covers every project source and the project version (issue 23 item 4): a
change to lowering, passes, the simplifier or schedules must never be served a kernel compiled by
the old code, in another process sharing the cache directory."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cinn_py.runtime import cache
from cinn_py.runtime.cache import PROJECT_PACKAGES, project_digest

ROOT = Path(__file__).resolve().parents[2]

_BUILD = """
from cinn_py.frontend import NetBuilder
from cinn_py.pipeline import compile_program
b = NetBuilder("keyed")
x = b.create_input("float32", [64], "x")
out = b.relu(b.add(x, x))
compiled = compile_program(b.build([out]), "x86")
print(",".join(str(k.from_cache) for k in compiled.kernels))
"""


def _copy_project(dest: Path) -> None:
    for name in PROJECT_PACKAGES:
        shutil.copytree(ROOT / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"))


def _build_in(tree: Path, cache_dir: Path) -> str:
    env = {**os.environ, "CINN_PY_CACHE_DIR": str(cache_dir), "PYTHONPATH": str(tree)}
    env.pop("CINN_PY_DISABLE_DISK_CACHE", None)
    done = subprocess.run([sys.executable, "-c", _BUILD], cwd=tree, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.slow
def test_a_changed_project_source_misses_the_disk_cache(tmp_path: Path) -> None:
    tree, cache_dir = tmp_path / "tree", tmp_path / "cache"
    _copy_project(tree)
    assert "True" not in _build_in(tree, cache_dir)
    assert "False" not in _build_in(tree, cache_dir)  # unchanged sources: served from disk
    for edited in ("cinn_py/passes/__init__.py", "cinn_py/symbolic/__init__.py",
                   "schedules/tactics/__init__.py"):
        with open(tree / edited, "a", encoding="utf-8") as fh:
            fh.write("\n# an edit that could have changed the kernel\n")
        assert ("True"
                not in _build_in(tree, cache_dir)), f"a kernel compiled before {edited} changed was served"


def test_project_digest_covers_every_package_and_the_version(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    first = project_digest()
    assert project_digest() is first  # once per process
    pkg = tmp_path / "pkg"
    (pkg / "include").mkdir(parents=True)
    (pkg / "a.py").write_text("x = 1\n")
    (pkg / "include" / "rt.cuh").write_text("#define X 1\n")
    before = cache.source_digest(str(pkg))
    (pkg / "include" / "rt.cuh").write_text("#define X 2\n")  # a header generated code includes
    cache.source_digest.cache_clear()
    assert cache.source_digest(str(pkg)) != before
    import cinn_py

    monkeypatch.setattr(cinn_py, "__version__", "9.9.9")
    cache.project_digest.cache_clear()
    try:
        assert project_digest() != first
    finally:
        monkeypatch.undo()
        cache.project_digest.cache_clear()
        cache.source_digest.cache_clear()
    assert project_digest() == first
