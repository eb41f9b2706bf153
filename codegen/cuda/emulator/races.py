"""Data race detection for emulated launches: the same source under ThreadSanitizer.

`check_races` runs one launch in the `-fsanitize=thread` build of the kernel (a separate process:
TSan must own the process from its start). Every emulated GPU thread is a TSan fiber, switches
between fibers carry no happens-before edge, and the only edges are the ones CUDA guarantees: a
`__syncthreads()` orders every access before it (in the block) before every access after it, a
warp collective orders the accesses of the lanes taking part, atomics are atomic. TSan's shadow
memory then reports any pair of accesses to one address from two threads, at least one a write,
with no barrier between them: a missing `__syncthreads`, a reduction tree read too early, a
partial written to scratch before the previous reader is done. A report on **shared memory**
becomes `DataRaceError`, naming the shared buffer and the kernel source lines of both accesses.

Races on **global memory** between threads of one block are errors too, except the pattern
generated kernels use on purpose: every thread stores a block-uniform value (`B[blockIdx.x] = 0`
before a block reduce, every thread writing the reduced value) and reads back that element, the
one it wrote itself, which TSan cannot tell from a real race without the values. So a global
report is an error unless both accesses are writes (same-value stores, as `gpu_sync` leaves them
too) or the two source lines index the buffer by one same expression (each thread reading the
element it wrote; another thread's write of it is a same-value write). An access inside a runtime
helper is not judged (its scratch is shared memory). Blocks are ordered one after the other (they
share one copy of the shared memory), so races between blocks are not seen; nor are races between
launches: `gpu_sync.check_races` proves the cross-block case at compile time.
"""

from __future__ import annotations

import os
import re
import struct
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cinn_py.diagnostics import CinnError
from codegen.cuda.emulator.compile import race_checker
from codegen.cuda.generate import GeneratedCode

TIMEOUT_S = 300
_EXIT_RACE = 66
_REPORT = "WARNING: ThreadSanitizer: data race"
_ACCESS_RE = re.compile(r"^\s*(?:Previous )?(?P<kind>[Ww]rite|[Rr]ead|[Aa]tomic write|[Aa]tomic read) of "
                        r"size "
                        r"(?P<size>\d+) at (?P<addr>0x[0-9a-f]+)")
_FRAME_RE = re.compile(r"^\s*#\d+ .*?(?P<file>kernel\.cu|cinn_cuda_runtime\.cuh):(?P<line>\d+)")
_BUFFER_RE = re.compile(r"^CINN_EMU_BUFFER (?P<index>\d+) (?P<addr>0x[0-9a-f]+) (?P<size>\d+)$", re.M)


class DataRaceError(CinnError):
    """Two threads of an emulated launch accessed one address without synchronisation."""


@dataclass(frozen=True)
class Access:
    kind: str
    address: int
    size: int
    where: str
    """`kernel.cu:LINE` or `cinn_cuda_runtime.cuh:LINE` of the innermost frame in either ('' if none)."""
    caller: str = ""
    """`kernel.cu:LINE` of the innermost kernel-source frame (where a runtime helper was called)."""


def check_races(code: GeneratedCode, func_name: str, arguments: Sequence[tuple[str, int]],
                dims: Sequence[int], shared: int, arrays: Mapping[int, np.ndarray]) -> None:
    """Run the launch under TSan; raise DataRaceError (or EmulationError) on a finding."""
    from codegen.cuda.emulator.kernel import EmulationError  # noqa: PLC0415 - kernel imports this module

    exe = race_checker(code.source, code.kernel_name)
    with tempfile.TemporaryDirectory(prefix="cinn-emu-race-") as tmp:
        launch_file = Path(tmp) / "launch.bin"
        launch_file.write_bytes(_encode(arguments, dims, shared, arrays))
        env = {**os.environ, "TSAN_OPTIONS": f"halt_on_error=0 exitcode={_EXIT_RACE} history_size=4"}
        done = subprocess.run([str(exe), str(launch_file)], capture_output=True, text=True, env=env,
                              timeout=TIMEOUT_S, check=False)
    spans = _buffer_names(code, done.stderr)
    for report in done.stderr.split(_REPORT)[1:]:
        accesses = parse_accesses(report)
        if accesses and _is_error(code, accesses, spans):
            raise DataRaceError(describe_race(code, func_name, _REPORT + report, spans))
    if done.returncode in (0, _EXIT_RACE):
        return  # only the block-uniform global-memory pattern: see the module docstring
    tail = "\n".join(done.stderr.strip().splitlines()[-20:])
    message = next((line.split(":", 1)[1].strip() for line in done.stderr.splitlines()
                    if line.startswith("CINN_EMU_ERROR:")), tail)
    raise EmulationError(f"kernel '{func_name}' (CUDA emulator, race check, exit {done.returncode}): "
                         f"{message}")


