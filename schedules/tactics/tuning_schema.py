"""What a tuning database record may hold: the type and range of every parameter and field.

A database file is data from disk (hand-edited, written by another version, or planted), and its
parameters drive the tactics directly: `{"lanes": 0}` divided by zero and `{"mr": "8"}` raised a
TypeError deep inside the matmul tactic. Every record is checked here when the file is read, and
a bad one raises `TuningDatabaseError` naming the file, the record's key, the field and the value.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from cinn_py.diagnostics import TuningDatabaseError


@dataclass(frozen=True)
class Rule:
    """One parameter's rule: `check(value)` is True when the value is usable; `says` words it."""

    check: Callable[[Any], bool]
    says: str


def _int_in(lo: int, hi: int) -> Rule:
    return Rule(lambda v: _is_int(v) and lo <= v <= hi, f"an integer in [{lo}, {hi}]")


def _pow2_in(lo: int, hi: int) -> Rule:
    return Rule(lambda v: _is_int(v) and lo <= v <= hi and v & (v - 1) == 0,
                f"a power of two in [{lo}, {hi}]")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)  # JSON true is not a tile size


BOOL = Rule(lambda v: isinstance(v, bool), "true or false")

PARAMS: dict[str, Rule] = {
    # matmul (schedules.tactics.matmul.MatmulParams)
    "mr": _int_in(1, 64),
    "nv": _int_in(1, 16),
    "lanes": _pow2_in(1, 64),
    "kc": _int_in(1, 1 << 16),
    "pack_b": BOOL,
    "parallel": Rule(lambda v: v in ("outer", "none"), 'one of "outer", "none"'),
    # other groups (the x86 knobs of schedules.tactics.config.ScheduleConfig)
    "vector_width_bits": _pow2_in(32, 1024),
    "min_parallel_work": _int_in(0, 1 << 62),
    "streaming_store_bytes": _int_in(0, 1 << 62),
    "reduce_vectors": _int_in(0, 64),
    "fuse_reduce_producers": BOOL,
    "chunk_vectors": _int_in(1, 1 << 20),
    "transpose_block": _pow2_in(1, 1 << 16),
    "unroll_tiles": BOOL,
    "column_tasks": _int_in(1, 1024),
    "rows_per_pass": _int_in(1, 64),
}
"""Every parameter a tactic reads from a record. A record may carry names not listed here (a
parameter set of another version): the tactics ignore those."""

GROUP_PARAMS = ("vector_width_bits", "min_parallel_work", "streaming_store_bytes", "reduce_vectors",
                "fuse_reduce_producers", "chunk_vectors", "transpose_block", "unroll_tiles", "column_tasks",
                "rows_per_pass")
"""The `ScheduleConfig` fields a group record may set (never `bucket` or `tile`)."""


def _time(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            and value >= 0)


def check_record(path: Path, key: str, data: Any) -> None:
    """Raise TuningDatabaseError unless `data` is a well-formed record for `key`."""
    if not isinstance(data, dict):
        _bad(path, key, "the record", data, "a JSON object")
    params = data.get("params")
    if not isinstance(params, dict):
        _bad(path, key, "params", params, "a JSON object of parameters")
    for name, value in params.items():
        rule = PARAMS.get(name)
        if rule is not None and not rule.check(value):
            _bad(path, key, f"params.{name}", value, rule.says)
    if not _time(data.get("time_s")):
        _bad(path, key, "time_s", data.get("time_s"), "a finite number of seconds >= 0")
    default = data.get("default_time_s")
    if default is not None and not _time(default):
        _bad(path, key, "default_time_s", default, "null or a finite number of seconds >= 0")
    if not _is_int(data.get("trials")) or data["trials"] < 0:
        _bad(path, key, "trials", data.get("trials"), "an integer >= 0")


def _bad(path: Path, key: str, field: str, value: Any, expected: str) -> NoReturn:
    raise TuningDatabaseError(
        f"tuning database {path}: record {key!r}: {field} is {value!r} ({type(value).__name__}), expected "
        f"{expected}; "
        f"fix or delete the record (or set CINN_PY_TUNING_DB=off)")
