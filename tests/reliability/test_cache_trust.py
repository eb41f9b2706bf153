"""The disk cache as an attack surface: it stores object code that is loaded and executed.

A planted entry (valid old-style checksum, or an HMAC under another secret) is never loaded, an
entry copied from another kernel's key never serves it, and a cache directory or secret someone
else can write is bypassed with a warning (memory only) instead of being trusted.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import struct
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import cinn_py as cp
import codegen.llvm as x86
from cinn_py.ir import reset_name_ids
from cinn_py.runtime import cache
from cinn_py.runtime.cache import MAGIC, SECRET_NAME


def _func(scale: float):  # type: ignore[no-untyped-def]
    reset_name_ids()   # every scale lowers to the same function name, hence the same symbol
    a = cp.placeholder((16,), "float32", "A")
    return cp.lower("scale", [a, cp.compute((16,), lambda i: a[i] * scale, "B")])


def _build(scale: float):  # type: ignore[no-untyped-def]
    kernel = cp.build(_func(scale), "x86")
    x = np.arange(16, dtype=np.float32)
    np.testing.assert_array_equal(kernel(x), x * np.float32(scale))
    return kernel


def _entry_of(cache_dir: Path, scale: float) -> Path:
    before = set(cache_dir.glob("*.bin")) if cache_dir.exists() else set()
    _build(scale)
    (entry,) = set(cache_dir.glob("*.bin")) - before
    return entry


@pytest.fixture
def root(cache_dir: Path) -> Iterator[Path]:
    x86.CACHE._warned.clear()
    yield cache_dir.parent
    x86.CACHE._warned.clear()


def _cold_build(scale: float) -> tuple[object, list[str]]:
    x86.CACHE.clear_memory()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kernel = _build(scale)
    return kernel, [str(w.message) for w in caught]


def _object_code_of_times_five(cache_dir: Path) -> tuple[dict, bytes]:
    entry = _entry_of(cache_dir, 5.0)
    loaded = x86.CACHE.load(entry.stem)
    assert loaded is not None
    return loaded


def test_planted_entry_with_a_plain_checksum_is_not_executed(root: Path, cache_dir: Path) -> None:
    """Today's attack: the old format's SHA-256 checksum is public, so anyone who can write the
    file could make it verify. The planted object code computes x*5 under the x*3 kernel's key."""
    victim = _entry_of(cache_dir, 3.0)
    header, blob = _object_code_of_times_five(cache_dir)
    head = __import__("json").dumps({**header, "key": victim.stem}).encode()
    payload = struct.pack("<I", len(head)) + head + blob
    victim.write_bytes(MAGIC + hashlib.sha256(payload).digest() + payload)
    kernel, messages = _cold_build(3.0)
    assert not kernel.from_cache
    assert any("foreign entry" in m for m in messages), messages


def test_planted_entry_under_another_secret_is_not_executed(root: Path, cache_dir: Path) -> None:
    victim = _entry_of(cache_dir, 3.0)
    header, blob = _object_code_of_times_five(cache_dir)
    victim.write_bytes(cache._encode(header, blob, os.urandom(32), "x86", victim.stem))
    kernel, messages = _cold_build(3.0)
    assert not kernel.from_cache
    assert any("foreign entry" in m for m in messages), messages


def test_copied_entry_does_not_serve_another_kernel(root: Path, cache_dir: Path) -> None:
    """Both kernels are named `scale` (same symbol): only the recorded key tells them apart."""
    victim = _entry_of(cache_dir, 3.0)
    other = _entry_of(cache_dir, 5.0)
    shutil.copyfile(other, victim)
    kernel, messages = _cold_build(3.0)          # _build asserts x*3, not x*5
    assert not kernel.from_cache
    assert any("foreign entry" in m for m in messages), messages
    again, _ = _cold_build(3.0)
    assert again.from_cache                      # the entry was rewritten for its own key


@pytest.mark.parametrize(("which", "mode"), [("root", 0o777), ("root", 0o770), ("namespace", 0o757)])
def test_writable_by_others_is_bypassed(root: Path, cache_dir: Path, which: str, mode: int) -> None:
    entry = _entry_of(cache_dir, 3.0)
    target = root if which == "root" else cache_dir
    target.chmod(mode)
    try:
        kernel, messages = _cold_build(3.0)
        assert not kernel.from_cache               # the valid entry is not read ...
        assert any("group- or world-writable" in m and "memory only" in m for m in messages), messages
        entry.unlink()
        _cold_build(3.0)
        assert not entry.exists()                  # ... and nothing is written
        with warnings.catch_warnings():
            warnings.simplefilter("error")         # one warning per directory, not per build
            _cold_build(3.0)
    finally:
        target.chmod(0o700)


def test_directory_owned_by_someone_else_is_bypassed(root: Path, cache_dir: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    _entry_of(cache_dir, 3.0)
    monkeypatch.setattr(cache.os, "geteuid", lambda: os.stat(root).st_uid + 1)
    kernel, messages = _cold_build(3.0)
    assert not kernel.from_cache
    assert any("is owned by uid" in m for m in messages), messages


def test_secret_is_private_and_checked(root: Path, cache_dir: Path) -> None:
    _entry_of(cache_dir, 3.0)
    secret = root / SECRET_NAME
    st = secret.stat()
    assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_size == 32
    assert stat.S_IMODE(root.stat().st_mode) & 0o077 == 0
    secret.chmod(0o644)
    try:
        kernel, messages = _cold_build(3.0)
        assert not kernel.from_cache
        assert any(SECRET_NAME in m and "0600" in m for m in messages), messages
    finally:
        secret.chmod(0o600)


def test_secret_symlink_is_refused(root: Path, cache_dir: Path,
                                   tmp_path_factory: pytest.TempPathFactory) -> None:
    _entry_of(cache_dir, 3.0)
    secret = root / SECRET_NAME
    elsewhere = tmp_path_factory.mktemp("elsewhere") / "secret"
    elsewhere.write_bytes(secret.read_bytes())
    secret.unlink()
    secret.symlink_to(elsewhere)
    kernel, messages = _cold_build(3.0)
    assert not kernel.from_cache
    assert any(SECRET_NAME in m for m in messages), messages
