"""Running fuzz cases: in-process, or in a worker subprocess that may crash or hang.

The parent starts `python -m cinn_py.tools.fuzz --worker --start i ...`; the worker prints
`@@BEGIN <index>` before and `@@RESULT <json>` after each case. When the worker exits without
a result for the case it began (a segfault in generated code, an abort), the case is a `crash`
failure carrying the tail of the worker's stderr (where `faulthandler` wrote the Python stack);
when no result arrives within the per-case timeout the worker is killed and the case is a
`hang` failure. Either way a fresh worker continues with the next case.

Testing hook: `CINN_PY_FUZZ_INJECT="crash:3,hang:5"` makes the worker segfault before case 3
and sleep forever before case 5 (tests of the isolation itself use it).
"""

from __future__ import annotations

import collections
import dataclasses
import faulthandler
import json
import os
import selectors
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

BEGIN, RESULT = "@@BEGIN ", "@@RESULT "
CheckCase = Callable[[int, int, Any], Any]


@dataclass
class Summary:
    """Counts of outcomes; rejections grouped by (stage, error type and message start)."""

    total: int = 0
    status: collections.Counter[str] = field(default_factory=collections.Counter)
    rejections: collections.Counter[str] = field(default_factory=collections.Counter)
    steps: collections.Counter[str] = field(default_factory=collections.Counter)
    failures: list[dict[str, Any]] = field(default_factory=list)
    expected: int = 0
    """Cases the run will check (0: unknown): progress lines say how far along it is."""
    started: float = field(default_factory=time.monotonic)
    last_progress: float = field(default_factory=time.monotonic)

    def add(self, result: dict[str, Any], echo: bool = True) -> None:
        self.total += 1
        self.status[result["status"]] += 1
        for kind, outcome in result.get("steps", []):
            self.steps[f"{kind}: {outcome}"] += 1
        if result["status"] == "rejected":
            self.rejections[f"{result['stage']}: {result['error'][:120]}"] += 1
        elif result["status"] == "fail":
            self.failures.append(result)
            if echo:
                print(result.get("reproducer") or json.dumps(result, indent=1), flush=True)
        if echo:
            self._progress()

    def _progress(self) -> None:
        """A line on stderr every 5 s (and at the end): a campaign of thousands of cases runs for
        minutes, and a user should see that it moves, its outcomes so far and the time left."""
        now = time.monotonic()
        if now - self.last_progress < 5.0 and self.total != self.expected:
            return
        self.last_progress = now
        elapsed = now - self.started
        done = f"{self.total}/{self.expected}" if self.expected else str(self.total)
        left = ""
        if self.expected > self.total:
            left = f", ~{elapsed / self.total * (self.expected - self.total):.0f} s left"
        outcomes = ", ".join(f"{k} {v}" for k, v in sorted(self.status.items()))
        print(f"[fuzz] {done} cases ({elapsed:.0f} s{left}): {outcomes}", file=sys.stderr, flush=True)

    def format(self, seconds: float) -> str:
        lines = [f"fuzz: {self.total} cases in {seconds:.1f}s: " +
                 ", ".join(f"{k} {v}" for k, v in sorted(self.status.items()))]
        if self.rejections:
            lines.append("rejected (stage: error), most common first:")
            lines += [f"  {n:6d}  {sig}" for sig, n in self.rejections.most_common(15)]
        if self.steps:
            lines.append("schedule steps:")
            lines += [f"  {n:6d}  {sig}" for sig, n in sorted(self.steps.items())]
        if self.failures:
            lines.append(f"FAILURES ({len(self.failures)}):")
            lines += [f"  case {f['index']}: {f['stage']}: {f.get('error') or f.get('detail', '')[:200]}"
                      for f in self.failures]
        return "\n".join(lines)


def _as_dict(result: Any) -> dict[str, Any]:
    if isinstance(result, Mapping):
        return dict(result)
    return dataclasses.asdict(result)


def run_in_process(seed: int, indices: Iterable[int], opts: Any, check_case: CheckCase, summary: Summary,
                   echo: bool = True) -> None:
    """Run cases in this process (no crash isolation; used by tests and `--in-process`)."""
    for index in indices:
        summary.add(_as_dict(check_case(seed, index, opts)), echo=echo)


def worker_loop(seed: int, start: int, end: int, opts: Any, check_case: CheckCase) -> int:
    """The worker side: run cases `start..end-1`, reporting each on stdout."""
    faulthandler.enable(all_threads=True)
    out = sys.stdout
    inject = _injected_faults()
    for index in range(start, end):
        print(f"{BEGIN}{index}", file=out, flush=True)
        if inject.get(index) == "crash":
            faulthandler._sigsegv()  # type: ignore[attr-defined]  # noqa: SLF001 - a real segfault, as generated code would raise
        if inject.get(index) == "hang":
            time.sleep(1e9)
        result = _as_dict(check_case(seed, index, opts))
        print(RESULT + json.dumps(result), file=out, flush=True)
    return 0


