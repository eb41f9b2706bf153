"""The tuning database: the best measured tactic parameters per (CPU, target, group structure, shape bucket).

`cinn_py.tune` (docs/auto_schedule.md, "Tuning") writes it; `auto_schedule(..., target="x86")`
reads it, so `schedule="auto"` uses tuned parameters wherever a record matches and the tactics'
defaults elsewhere.

Where: `$CINN_PY_TUNING_DB` (a file path; `off` disables the database), else
`<cache dir>/tuning.sqlite` next to the kernel cache (`$CINN_PY_CACHE_DIR`, default
`~/.cache/cinn-py`); no file when the disk cache is disabled. The file is an SQLite database
(`tuning_store`: WAL journal, one transaction per write, the faster record per key wins), so
processes (and machines sharing the folder) tune into it concurrently; it also keeps every
measured candidate with its loop-nest features, the cost model's training data. The JSON
database of earlier versions (`tuning_db.json`) is still read, and migrated by the next write.

Trust (the kernel cache's rule): the file is read only when its folder is owned by this user and
writable by nobody else and the file is this user's and not group/world-writable (else one
RuntimeWarning, and the defaults); `save` refuses such a folder. A FIFO, device or directory as
the file is never opened (a warning and the defaults). Every record is validated when read
(`tuning_schema`): a value of the wrong type or range raises `TuningDatabaseError` naming the
file, the key, the field and the value.

Keys: `cpu|target|structure|bucket`. `cpu` is LLVM's host CPU name plus whether AVX-512 is
there (`znver5+avx512`); `structure` says what kind of group it is (`matmul_NN_epi2`,
`group_n2_r1_c`); `bucket` rounds each size up to a power of two (`m1024_n1024_k1024`; a
symbolic size is `S`), so one record serves the shapes a tuned schedule is good for.
"""

from __future__ import annotations

import functools
import os
import stat
import time
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cinn_py.ir import Expr, LoweredFunc
from cinn_py.diagnostics import TuningDatabaseError
from cinn_py.runtime.cache import UntrustedCacheError, cache_dir, check_private_dir, make_private_dir
from cinn_py.runtime.files import file_kind
from schedules.analysis.regions import const_value
from schedules.tactics.config import next_pow2
from schedules.tactics.group import analyze_group
from schedules.tactics.matmul import MatmulInfo, MatmulParams
from schedules.tactics.tuning_schema import GROUP_PARAMS, check_record
from schedules.tactics.tuning_store import Measurement, read_measurements, read_records, write

__all__ = [
    "DB_VERSION", "TuningDB", "TuningRecord", "db_path", "group_key", "host_cpu", "lookup_group",
    "lookup_matmul", "matmul_key",
]

DB_VERSION = 2
"""The SQLite schema version (`PRAGMA user_version`; version 1 was the JSON file)."""
ENV_VAR = "CINN_PY_TUNING_DB"
FILE_NAME = "tuning.sqlite"
LEGACY_FILE_NAME = "tuning_db.json"


def db_path() -> Path | None:
    """The database file (see the module docstring), or None when there is none."""
    env = os.environ.get(ENV_VAR, "")
    if env.lower() == "off":
        return None
    if env:
        return Path(env)
    root = cache_dir()
    return None if root is None else root / FILE_NAME


@functools.lru_cache(maxsize=1)
def host_cpu() -> str:
    """The CPU part of a key: LLVM's host CPU name and whether AVX-512 is available."""
    import llvmlite.binding as llvm

    name = llvm.get_host_cpu_name()
    avx512 = llvm.get_host_cpu_features().get("avx512f", False)
    return f"{name}+avx512" if avx512 else name


def _bucket_dim(value: Expr) -> str:
    size = const_value(value)
    return "S" if size is None else str(next_pow2(size))


def matmul_key(info: MatmulInfo, target: str = "x86") -> str:
    bucket = "_".join(f"{n}{_bucket_dim(v)}" for n, v in (("m", info.m), ("n", info.n), ("k", info.k)))
    return f"{host_cpu()}|{target}|{info.structure}|{bucket}"


