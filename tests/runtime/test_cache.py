"""Compile caches: memory hit, disk hit across processes, corrupt entries, read-only dirs,
concurrent writers."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import codegen.llvm as x86
from cinn_py import ir
from cinn_py.ir import dtype as dt
from cinn_py.runtime import cache
from cinn_py.runtime.cache import CompileCache, make_key
from tests.codegen.llvm.llvm_helpers import elementwise_1d

ROOT = Path(__file__).resolve().parents[2]


def _func(scale: float = 3.0) -> ir.LoweredFunc:
    return elementwise_1d(16, dt.float32, lambda a: a * scale)


def _entries(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.bin"))


def test_memory_then_disk_hit(cache_dir: Path) -> None:
    x = np.arange(16, dtype=np.float32)
    first = x86.build_x86(_func())
    assert not first.from_cache and len(_entries(cache_dir)) == 1
    assert x86.build_x86(_func()).from_cache  # memory
    x86.CACHE.clear_memory()
    again = x86.build_x86(_func())  # disk: object code loaded, no compilation
    assert again.from_cache and again.llvm_ir == first.llvm_ir
    np.testing.assert_array_equal(again(x), x * 3)
    assert make_key(_func(2.0)) != make_key(_func(3.0))
    assert make_key(_func(), fast_math=True) != make_key(_func(), fast_math=False)


def test_corrupt_entry_is_discarded_and_recompiled(cache_dir: Path) -> None:
    x86.build_x86(_func())
    (entry,) = _entries(cache_dir)
    data = bytearray(entry.read_bytes())
    data[-10] ^= 0xFF
    entry.write_bytes(bytes(data))
    x86.CACHE.clear_memory()
    with pytest.warns(RuntimeWarning, match="discarding corrupt or foreign entry"):
        kernel = x86.build_x86(_func())
    assert not kernel.from_cache
    np.testing.assert_array_equal(kernel(np.ones(16, np.float32)), np.full(16, 3, np.float32))
    assert len(_entries(cache_dir)) == 1  # rewritten
    entry.write_bytes(b"garbage")
    x86.CACHE.clear_memory()
    with pytest.warns(RuntimeWarning):
        assert not x86.build_x86(_func()).from_cache


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root ignores directory permissions")
def test_read_only_directory_falls_back_to_memory(tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        cache.set_cache_dir(ro)
        c = CompileCache("x86")
        with pytest.warns(RuntimeWarning, match="cannot write"):
            assert not c.store("k", {}, b"x")
        assert not c.store("k2", {}, b"x")  # warned once
    finally:
        ro.chmod(0o700)


def test_unwritable_path_falls_back_to_memory(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    cache.set_cache_dir(blocker)  # mkdir under a regular file fails even for root
    x86.CACHE.clear_memory()
    x86.CACHE._unwritable.clear()
    try:
        with pytest.warns(RuntimeWarning, match="cached in memory only"):
            kernel = x86.build_x86(_func(5.0))
        np.testing.assert_array_equal(kernel(np.ones(16, np.float32)), np.full(16, 5, np.float32))
        assert x86.build_x86(_func(5.0)).from_cache
    finally:
        x86.CACHE._unwritable.clear()


def test_disabled_by_environment(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CINN_PY_DISABLE_DISK_CACHE", "1")
    x86.build_x86(_func())
    assert not cache_dir.exists()


_WRITER = textwrap.dedent("""
    import sys
    import numpy as np
    sys.path.insert(0, {root!r})
    from cinn_py.ir import dtype as dt
    from cinn_py.runtime import cache
    from codegen.llvm import CACHE, build_x86
    from tests.codegen.llvm.llvm_helpers import elementwise_1d
    cache.set_cache_dir({dir!r})
    for scale in range(6):
        CACHE.clear_memory()
        k = build_x86(elementwise_1d(16, dt.float32, lambda a: a * float(scale)))
        assert (k(np.ones(16, np.float32)) == scale).all()
    print("ok")
""")


def test_concurrent_writers_from_two_processes(cache_dir: Path) -> None:
    script = _WRITER.format(root=str(ROOT), dir=str(cache_dir.parent))
    procs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    outputs = [p.communicate(timeout=120) for p in procs]
    for p, (out, err) in zip(procs, outputs):
        assert p.returncode == 0 and out.strip() == "ok", err
    entries = _entries(cache_dir)
    assert len(entries) == 6 and not list(cache_dir.glob("*.tmp"))
    for entry in entries:
        assert CompileCache("x86").load(entry.stem) is not None  # every entry is whole


def test_source_digest_changes_with_any_source_file(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "a.py").write_text("x = 1\n")
    (pkg / "sub" / "b.py").write_text("y = 2\n")
    first = cache.source_digest(str(pkg))
    assert cache.source_digest(str(pkg)) == first  # computed once per process
    (pkg / "sub" / "b.py").write_text("y = 3\n")
    cache.source_digest.cache_clear()
    second = cache.source_digest(str(pkg))
    assert second != first
    (pkg / "sub" / "b.py").rename(pkg / "b.py")  # same contents, other path
    cache.source_digest.cache_clear()
    assert cache.source_digest(str(pkg)) not in (first, second)