def _is_error(code: GeneratedCode, accesses: list[Access], spans: list[tuple[int, int, str]]) -> bool:
    """Whether a TSan report is a race (shared memory), not the block-uniform global pattern."""
    name = next((n for start, end, n in spans if start <= accesses[0].address < end), None)
    if name is None:
        return True  # shared memory
    if len(accesses) < 2 or all("write" in a.kind for a in accesses):
        return False  # same-value stores from every thread
    if any(not a.where.startswith("kernel.cu:") for a in accesses):
        return False  # inside a runtime helper
    lines = code.source.split("\n")
    indices = [_indices_of(name, lines[int(a.where.partition(":")[2]) - 1]) for a in accesses]
    return all(indices) and not set(indices[0]) & set(indices[1])


def _indices_of(name: str, line: str) -> list[str]:
    """The index expressions of every `name[...]` on a source line (brackets balanced)."""
    found: list[str] = []
    for m in re.finditer(rf"\b{re.escape(name)}\[", line):
        depth, k = 1, m.end()
        while k < len(line) and depth:
            depth += {"[": 1, "]": -1}.get(line[k], 0)
            k += 1
        found.append(line[m.end():k - 1].replace(" ", ""))
    return found


def _encode(arguments: Sequence[tuple[str, int]], dims: Sequence[int], shared: int,
            arrays: Mapping[int, np.ndarray]) -> bytes:
    parts = [struct.pack("<6IQI", *dims, shared, len(arguments))]
    for kind, value in arguments:
        if kind == "P":
            data = np.ascontiguousarray(arrays[value]).tobytes()
            parts.append(struct.pack("<BQ", 0, len(data)) + data)
        elif kind == "q":
            parts.append(struct.pack("<Bq", 1, value))
        else:
            parts.append(struct.pack("<Bi", 2, value))
    return b"".join(parts)


def _parameter_names(code: GeneratedCode) -> list[str]:
    names = [a.tensor.name if a.tensor is not None else (a.var.name if a.var is not None else "?")
             for a in code.func.args]
    return names + [t.name for t in code.temp_spaces]


def _buffer_names(code: GeneratedCode, log: str) -> list[tuple[int, int, str]]:
    """(start, end, parameter name) of every buffer the race checker allocated."""
    names = _parameter_names(code)
    spans = []
    for m in _BUFFER_RE.finditer(log):
        index = int(m.group("index"))
        start = int(m.group("addr"), 16)
        spans.append((start, start + int(m.group("size")),
                      names[index] if index < len(names) else f"#{index}"))
    return spans


def parse_accesses(report: str) -> list[Access]:
    """The accesses of the first TSan data race report, with their innermost kernel frames."""
    body = report.split(_REPORT, 1)[-1]
    accesses: list[Access] = []
    current: dict[str, object] | None = None
    for line in body.splitlines():
        m = _ACCESS_RE.match(line)
        if m:
            if current is not None:
                accesses.append(Access(**current))  # type: ignore[arg-type]
            current = {"kind": m.group("kind").lower(), "address": int(m.group("addr"), 16),
                       "size": int(m.group("size")), "where": "", "caller": ""}
            continue
        frame = _FRAME_RE.match(line)
        if frame and current is not None:
            at = f"{frame.group('file')}:{frame.group('line')}"
            current["where"] = current["where"] or at
            if frame.group("file") == "kernel.cu" and not current["caller"]:
                current["caller"] = at
        if line.startswith("SUMMARY:"):
            break
    if current is not None:
        accesses.append(Access(**current))  # type: ignore[arg-type]
    return accesses[:2]


_SHARED_DECL_RE = re.compile(r"__shared__ [\w ]+?\b(\w+)\[|(\w+) = reinterpret_cast<[\w "
                             r"]+\*>\(&cinn_dyn_shared\[")


def _location(address: int, spans: list[tuple[int, int, str]], code: GeneratedCode,
              lines: Sequence[str]) -> str:
    for start, end, name in spans:
        if start <= address < end:
            return f"global buffer '{name}' at byte offset {address - start}"
    shared = {a or b for a, b in _SHARED_DECL_RE.findall(code.source)}
    named = sorted(n for n in shared if any(re.search(rf"\b{n}\b", line) for line in lines))
    what = f"shared buffer '{named[0]}'" if len(named) == 1 else "shared memory"
    return f"{what} (address 0x{address:x})"


def _source_line(code: GeneratedCode, where: str) -> str:
    file, _, line = where.partition(":")
    if file != "kernel.cu" or not line:
        return where or "an unknown line"
    lines = code.source.split("\n")
    k = int(line)
    return f"line {k}: {lines[k - 1].strip()}" if 0 < k <= len(lines) else where


def describe_race(code: GeneratedCode, func_name: str, report: str, spans: list[tuple[int, int, str]]) -> str:
    accesses = parse_accesses(report)
    if not accesses:
        return f"kernel '{func_name}' (CUDA emulator, race check): data race\n{report[-3000:]}"
    first = accesses[0]
    lines = [_source_line(code, a.where) if a.where == a.caller or not a.caller
             else f"{a.where} (in a runtime helper called at {_source_line(code, a.caller)})" for a
             in accesses]
    where = _location(first.address, spans, code, lines)
    text = [f"kernel '{func_name}' (CUDA emulator, race check): data race on {where}: two threads access it "
            "with no __syncthreads() (or warp collective) between them"]
    for access, line in zip(accesses, lines):
        text.append(f"  {access.kind} of {access.size} bytes at {line}")
    return "\n".join(text)
