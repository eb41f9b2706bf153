"""Special files where the compiler expects its own files (issue 23 item 6): a FIFO, a device, a
directory or a symbolic link in place of a kernel cache entry, the cache's secret or the tuning
database never blocks, never reads without end, and costs at most that one entry."""

from __future__ import annotations

import os
import signal
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

import codegen.llvm as x86
from cinn_py.diagnostics import TuningDatabaseError
from cinn_py.ir import dtype as dt
from cinn_py.runtime.cache import SECRET_NAME
from cinn_py.runtime.files import SpecialFileError, read_regular_file
from schedules.tactics import auto_schedule
from schedules.tactics.tuning_db import TuningDB, TuningRecord
from tests.codegen.llvm.llvm_helpers import elementwise_1d
from tests.tactics.test_matmul import matmul_func


@contextmanager
def _deadline(seconds: int = 20) -> Iterator[None]:
    """Fail instead of hanging: a blocked open() of a FIFO is interrupted by SIGALRM."""
    def expire(signum: int, frame: object) -> None:
        raise TimeoutError(f"blocked for {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _plant(path: Path, kind: str) -> None:
    """Replace `path` by a special file of `kind`."""
    if path.exists() or path.is_symlink():
        path.unlink()
    if kind == "fifo":
        os.mkfifo(path, 0o600)
    elif kind == "dev_zero":
        path.symlink_to("/dev/zero")
    elif kind == "directory":
        path.mkdir(mode=0o700)
        (path / "inside").write_text("x")


def _scaled(scale: float):  # noqa: ANN202 - a LoweredFunc
    return elementwise_1d(16, dt.float32, lambda a: a * scale)


@pytest.mark.parametrize("kind", ["fifo", "dev_zero", "directory"])
def test_a_special_file_as_a_cache_entry_costs_only_that_entry(cache_dir: Path, kind: str) -> None:
    x = np.arange(16, dtype=np.float32)
    x86.build_x86(_scaled(3.0))
    (entry,) = cache_dir.glob("*.bin")
    _plant(entry, kind)
    x86.CACHE.clear_memory()
    with _deadline(), pytest.warns(RuntimeWarning, match="not a regular file"):
        kernel = x86.build_x86(_scaled(3.0))
    assert not kernel.from_cache
    np.testing.assert_array_equal(kernel(x), x * 3)
    assert entry.is_dir() if kind == "directory" else entry.is_file() and not entry.is_symlink()
    x86.CACHE.clear_memory()  # the disk cache still works: for this key unless a directory sits there
    with _deadline(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert x86.build_x86(_scaled(3.0)).from_cache == (kind != "directory")
    x86.build_x86(_scaled(5.0))
    x86.CACHE.clear_memory()
    assert x86.build_x86(_scaled(5.0)).from_cache  # and for every other key


@pytest.mark.parametrize("kind", ["fifo", "dev_zero"])
def test_a_special_file_as_the_cache_secret_bypasses_the_disk_cache(cache_dir: Path, kind: str) -> None:
    x86.build_x86(_scaled(3.0))
    _plant(cache_dir.parent / SECRET_NAME, kind)
    x86.CACHE.clear_memory()
    with _deadline(), pytest.warns(RuntimeWarning, match="regular file"):
        kernel = x86.build_x86(_scaled(3.0))
    assert not kernel.from_cache


@pytest.fixture()
def tuning_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "db"
    folder.mkdir(mode=0o700)
    path = folder / "tuning_db.json"
    monkeypatch.setenv("CINN_PY_TUNING_DB", str(path))
    return path


@pytest.mark.parametrize("kind", ["fifo", "dev_zero", "directory"])
def test_a_special_file_as_the_tuning_database_means_defaults(tuning_db: Path, kind: str) -> None:
    _plant(tuning_db, kind)
    with _deadline(), pytest.warns(RuntimeWarning, match="not a regular file"):
        notes = auto_schedule(matmul_func(40, 40, 40), "x86").auto_report.notes
    assert notes[0] == "matmul parameters: defaults"
    db = TuningDB(tuning_db)
    db.put("k", TuningRecord({"mr": 4}, 1.0, None, 1))
    with _deadline(), pytest.raises(TuningDatabaseError, match="not a regular file"):
        db.save()


def test_read_regular_file_limits(tmp_path: Path) -> None:
    big = tmp_path / "big"
    big.write_bytes(b"x" * 101)
    with pytest.raises(SpecialFileError, match="more than 100 bytes"):
        read_regular_file(big, 100)
    assert read_regular_file(big, 101)[0] == b"x" * 101
    link = tmp_path / "link"
    link.symlink_to(big)
    with pytest.raises(SpecialFileError, match="symbolic link"):
        read_regular_file(link, 200)
    assert read_regular_file(link, 200, follow_symlinks=True)[0] == b"x" * 101
    with pytest.raises(FileNotFoundError):
        read_regular_file(tmp_path / "missing", 10)
