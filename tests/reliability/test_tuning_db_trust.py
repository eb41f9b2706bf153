"""The tuning database is data from disk that steers code generation (issue 23 item 5): its values
are validated with errors naming the file, key and value, and it is read only from a folder the
kernel cache would trust."""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import pytest

from cinn_py.diagnostics import TuningDatabaseError
from schedules.tactics import auto_schedule
from schedules.tactics.matmul import match_matmul
from schedules.tactics.tuning_db import TuningDB, TuningRecord, matmul_key
from schedules.tactics.tuning_store import write
from tests.tactics.test_matmul import matmul_func

GOOD = {"mr": 4, "nv": 1, "lanes": 8, "kc": 16, "pack_b": False, "parallel": "outer"}


@pytest.fixture()
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "db"
    folder.mkdir(mode=0o700)
    path = folder / "tuning.sqlite"
    monkeypatch.setenv("CINN_PY_TUNING_DB", str(path))
    return path


def _write(path: Path, key: str, params: dict[str, Any], **fields: Any) -> None:
    """One record written into the SQLite file as a hand edit would: not validated."""
    record = {"params": params, "time_s": 1e-5, "default_time_s": 2e-5, "trials": 3, **fields}
    for old in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        old.unlink(missing_ok=True)
    write(path, {key: record})
    path.chmod(0o600)


def _matmul_key() -> tuple[Any, str]:
    fn = matmul_func(40, 40, 40)
    info = match_matmul(fn)
    assert info is not None
    return fn, matmul_key(info)


@pytest.mark.parametrize(("field", "value", "expected"), [
    ("lanes", 0, "power of two"), ("lanes", 6, "power of two"), ("mr", "8", "integer"),
    ("mr", True, "integer"),
    ("kc", -16, "integer in"), ("nv", 1.5, "integer"), ("pack_b", 1, "true or false"),
    ("parallel", "all", "outer"),
])
def test_a_bad_matmul_value_names_file_key_and_value(db: Path, field: str, value: Any, expected: str) -> None:
    fn, key = _matmul_key()
    _write(db, key, {**GOOD, field: value})
    with pytest.raises(TuningDatabaseError, match=expected) as err:
        auto_schedule(fn, "x86")
    message = str(err.value)
    assert str(db) in message and repr(key) in message and f"params.{field} is {value!r}" in message


@pytest.mark.parametrize(("fields", "named"), [
    ({"time_s": "fast"}, "time_s"), ({"time_s": float("nan")}, "time_s"), ({"trials": -1}, "trials"),
    ({"default_time_s": [1]}, "default_time_s"),
])
def test_a_bad_record_field_is_named(db: Path, fields: dict[str, Any], named: str) -> None:
    _write(db, "k", GOOD, **fields)
    with pytest.raises(TuningDatabaseError, match=f"record 'k': {named} is"):
        TuningDB.load(db)


def test_group_records_set_only_the_tuning_knobs(db: Path) -> None:
    _write(db, "k", {"vector_width_bits": 0})
    with pytest.raises(TuningDatabaseError, match="vector_width_bits is 0"):
        TuningDB.load(db)
    from schedules.tactics.tuning_schema import GROUP_PARAMS

    assert "tile" not in GROUP_PARAMS and "bucket" not in GROUP_PARAMS  # never set from disk


def test_good_record_is_used_and_unknown_names_are_tolerated(db: Path) -> None:
    fn, key = _matmul_key()
    _write(db, key, GOOD)
    assert auto_schedule(fn, "x86").auto_report.notes[0] == "matmul parameters: tuning database"
    _write(db, key, {**GOOD, "future_knob": 3})  # another version's parameter set: not an error, not used
    assert auto_schedule(fn, "x86").auto_report.notes[0] == "matmul parameters: defaults"


@pytest.mark.parametrize("where", ["folder", "file"])
def test_a_world_writable_database_is_not_read(db: Path, where: str) -> None:
    fn, key = _matmul_key()
    _write(db, key, GOOD)
    (db.parent if where == "folder" else db).chmod(0o777 if where == "folder" else 0o666)
    with pytest.warns(RuntimeWarning, match="group- or world-writable"):
        notes = auto_schedule(fn, "x86").auto_report.notes
    assert notes[0] == "matmul parameters: defaults"
    db.parent.chmod(0o700)
    db.chmod(0o600)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert auto_schedule(fn, "x86").auto_report.notes[0] == "matmul parameters: tuning database"


def test_saving_into_a_world_writable_folder_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    os.chmod(folder, 0o777)
    db = TuningDB(folder / "db.sqlite")
    db.put("k", TuningRecord(GOOD, 1.0, None, 1))
    with pytest.raises(TuningDatabaseError, match="refusing to write"):
        db.save()
    assert not (folder / "db.sqlite").exists()
