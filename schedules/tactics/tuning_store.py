"""The tuning database's file: SQLite (stdlib `sqlite3`), shared by processes and machines.

One file holds two tables:

    records(key TEXT PRIMARY KEY, cpu, target, structure, bucket, time_s REAL, record TEXT)
        the best parameters per key; `record` is the JSON object `tuning_schema` validates
    measurements(id, key, cpu, target, structure, params TEXT, features TEXT, time_s, default_time_s, at)
        every measured candidate with its loop-nest features: the training data of the cost model,
        shared across shapes and groups (transfer through the database)

Concurrency: the journal is in WAL mode (readers never block the writer), every write is one
`BEGIN IMMEDIATE` transaction, and a lock held by another process is waited for (`busy_timeout`,
30 s). A record replaces the stored one only when it is faster (`ON CONFLICT ... WHERE`), so
concurrent tuners merge. `PRAGMA user_version` holds the schema version.

A file that is not this version's database (a JSON database of version 1, another version, a
corrupt file) is read as follows: a version-1 JSON file's records are read and validated (the
JSON format this module replaces); anything else is ignored with one warning. The next write
migrates: the JSON records go into a new SQLite file that replaces it atomically; an unreadable
file is moved aside to `<name>.unreadable-<time>` first, never silently overwritten.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import tempfile
import time
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from cinn_py.diagnostics import TuningDatabaseError

__all__ = ["SCHEMA_VERSION", "Measurement", "read_records", "read_measurements", "write"]

SCHEMA_VERSION = 2
LEGACY_JSON_VERSION = 1
BUSY_TIMEOUT_MS = 30_000
MAX_LEGACY_BYTES = 64 << 20

_SCHEMA = """
CREATE TABLE IF NOT EXISTS records (
    key TEXT PRIMARY KEY, cpu TEXT NOT NULL, target TEXT NOT NULL, structure TEXT NOT NULL,
    bucket TEXT NOT NULL, time_s REAL NOT NULL, record TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS measurements (
    id INTEGER PRIMARY KEY, key TEXT NOT NULL, cpu TEXT NOT NULL, target TEXT NOT NULL,
    structure TEXT NOT NULL, params TEXT NOT NULL, features TEXT NOT NULL, time_s REAL NOT NULL,
    default_time_s REAL, at TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS measurements_by_cpu ON measurements (cpu, target);
"""

Measurement = tuple[str, dict[str, Any], list[float], float, float | None]
"""(key, params, features, time_s, default_time_s)."""


def split_key(key: str) -> tuple[str, str, str, str]:
    """(cpu, target, structure, bucket) of a `cpu|target|structure|bucket` key (missing parts
    empty: a hand-written key need not have four)."""
    parts = key.split("|")
    parts += [""] * (4 - len(parts))
    return parts[0], parts[1], parts[2], "|".join(parts[3:])


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    return conn


def _kind(path: Path) -> str:
    """"sqlite", "json", "empty" or "unknown", from the file's first bytes."""
    with open(path, "rb") as fh:
        head = fh.read(16)
    if not head:
        return "empty"
    if head.startswith(b"SQLite format 3\x00"):
        return "sqlite"
    return "json" if head.lstrip()[:1] == b"{" else "unknown"


def read_records(path: Path) -> dict[str, Any] | None:
    """The raw records (key -> JSON object, not yet validated) of the file at `path`, which the
    caller checked is a trusted regular file; None (after one warning) when it is not a database
    of this version nor a version-1 JSON file."""
    kind = _kind(path)
    if kind == "empty":
        return {}
    if kind == "json":
        return _read_legacy_json(path)
    if kind == "unknown":
        _ignored(path, "not an SQLite database nor a version-1 JSON database")
        return None
    try:
        with contextlib.closing(_connect(path)) as conn:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version != SCHEMA_VERSION:
                _ignored(path, f"schema version {version}, expected {SCHEMA_VERSION}")
                return None
            rows = conn.execute("SELECT key, record FROM records").fetchall()
    except sqlite3.DatabaseError as err:
        _ignored(path, f"sqlite: {err}")
        return None
    out: dict[str, Any] = {}
    for key, text in rows:
        try:
            out[key] = json.loads(text)
        except ValueError as err:
            raise TuningDatabaseError(f"tuning database {path}: record {key!r}: the record is not JSON "
                                      f"({err}); "
                                      "delete the record (or set CINN_PY_TUNING_DB=off)") from None
    return out


def _ignored(path: Path, why: str) -> None:
    warnings.warn(f"tuning database {path}: ignored ({why}); the next tune moves it aside and writes a "
                  "new one",
                  stacklevel=4)


def _read_legacy_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_bytes()[:MAX_LEGACY_BYTES].decode("utf-8"))
        if not isinstance(data, dict) or data.get("version") != LEGACY_JSON_VERSION:
            raise ValueError(f"version {data.get('version') if isinstance(data, dict) else None!r}, expected "
                             f"{LEGACY_JSON_VERSION} (JSON) or an SQLite database")
        records = data["records"]
        if not isinstance(records, dict):
            raise ValueError(f"'records' is a {type(records).__name__}, expected an object")
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as err:
        _ignored(path, str(err))
        return None
    return records


def read_measurements(path: Path, cpu: str, target: str, limit: int = 20_000) -> list[Measurement]:
    """The newest `limit` measurements on `cpu` for `target` ([] without an SQLite file)."""
    try:
        if not path.is_file() or _kind(path) != "sqlite":
            return []
        with contextlib.closing(_connect(path)) as conn:
            if conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
                return []
            rows = conn.execute("SELECT key, params, features, time_s, default_time_s FROM measurements "
                                "WHERE cpu = ? AND target = ? ORDER BY id DESC LIMIT ?",
                                (cpu, target, limit)).fetchall()
    except (OSError, sqlite3.DatabaseError):
        return []
    out: list[Measurement] = []
    for key, params, features, secs, default in rows:
        try:
            feats = [float(x) for x in json.loads(features)]
            base = None if default is None else float(default)
            out.append((key, json.loads(params), feats, float(secs), base))
        except (ValueError, TypeError):
            continue  # a measurement only trains the model: a bad one is skipped, never used
    return out


def write(path: Path, records: dict[str, dict[str, Any]], measurements: Sequence[Measurement] = ()) -> None:
    """Merge `records` (the faster record per key wins) and append `measurements`, in one
    transaction; a legacy JSON file is migrated first, an unreadable one moved aside."""
    _migrate_or_move_aside(path)
    with _transaction(path) as conn:
        for key, record in records.items():
            cpu, target, structure, bucket = split_key(key)
            conn.execute(
                "INSERT INTO records (key, cpu, target, structure, bucket, time_s, record) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(key) DO UPDATE SET time_s = excluded.time_s, "
                "record = excluded.record WHERE excluded.time_s < records.time_s",
                (key, cpu, target, structure, bucket, _number(record.get("time_s")),
                 json.dumps(record, sort_keys=True)))
        at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        for key, params, features, secs, default in measurements:
            cpu, target, structure, _ = split_key(key)
            conn.execute("INSERT INTO measurements (key, cpu, target, structure, params, features, time_s, "
                         "default_time_s, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         (key, cpu, target, structure, json.dumps(params, sort_keys=True),
                          json.dumps(features),
                          float(secs), default, at))