def group_key(func: LoweredFunc, target: str = "x86") -> str:
    """The key of a non-matmul group: block counts and layout, spatial/reduce sizes bucketed."""
    info = analyze_group(func)
    nests = [b for b in info.blocks if not b.is_init]
    structure = f"group_n{len(nests)}_r{len(info.reduce_blocks)}_{'c' if info.continuous else 'd'}"
    bucket = f"s{_bucket_dim(info.spatial_numel)}_r{_bucket_dim(info.reduce_numel)}"
    return f"{host_cpu()}|{target}|{structure}|{bucket}"


@dataclass
class TuningRecord:
    """The best parameters found for one key."""

    params: dict[str, Any]
    time_s: float
    default_time_s: float | None
    """The default parameters' time (None when they failed)."""
    trials: int
    meta: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"params": self.params, "time_s": self.time_s, "default_time_s": self.default_time_s,
                "trials": self.trials, **self.meta}

    @staticmethod
    def from_json(data: dict[str, Any]) -> TuningRecord:
        meta = {k: v for k, v in data.items() if k not in ("params", "time_s", "default_time_s", "trials")}
        default = data["default_time_s"]
        return TuningRecord(dict(data["params"]), float(data["time_s"]),
                            None if default is None else float(default),
                            int(data["trials"]), meta)


class TuningDB:
    """The records of one database file (read once; `put` + `save` merge them into the file)."""

    def __init__(self, path: Path | None, records: dict[str, TuningRecord] | None = None) -> None:
        self.path = path
        self.records: dict[str, TuningRecord] = records or {}
        self.pending: dict[str, TuningRecord] = {}
        self.new_measurements: list[Measurement] = []

    @staticmethod
    def load(path: Path | None) -> TuningDB:
        return TuningDB(path, _read(path) if path is not None else {})

    def get(self, key: str) -> TuningRecord | None:
        return self.records.get(key)

    def put(self, key: str, record: TuningRecord) -> None:
        """Keep `record` unless the key already has a faster one."""
        old = self.records.get(key)
        if old is None or record.time_s < old.time_s:
            self.records[key] = record
            self.pending[key] = record

    def add_measurements(self, rows: Sequence[Measurement]) -> None:
        """Measured candidates (key, params, features, seconds, default's seconds) for `save`."""
        self.new_measurements.extend(rows)

    def measurements(self, cpu: str, target: str) -> list[Measurement]:
        """The measured candidates on `cpu` for `target` in the file (the cost model's data)."""
        return [] if self.path is None else read_measurements(self.path, cpu, target)

    def save(self) -> None:
        """Merge the new records (the faster per key wins) and measurements into the file, in one
        transaction, and re-read it."""
        if self.path is None:
            raise ValueError("tuning database: no file to save to (CINN_PY_TUNING_DB=off or no cache dir)")
        _check_writable_folder(self.path)
        records = {k: r.to_json() for k, r in self.pending.items()}
        legacy = _legacy_next_to(self.path)
        if legacy is not None:  # the JSON database of the default location moves into this one
            for key, rec in _read(legacy).items():
                if key not in records or rec.time_s < records[key]["time_s"]:
                    records[key] = rec.to_json()
        write(self.path, records, self.new_measurements)
        if legacy is not None:
            os.replace(legacy, legacy.with_name(legacy.name + ".migrated"))
        self.pending, self.new_measurements = {}, []
        self.records = _read(self.path)
        _cached_db.cache_clear()


def _legacy_next_to(path: Path) -> Path | None:
    """The JSON database of earlier versions at the default location, when `path` is the
    default SQLite file and the JSON file is still there."""
    if os.environ.get(ENV_VAR) or path.name != FILE_NAME:
        return None
    legacy = path.with_name(LEGACY_FILE_NAME)
    return legacy if legacy.is_file() else None


