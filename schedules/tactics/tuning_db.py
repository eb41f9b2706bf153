"""The tuning database: the best measured tactic parameters per (CPU, group structure, shape bucket).

`cinn_py.tune` (docs/auto_schedule.md, "Tuning") writes it; `auto_schedule(..., target="x86")`
reads it, so `schedule="auto"` uses tuned parameters wherever a record matches and the tactics'
defaults elsewhere.

Where: `$CINN_PY_TUNING_DB` (a file path; `off` disables the database), else
`<cache dir>/tuning_db.json` next to the kernel cache (`$CINN_PY_CACHE_DIR`, default
`~/.cache/cinn-py`); no file when the disk cache is disabled.

Trust (the kernel cache's rule): the file is read only when its folder is owned by this user and
writable by nobody else and the file is this user's and not group/world-writable (else one
RuntimeWarning, and the defaults); `save` refuses such a folder. A FIFO, device or directory as
the file is never opened for a blocking read (`cinn_py.runtime.files`): a warning and the
defaults; files over 64 MiB are refused. Every record is validated when
read (`tuning_schema`): a value of the wrong type or range raises `TuningDatabaseError` naming the
file, the key, the field and the value.

Format (JSON, versioned; a file of another version or that does not parse is ignored with one
warning and replaced on the next write):

    {"version": 1,
     "records": {"<cpu>|<target>|<structure>|<bucket>": {
         "params": {...}, "time_s": 0.0071, "default_time_s": 0.0093, "trials": 24,
         "structure": "...", "bucket": "...", "cpu": "...", "target": "x86", "tuned_at": "..."}}}

Keys: `cpu` is LLVM's host CPU name plus whether AVX-512 is there (`znver5+avx512`);
`structure` says what kind of group it is (`matmul_NN_epi2`, `group_n2_r1_c`); `bucket` rounds
each size up to a power of two (`m1024_n1024_k1024`; a symbolic size is `S`), so one record
serves the shapes a tuned schedule is good for. Writes are atomic (temporary file in the same
folder + `os.replace`), and merge with records other processes wrote meanwhile.
"""

from __future__ import annotations

import functools
import json
import os
import stat
import tempfile
import time
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cinn_py.ir import Expr, LoweredFunc
from cinn_py.diagnostics import TuningDatabaseError
from cinn_py.runtime.cache import UntrustedCacheError, cache_dir, check_private_dir, make_private_dir
from cinn_py.runtime.files import SpecialFileError, file_kind, read_regular_file
from schedules.analysis.regions import const_value
from schedules.tactics.config import next_pow2
from schedules.tactics.group import analyze_group
from schedules.tactics.matmul import MatmulInfo, MatmulParams
from schedules.tactics.tuning_schema import GROUP_PARAMS, check_record

__all__ = [
    "DB_VERSION", "TuningDB", "TuningRecord", "db_path", "group_key", "host_cpu", "lookup_group",
    "lookup_matmul", "matmul_key",
]

DB_VERSION = 1
ENV_VAR = "CINN_PY_TUNING_DB"
FILE_NAME = "tuning_db.json"
MAX_DB_BYTES = 64 << 20
"""The largest database read (a record is ~300 bytes: 200,000 records); a link to /dev/zero or a
huge file is refused, not read into memory."""


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
    """The records of one database file (read once; `put` + `save` write atomically)."""

    def __init__(self, path: Path | None, records: dict[str, TuningRecord] | None = None) -> None:
        self.path = path
        self.records: dict[str, TuningRecord] = records or {}

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

    def save(self) -> None:
        """Merge with what is on disk now (the faster record per key wins) and replace the file."""
        if self.path is None:
            raise ValueError("tuning database: no file to save to (CINN_PY_TUNING_DB=off or no cache dir)")
        _check_writable_folder(self.path)
        merged = TuningDB(self.path, _read(self.path))
        for key, rec in self.records.items():
            merged.put(key, rec)
        self.records = merged.records
        _write_atomic(self.path, {"version": DB_VERSION,
                                  "records": {k: r.to_json() for k, r in sorted(self.records.items())}})
        _cached_db.cache_clear()


def _read(path: Path) -> dict[str, TuningRecord]:
    """The records of `path` ({} when missing, untrusted, not a regular file, of another version
    or not JSON, each after one warning); TuningDatabaseError when a record holds an unusable
    value."""
    try:
        check_private_dir(path.parent)
        raw, st = read_regular_file(path, MAX_DB_BYTES, follow_symlinks=True)  # a FIFO never blocks
        _check_owner(path, st)
        text = raw.decode("utf-8")
    except FileNotFoundError:
        return {}
    except (UntrustedCacheError, SpecialFileError) as err:
        _warn_once(f"tuning database {path}: not used ({err}); using default parameters")
        return {}
    except (OSError, UnicodeDecodeError) as err:
        warnings.warn(f"tuning database {path}: cannot read it ({err}); using default parameters",
                      stacklevel=3)
        return {}
    try:
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("version") != DB_VERSION:
            raise ValueError(f"version {data.get('version') if isinstance(data, dict) else None!r}, "
                             f"expected {DB_VERSION}")
        records = data["records"]
        if not isinstance(records, dict):
            raise ValueError(f"'records' is a {type(records).__name__}, expected an object")
    except (ValueError, KeyError, TypeError) as err:
        warnings.warn(f"tuning database {path}: ignored ({err}); it is rewritten by the next tune",
                      stacklevel=3)
        return {}
    for key, record in records.items():
        check_record(path, key, record)
    return {k: TuningRecord.from_json(v) for k, v in records.items()}


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


def _write_atomic(path: Path, data: dict[str, Any]) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(data, fh, indent=1)
            fh.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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
    except OSError:
        return None
    return _cached_db(str(path), (st.st_mtime_ns, st.st_ctime_ns, st.st_size, folder.st_mode, folder.st_uid))


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
