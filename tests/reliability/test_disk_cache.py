"""Adversarial tests of the compile caches (`cinn_py.runtime.cache` + the x86 backend's use).

Truncated and corrupted entries at every boundary of the file format, entries whose checksum
verifies but whose content is wrong, paths that are directories or files, concurrent writers
and readers in several processes, and key sensitivity (no stale kernel for a different IR).
A damaged cache may cost a recompile, never a wrong result, a crash or an exception.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

import cinn_py as cp
import codegen.llvm as x86
from cinn_py.ir import reset_name_ids
from cinn_py.runtime import cache
from cinn_py.runtime.cache import MAGIC, CompileCache, make_key

ROOT = Path(__file__).resolve().parents[2]


def _func(scale: float = 3.0, n: int = 16, dtype: str = "float32", name: str = "scale"):  # type: ignore[no-untyped-def]
    reset_name_ids()   # the same program lowers to the same names, hence the same cache key
    a = cp.placeholder((n,), dtype, "A")
    return cp.lower(name, [a, cp.compute((n,), lambda i: a[i] * scale, "B")])


def _build_and_check(scale: float = 3.0) -> object:
    kernel = cp.build(_func(scale), "x86")
    x = np.arange(16, dtype=np.float32)
    np.testing.assert_array_equal(kernel(x), x * np.float32(scale))
    return kernel


def _one_entry(directory: Path) -> Path:
    entries = sorted(directory.glob("*.bin"))
    assert len(entries) == 1, entries
    return entries[0]


def _cut_points(data: bytes) -> list[int]:
    head_len = int.from_bytes(data[len(MAGIC) + 32:len(MAGIC) + 36], "little")
    body = len(MAGIC) + 36 + head_len
    return sorted({0, 1, len(MAGIC) - 1, len(MAGIC), len(MAGIC) + 16, len(MAGIC) + 32, len(MAGIC) + 34,
                   len(MAGIC) + 36 + head_len // 2, body, body + 1, (body + len(data)) // 2, len(data) - 1})


def test_truncated_entries_at_every_boundary_recompile(cache_dir: Path) -> None:
    _build_and_check()
    entry = _one_entry(cache_dir)
    data = entry.read_bytes()
    for cut in _cut_points(data):
        entry.write_bytes(data[:cut])
        x86.CACHE.clear_memory()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            kernel = _build_and_check()
        assert not kernel.from_cache, f"cut at {cut}: a truncated entry was used"
        assert any("corrupt" in str(w.message) for w in caught), f"cut at {cut}: no warning"
        assert _one_entry(cache_dir).read_bytes() == data, f"cut at {cut}: entry not rewritten"


@pytest.mark.parametrize("offset", [0, len(MAGIC) + 3, len(MAGIC) + 40, -100, -1])
def test_flipped_bytes_are_detected(cache_dir: Path, offset: int) -> None:
    _build_and_check()
    entry = _one_entry(cache_dir)
    data = bytearray(entry.read_bytes())
    data[offset] ^= 0xFF
    entry.write_bytes(bytes(data))
    x86.CACHE.clear_memory()
    with pytest.warns(RuntimeWarning, match="corrupt"):
        kernel = _build_and_check()
    assert not kernel.from_cache


@pytest.mark.parametrize(("header", "blob"), [
    ({"symbol": "wrong_symbol", "llvm_ir": "", "asm": ""}, None),
    ({"symbol": None}, None),
    (None, b"not an object file"),
    (None, b""),
])
def test_entries_that_verify_but_are_wrong_recompile(cache_dir: Path, header: dict | None,
                                                     blob: bytes | None) -> None:
    """The HMAC is fine (written by this user's cache), the content is not: a stale symbol, a
    non-object blob."""
    kernel = _build_and_check()
    entry = _one_entry(cache_dir)
    real_header = {"symbol": kernel.symbol, "llvm_ir": kernel.llvm_ir, "asm": kernel.asm}
    assert x86.CACHE.store(entry.stem, header if header is not None else real_header,
                           blob if blob is not None else b"x")
    x86.CACHE.clear_memory()
    code = textwrap.dedent(f"""
        import numpy as np, warnings, cinn_py as cp
        from cinn_py.runtime import cache
        cache.set_cache_dir({str(cache_dir.parent)!r})
        warnings.simplefilter("ignore")
        a = cp.placeholder((16,), "float32", "A")
        k = cp.build(cp.lower("scale", [a, cp.compute((16,), lambda i: a[i] * 3.0, "B")]), "x86")
        x = np.arange(16, dtype=np.float32)
        assert (k(x) == x * 3).all() and not k.from_cache
        print("ok")
    """)
    # in a subprocess: loading a garbage object file must not take the test run down with it
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


def test_entry_path_is_a_directory(cache_dir: Path) -> None:
    kernel = _build_and_check()
    entry = _one_entry(cache_dir)
    entry.unlink()
    entry.mkdir()
    x86.CACHE.clear_memory()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = _build_and_check()
    assert not again.from_cache and kernel.symbol == again.symbol


def test_cache_root_is_a_file_falls_back_to_memory(tmp_path: Path) -> None:
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("x")
    cache.set_cache_dir(blocker)
    x86.CACHE.clear_memory()
    try:
        with pytest.warns(RuntimeWarning, match="memory only"):
            _build_and_check(5.0)
        with warnings.catch_warnings():
            warnings.simplefilter("error")          # warned once per directory, not per build
            _build_and_check(6.0)
        assert cp.build(_func(5.0), "x86").from_cache   # the memory cache still works
    finally:
        cache.set_cache_dir(None)
        x86.CACHE.clear_memory()


def test_read_only_store_returns_false_with_one_warning(tmp_path: Path) -> None:
    store = CompileCache("ro-test")
    cache.set_cache_dir(tmp_path / "file")
    (tmp_path / "file").write_text("")
    try:
        with pytest.warns(RuntimeWarning, match="cannot write"):
            assert store.store("k" * 64, {"a": 1}, b"blob") is False
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert store.store("k" * 64, {"a": 1}, b"blob") is False
        assert store.load("k" * 64) is None
    finally:
        cache.set_cache_dir(None)


_WRITER = textwrap.dedent("""
    import sys, numpy as np, cinn_py as cp
    from cinn_py.runtime import cache
    cache.set_cache_dir(sys.argv[1])
    a = cp.placeholder((64,), "float32", "A")
    f = cp.lower("shared_kernel", [a, cp.compute((64,), lambda i: a[i] * 7.0 + 1.0, "B")])
    for _ in range(int(sys.argv[2])):
        import codegen.llvm as x86
        x86.CACHE.clear_memory()
        k = cp.build(f, "x86")
        x = np.arange(64, dtype=np.float32)
        assert (k(x) == x * 7 + 1).all()
    print("ok")
""")


def test_concurrent_writers_and_readers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Four processes build (and re-load from disk) the same kernel into one cache dir at once."""
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(tmp_path), "4"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, cwd=ROOT) for _ in range(4)]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0 and "ok" in out, err[-2000:]
    entries = list((tmp_path / "x86").iterdir())
    assert [e.suffix for e in entries] == [".bin"], entries   # one entry, no stray temporary files
    monkeypatch.setattr(cache, "_cache_dir_override", tmp_path)
    assert CompileCache("x86").load(entries[0].stem) is not None