@contextlib.contextmanager
def _transaction(path: Path) -> Iterator[sqlite3.Connection]:
    fresh = not path.exists()
    conn = _connect(path)
    try:
        if fresh:
            os.chmod(path, 0o600)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("BEGIN IMMEDIATE")
        for statement in filter(str.strip, _SCHEMA.split(";")):  # executescript would commit
            conn.execute(statement)
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version not in (0, SCHEMA_VERSION):
            raise TuningDatabaseError(f"tuning database {path}: schema version {version}, expected "
                                      f"{SCHEMA_VERSION}; refusing to write into it")
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    finally:
        conn.close()


def _migrate_or_move_aside(path: Path) -> None:
    """Before the first SQLite write: a version-1 JSON file becomes an SQLite file with its
    records (validated by the caller's read); an unreadable file is renamed, never lost."""
    if not path.exists():
        return
    kind = _kind(path)
    if kind in ("sqlite", "empty"):  # empty: another process is creating it (SQLite fills it in)
        return
    legacy = _read_legacy_json(path) if kind == "json" else None
    if legacy is None:
        aside = path.with_name(f"{path.name}.unreadable-{time.strftime('%Y%m%dT%H%M%S')}")
        os.replace(path, aside)
        warnings.warn(f"tuning database {path}: moved aside to {aside.name} (not a database this version "
                      "reads); writing a new one", stacklevel=4)
        return
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    os.unlink(tmp)
    tmp_path = Path(tmp)
    try:
        with _transaction(tmp_path) as conn:
            for key, record in legacy.items():
                cpu, target, structure, bucket = split_key(key)
                conn.execute("INSERT INTO records (key, cpu, target, structure, bucket, time_s, record) "
                             "VALUES (?, ?, ?, ?, ?, ?, ?)",
                             (key, cpu, target, structure, bucket, _number(record.get("time_s")),
                              json.dumps(record, sort_keys=True)))
        with contextlib.closing(_connect(tmp_path)) as conn:
            conn.execute("PRAGMA journal_mode = DELETE")  # one self-contained file to rename
        os.replace(tmp_path, path)
    finally:
        for leftover in (tmp_path, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
            leftover.unlink(missing_ok=True)


def _number(value: Any) -> float:
    """The `time_s` column (records are validated when read; NaN or a string sorts last here)."""
    try:
        out = float(value)
    except (TypeError, ValueError):
        return float("inf")
    return out if out == out else float("inf")
