"""The SQLite tuning database: records round-trip across concurrent processes (the faster record
per key wins), bad records are refused with the file, key, field and value named, the JSON
database of earlier versions is read and migrated, and an unreadable file is moved aside."""

from __future__ import annotations

import concurrent.futures as cf
import json
import multiprocessing
import sqlite3
from pathlib import Path

import pytest

from cinn_py.diagnostics import TuningDatabaseError
from schedules.tactics.tuning_db import TuningDB, TuningRecord
from schedules.tactics.tuning_store import SCHEMA_VERSION, write


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    out = tmp_path / "db"
    out.mkdir(mode=0o700)
    return out


def _writer(path: str, worker: int, rounds: int) -> None:
    """One process's tuning: a record per (worker, round), and one shared key whose time drops."""
    for r in range(rounds):
        db = TuningDB.load(Path(path))
        db.put(f"cpu|x86|w{worker}|r{r}", TuningRecord({"mr": worker + 1}, 1.0 + r, None, r))
        db.put("cpu|x86|shared|b", TuningRecord({"mr": worker + 1}, 10.0 - worker - r / 100, 10.0, 1))
        db.add_measurements([(f"cpu|x86|w{worker}|r{r}", {"mr": worker + 1}, [float(worker), float(r)],
                              1.0, 2.0)])
        db.save()


def test_concurrent_processes_merge_and_the_fastest_record_wins(folder: Path) -> None:
    path = folder / "tuning.sqlite"
    ctx = multiprocessing.get_context("spawn")
    with cf.ProcessPoolExecutor(4, mp_context=ctx) as pool:
        for fut in [pool.submit(_writer, str(path), w, 5) for w in range(4)]:
            fut.result(timeout=120)
    db = TuningDB.load(path)
    assert len(db.records) == 4 * 5 + 1
    shared = db.get("cpu|x86|shared|b")
    assert shared is not None and shared.params == {"mr": 4} and shared.time_s == pytest.approx(10 - 3 - 0.04)
    assert len(db.measurements("cpu", "x86")) == 20 and db.measurements("other", "x86") == []
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert path.stat().st_mode & 0o077 == 0


def test_a_slower_record_never_replaces_a_faster_one(folder: Path) -> None:
    path = folder / "t.sqlite"
    one, other = TuningDB.load(path), TuningDB.load(path)
    one.put("k", TuningRecord({"mr": 4}, 2.0, 3.0, 5, {"cpu": "x"}))
    one.save()
    other.put("k", TuningRecord({"mr": 12}, 4.0, 3.0, 1))  # slower than what is in the file now
    other.save()
    got = TuningDB.load(path).get("k")
    assert got is not None and got.params == {"mr": 4} and got.meta == {"cpu": "x"}
    assert other.get("k") == got  # save re-reads the merged file


def test_a_bad_record_is_refused_naming_file_key_field_and_value(folder: Path) -> None:
    path = folder / "t.sqlite"
    write(path, {"cpu|x86|group_n1_r0_c|s16_r1": {"params": {"vector_width_bits": 48}, "time_s": 1.0,
                                                  "default_time_s": None, "trials": 1}})
    with pytest.raises(TuningDatabaseError, match=r"t\.sqlite: record 'cpu\|x86\|group_n1_r0_c\|s16_r1': "
                                                  r"params\.vector_width_bits is 48 \(int\), expected a "
                                                  r"power of two"):
        TuningDB.load(path)
    with sqlite3.connect(path) as conn:  # a record that is not JSON at all
        conn.execute("UPDATE records SET record = '{oops'")
    with pytest.raises(TuningDatabaseError, match="the record is not JSON"):
        TuningDB.load(path)


def test_the_json_database_is_read_then_migrated_by_the_next_write(folder: Path) -> None:
    path = folder / "tuning_db.json"
    rec = {"params": {"mr": 6}, "time_s": 1.0, "default_time_s": 2.0, "trials": 3}
    path.write_text(json.dumps({"version": 1, "records": {"a|x86|s|b": rec}}))
    db = TuningDB.load(path)
    assert db.get("a|x86|s|b") is not None and db.get("a|x86|s|b").params == {"mr": 6}  # type: ignore[union-attr]
    db.put("b|x86|s|b", TuningRecord({"mr": 2}, 0.5, None, 1))
    db.save()
    assert path.read_bytes().startswith(b"SQLite format 3\x00")
    assert set(TuningDB.load(path).records) == {"a|x86|s|b", "b|x86|s|b"}
    names = sorted(p.name for p in folder.iterdir() if not p.name.startswith("tuning_db.json-"))
    assert names == ["tuning_db.json"]


def test_the_default_location_migrates_the_old_json_file(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from schedules.tactics.tuning_db import current_db, db_path

    monkeypatch.delenv("CINN_PY_TUNING_DB")
    monkeypatch.setenv("CINN_PY_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir(mode=0o700)
    legacy = tmp_path / "cache" / "tuning_db.json"
    legacy.write_text(json.dumps({"version": 1, "records": {
        "a|x86|s|b": {"params": {"mr": 6}, "time_s": 1.0, "default_time_s": None, "trials": 1}}}))
    path = db_path()
    assert path is not None and path.name == "tuning.sqlite"
    db = current_db()
    assert db is not None and "a|x86|s|b" in db.records  # read before any write
    store = TuningDB.load(path)
    store.put("c|x86|s|b", TuningRecord({"mr": 2}, 0.5, None, 1))
    store.save()
    assert not legacy.exists() and legacy.with_name("tuning_db.json.migrated").exists()
    assert set(TuningDB.load(path).records) == {"a|x86|s|b", "c|x86|s|b"}


def test_an_unreadable_file_is_ignored_then_moved_aside_not_lost(folder: Path) -> None:
    path = folder / "t.sqlite"
    path.write_bytes(b"\x00garbage that is no database")
    with pytest.warns(UserWarning, match="ignored .*not an SQLite database"):
        assert TuningDB.load(path).records == {}
    db = TuningDB(path)
    db.put("k", TuningRecord({"mr": 2}, 0.5, None, 1))
    with pytest.warns(UserWarning, match="moved aside"):
        db.save()
    aside = [p for p in folder.iterdir() if ".unreadable-" in p.name]
    assert len(aside) == 1 and aside[0].read_bytes().startswith(b"\x00garbage")
    assert TuningDB.load(path).get("k") is not None


def test_another_schema_version_is_ignored_and_never_written_into(folder: Path) -> None:
    path = folder / "t.sqlite"
    write(path, {})
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.warns(UserWarning, match=f"schema version {SCHEMA_VERSION + 1}, expected {SCHEMA_VERSION}"):
        assert TuningDB.load(path).records == {}
    db = TuningDB(path)
    db.put("k", TuningRecord({"mr": 2}, 0.5, None, 1))
    with pytest.raises(TuningDatabaseError, match="refusing to write into it"):
        db.save()