def test_keys_separate_everything_that_changes_code() -> None:
    base = make_key(_func(), backend="x86-1", fast_math=False)
    variants = [
        make_key(_func(scale=3.5), backend="x86-1", fast_math=False),
        make_key(_func(n=17), backend="x86-1", fast_math=False),
        make_key(_func(dtype="float64"), backend="x86-1", fast_math=False),
        make_key(_func(name="other"), backend="x86-1", fast_math=False),
        make_key(_func(), backend="x86-1", fast_math=True),
        make_key(_func(), backend="x86-2", fast_math=False),
    ]
    assert len({base, *variants}) == len(variants) + 1
    assert make_key(_func(), backend="x86-1", fast_math=False) == base     # and is stable


def test_no_stale_kernel_for_a_changed_schedule(cache_dir: Path) -> None:
    from schedules import IRSchedule

    func = _func(n=64)
    plain = cp.build(func, "x86")
    sch = IRSchedule(func)
    outer, inner = sch.split(sch.get_loops("B")[0], [16, 4])
    sch.vectorize(inner, 4)
    sch.parallel(outer)
    scheduled = cp.build(sch, "x86")
    assert scheduled.llvm_ir != plain.llvm_ir
    x = np.arange(64, dtype=np.float32)
    np.testing.assert_array_equal(scheduled(x), plain(x))


def test_environment_disables_disk_cache(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CINN_PY_DISABLE_DISK_CACHE", "1")
    _build_and_check(9.0)
    assert not cache_dir.exists() or not list(cache_dir.glob("*.bin"))
    monkeypatch.delenv("CINN_PY_DISABLE_DISK_CACHE")
    assert os.environ.get("CINN_PY_DISABLE_DISK_CACHE") is None
