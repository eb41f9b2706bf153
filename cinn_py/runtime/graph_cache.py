"""Compiled programs on disk: a warm start of a program compiled before skips every step up to
`load` (decompose, graph passes, fusion, lowering, the automatic scheduler, the target passes).

`compile_program` stores, per (program, target, schedule, fast_math, bounds checks, project
sources), the fusion plan, each group's lowered function and each group's function as `load`
builds it (scheduled, target passes run). A later process with the same key unpickles them and
only builds the kernels, whose object code the x86 disk cache already holds (keyed by the final
function's fingerprint, stored with it so that the kernels are not printed again), and links the
native graph: BERT's training graphs warm-start in a fraction of a second
instead of tens of seconds.

The key is a SHA-256 over `program_fingerprint` (every op's type, operands, result type and every
attribute at full precision, `_`-prefixed ones included: the printed listing rounds floats to 8
digits and hides internal attributes, either of which would let two programs share an entry), the
target, the options, the tuning database's file stamp and `project_digest()` (any change to a project source
misses). Entries live
in the disk cache's `graph` namespace (`cinn_py.runtime.cache`: owner-only directory, HMAC over
every entry): a pickle is code, trusted exactly as far as the object code next to it. An entry
that does not unpickle to what was stored is discarded and the program compiled again.
`CINN_PY_DISABLE_DISK_CACHE=1` turns this cache off with the others.
"""

from __future__ import annotations

import hashlib
import os
import pickle
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cinn_py.frontend.fusion import FusionPlan
from cinn_py.frontend.program import Program
from cinn_py.ir import LoweredFunc
from cinn_py.runtime.cache import (
    CompileCache, cache_dir, fingerprint_key, func_fingerprint, project_digest, remember_fingerprint,
)

CACHE = CompileCache("graph")
FORMAT = 2


class PickledFuncs(Sequence[LoweredFunc]):
    """Functions kept pickled until first read: a warm start needs the groups' final functions,
    not their lowered ones (kept for inspection: `CompiledProgram.funcs`), whose unpickling was
    ~0.2 s of CPU of BERT's training graphs' warm start."""

    def __init__(self, blob: bytes) -> None:
        self._blob = blob
        self._funcs: tuple[LoweredFunc, ...] | None = None

    def _unpickled(self) -> tuple[LoweredFunc, ...]:
        if self._funcs is None:
            funcs = pickle.loads(self._blob)
            if not isinstance(funcs, tuple) or not all(isinstance(f, LoweredFunc) for f in funcs):
                raise TypeError("compiled-graph cache: the lowered functions unpickled to "
                                f"{type(funcs).__name__}, expected a tuple of LoweredFunc")
            self._funcs = funcs
        return self._funcs

    def __getitem__(self, index: Any) -> Any:
        return self._unpickled()[index]

    def __len__(self) -> int:
        return len(self._unpickled())

    def __reduce__(self) -> tuple[Any, ...]:
        return (PickledFuncs, (self._blob,))


@dataclass(frozen=True)
class CachedGraph:
    """What a warm start needs: the fusion plan, each group's lowered and final function."""

    fusion: FusionPlan
    lowered: Sequence[LoweredFunc]
    final: tuple[LoweredFunc, ...]
    fingerprints: tuple[str, ...] = ()
    """`func_fingerprint` of each final function: a warm start gets the kernels' disk cache keys
    without printing every kernel again."""


def _attr_text(value: Any) -> str:
    """An attribute exactly: floats as their repr (round-trips), arrays by content."""
    if isinstance(value, np.ndarray):
        digest = hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()
        return f"array({value.dtype},{value.shape},{digest})"
    if isinstance(value, (tuple, list)):
        return "[" + ",".join(_attr_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return ("{" + ",".join(f"{k!r}:{_attr_text(v)}" for k,
                               v in sorted(value.items(), key=lambda kv: repr(kv[0]))) + "}")
    return f"{type(value).__name__}:{value!r}"


def program_fingerprint(program: Program) -> str:
    """A text that two programs share only when they compute the same thing the same way."""
    lines = [f"inputs {[(v.name, v.type_str()) for v in program.inputs]}",
             f"outputs {[(v.name, v.type_str()) for v in program.outputs]}"]
    for op in program.ops:
        attrs = ",".join(f"{k}={_attr_text(v)}" for k, v in sorted(op.attrs.items()))
        results = [(v.name, v.type_str()) for v in op.outputs]
        lines.append(f"{op.type}({[v.name for v in op.inputs]}; {attrs}) -> {results}")
    return "\n".join(lines)


def tuning_stamp() -> str:
    """The tuning database the automatic scheduler reads (`schedules.tactics.tuning_db`: the file
    `$CINN_PY_TUNING_DB`, `off`, or `<cache dir>/tuning.sqlite`) and its size and mtime: a
    `cinn-py tune` run changes the schedules, so it must miss this cache."""
    env = os.environ.get("CINN_PY_TUNING_DB", "")
    if env.lower() == "off":
        return "off"
    root = cache_dir()
    path = Path(env) if env else (None if root is None else root / "tuning.sqlite")
    if path is None:
        return "none"
    parts = [str(path)]
    # the SQLite database's writes land in its -wal file first; the JSON file of earlier versions
    # is read while the default SQLite file does not exist yet
    for file in (path, Path(f"{path}-wal"), *(() if env else (path.with_name("tuning_db.json"),))):
        try:
            st = file.stat()
        except OSError:
            parts.append("absent")
            continue
        parts.append(f"{st.st_size}:{st.st_mtime_ns}")
    return ":".join(parts)


def graph_key(program: Program, target: str, schedule: str | None, fast_math: bool, checked: bool) -> str:
    return fingerprint_key(format=FORMAT,
                           program=hashlib.sha256(program_fingerprint(program).encode()).hexdigest(),
                           target=target, schedule=schedule, fast_math=bool(fast_math), checked=bool(checked),
                           tuning=tuning_stamp(), sources=project_digest())


def load(key: str) -> CachedGraph | None:
    """The entry stored under `key`, or None (missing, disabled, or not a CachedGraph: discarded)."""
    hit = CACHE.get_memory(key)
    if isinstance(hit, CachedGraph):
        return hit
    entry = CACHE.load(key)
    if entry is None:
        return None
    try:
        value = pickle.loads(entry[1])
    except Exception:  # noqa: BLE001 (a stale format or an unpicklable class: compile again)
        value = None
    if not isinstance(value, CachedGraph) or len(value.fingerprints) != len(value.final):
        CACHE.discard(key)
        return None
    for func, fingerprint in zip(value.final, value.fingerprints):
        remember_fingerprint(func, fingerprint)
    CACHE.put_memory(key, value)
    return value


def store(key: str, fusion: FusionPlan, lowered: Sequence[LoweredFunc], final: Sequence[LoweredFunc]) -> None:
    """Keep a compiled program's steps under `key` (in memory, and on disk when enabled)."""
    value = CachedGraph(fusion, tuple(lowered), tuple(final), tuple(func_fingerprint(f) for f in final))
    CACHE.put_memory(key, value)
    try:
        lazy = PickledFuncs(pickle.dumps(tuple(lowered), protocol=pickle.HIGHEST_PROTOCOL))
        blob = pickle.dumps(CachedGraph(fusion, lazy, value.final, value.fingerprints),
                            protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 (something in the plan does not pickle: memory only)
        return
    CACHE.store(key, {"groups": len(final)}, blob)