def _read(path: Path) -> dict[str, TuningRecord]:
    """The validated records of `path` ({} when missing, untrusted, not a regular file, or not a
    database this version reads, each after one warning); TuningDatabaseError when a record
    holds an unusable value."""
    try:
        check_private_dir(path.parent)
        st = os.stat(path)  # follows a symbolic link: what it points to must pass the checks
        if not stat.S_ISREG(st.st_mode):
            raise UntrustedCacheError(f"{path} is {file_kind(st.st_mode)}, not a regular file")
        _check_owner(path, st)
        raw = read_records(path)
    except FileNotFoundError:
        legacy = _legacy_next_to(path)
        return _read(legacy) if legacy is not None else {}
    except UntrustedCacheError as err:
        _warn_once(f"tuning database {path}: not used ({err}); using default parameters")
        return {}
    except OSError as err:
        warnings.warn(f"tuning database {path}: cannot read it ({err}); using default parameters",
                      stacklevel=3)
        return {}
    if raw is None:
        return {}
    for key, record in raw.items():
        check_record(path, key, record)
    return {k: TuningRecord.from_json(v) for k, v in raw.items()}


def _check_owner(path: Path, st: os.stat_result) -> None:
    """The kernel cache's rule (`cinn_py.runtime.cache`): the database steers code generation,
    so it is read only from a folder owned by this user that nobody else may write (checked by
    the caller), and only when the file itself is this user's and not writable by others."""
    if st.st_uid != os.geteuid():
        raise UntrustedCacheError(f"{path} is owned by uid {st.st_uid}, expected this user (uid "
                                  f"{os.geteuid()})")
    if st.st_mode & 0o022:
        raise UntrustedCacheError(f"{path} is group- or world-writable (mode {stat.S_IMODE(st.st_mode):04o})")


_warned: set[str] = set()


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        warnings.warn(message, RuntimeWarning, stacklevel=4)


def _check_writable_folder(path: Path) -> None:
    """Create the folder (0700) if missing; refuse one the database would not be read from, and
    a path that holds something other than a file (a directory, FIFO, device)."""
    if path.exists() and not path.is_file():
        mode = path.stat().st_mode
        raise TuningDatabaseError(f"tuning database {path}: refusing to write it: it is {file_kind(mode)}, "
                                  f"not a regular file (choose another CINN_PY_TUNING_DB)")
    try:
        make_private_dir(path.parent)
        check_private_dir(path.parent)
    except UntrustedCacheError as err:
        raise TuningDatabaseError(f"tuning database {path}: refusing to write it ({err}); the database would "
                                  "not "
                                  f"be read from there (choose another CINN_PY_TUNING_DB)") from None


@functools.lru_cache(maxsize=4)
def _cached_db(path: str, stamp: tuple[int, ...]) -> TuningDB:
    return TuningDB.load(Path(path))


def current_db() -> TuningDB | None:
    """The database `auto_schedule` reads (re-read when the file, its mode or its folder's mode
    changes), or None."""
    path = db_path()
    if path is None:
        return None
    try:
        st, folder = path.stat(), path.parent.stat()
    except FileNotFoundError:
        legacy = _legacy_next_to(path)
        if legacy is None:
            return None
        path, st, folder = legacy, legacy.stat(), legacy.parent.stat()
    except OSError:
        return None
    wal = _stat_or_none(Path(f"{path}-wal"))  # a write in WAL mode may leave the main file as it was
    return _cached_db(str(path), (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_mode, folder.st_mode,
                                  folder.st_uid, *wal))


def _stat_or_none(path: Path) -> tuple[int, ...]:
    try:
        st = path.stat()
    except OSError:
        return ()
    return (st.st_mtime_ns, st.st_size)


def lookup_matmul(info: MatmulInfo, target: str = "x86") -> MatmulParams | None:
    db = current_db()
    rec = db.get(matmul_key(info, target)) if db is not None else None
    if rec is None:
        return None
    try:
        return MatmulParams(**rec.params)
    except TypeError:
        return None  # a record of an older parameter set


def lookup_group(func: LoweredFunc, target: str = "x86") -> dict[str, Any] | None:
    """The `ScheduleConfig` knobs the database holds for this group (validated when read)."""
    db = current_db()
    rec = db.get(group_key(func, target)) if db is not None else None
    return None if rec is None else {k: v for k, v in rec.params.items() if k in GROUP_PARAMS}


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def keys(records: Iterable[str]) -> list[str]:
    return sorted(records)