def _injected_faults() -> dict[int, str]:
    spec = os.environ.get("CINN_PY_FUZZ_INJECT", "")
    faults = {}
    for item in filter(None, (x.strip() for x in spec.split(","))):
        kind, _, index = item.partition(":")
        if kind in ("crash", "hang") and index.isdigit():
            faults[int(index)] = kind
    return faults


def run_with_workers(seed: int, indices: range, opts: Any, timeout: float, worker_args: list[str],
                     summary: Summary) -> None:
    """Run cases in worker subprocesses, restarting a worker after a crash or hang."""
    next_index = indices.start
    while next_index < indices.stop:
        next_index = _one_worker(seed, next_index, indices.stop, timeout, worker_args, summary)


def _worker_command(start: int, stop: int, worker_args: list[str]) -> list[str]:
    return [sys.executable, "-m", "cinn_py.tools.fuzz", *worker_args, "--worker", "--start", str(start),
            "--examples", str(stop - start)]


def _one_worker(seed: int, start: int, stop: int, timeout: float, worker_args: list[str],
                summary: Summary) -> int:
    """Run one worker until it finishes, crashes or hangs; returns the next index to run."""
    with tempfile.TemporaryFile(mode="w+") as err:
        proc = subprocess.Popen(_worker_command(start, stop, worker_args), stdout=subprocess.PIPE, stderr=err,
                                text=True, env={**os.environ, "PYTHONFAULTHANDLER": "1"})
        assert proc.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        current: int | None = None
        deadline = time.monotonic() + timeout
        try:
            while True:
                if not sel.select(timeout=max(deadline - time.monotonic(), 0.0)):
                    proc.kill()   # our own worker, by its handle
                    proc.wait()
                    index = current if current is not None else start
                    summary.add(_special(index, "hang", f"no result within {timeout:.0f}s", seed,
                                         worker_args))
                    return index + 1
                line = proc.stdout.readline()
                if not line:
                    code = proc.wait()
                    if current is None:
                        return stop
                    err.seek(0)
                    tail = err.read()[-3000:]
                    summary.add(_special(current, "crash", f"worker exited with status {code}\n{tail}", seed,
                                         worker_args))
                    return current + 1
                if line.startswith(BEGIN):
                    current = int(line[len(BEGIN):])
                    deadline = time.monotonic() + timeout
                elif line.startswith(RESULT):
                    result = json.loads(line[len(RESULT):])
                    summary.add(result)
                    current = None
                    start = result["index"] + 1
        finally:
            sel.close()
            if proc.poll() is None:
                proc.kill()
                proc.wait()


# the options that choose what a case is and how it is checked (not which cases a run covers)
_RUN_ONLY = {"--seed": 1, "--start": 1, "--examples": 1, "--timeout": 1, "--worker": 0, "--in-process": 0}


def mode_args(worker_args: list[str]) -> list[str]:
    """`worker_args` less the options that pick the run's cases: what a one-case command repeats
    so that it describes and reproduces the same case (a `--net` case is a NetBuilder program)."""
    kept: list[str] = []
    skip = 0
    for arg in worker_args:
        if skip:
            skip -= 1
        elif arg in _RUN_ONLY:
            skip = _RUN_ONLY[arg]
        else:
            kept.append(arg)
    return kept


def _special(index: int, kind: str, detail: str, seed: int, worker_args: list[str]) -> dict[str, Any]:
    """A crash/hang result with a reproducer described by a separate, non-executing process."""
    mode = mode_args(worker_args)
    describe = [sys.executable, "-m", "cinn_py.tools.fuzz", *mode, "--seed", str(seed), "--case", str(index),
                "--describe"]
    try:
        text = subprocess.run(describe, capture_output=True, text=True, timeout=120).stdout
    except subprocess.TimeoutExpired:
        text = "(describing the case timed out too)"
    flags = "".join(f" {a}" for a in mode)
    reproducer = "\n".join([f"=== FAIL case {index} (seed {seed}) at {kind}", detail.rstrip(),
                            f"--- reproduce: python -m cinn_py.tools.fuzz --seed {seed} --case "
                            f"{index}{flags} --in-process",
                            text])
    return {"index": index, "status": "fail", "stage": kind, "error": kind, "detail": detail, "steps": [],
            "reproducer": reproducer}
