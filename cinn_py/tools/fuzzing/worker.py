"""Running fuzz cases: in-process, or in a worker subprocess that may crash or hang.

The parent starts `python -m cinn_py.tools.fuzz --worker --start i ...`; the worker prints
`@@BEGIN <index>` before and `@@RESULT <json>` after each case. When the worker exits without
a result for the case it began (a segfault in generated code, an abort), the case is a `crash`
failure carrying the tail of the worker's stderr (where `faulthandler` wrote the Python stack);
when no result arrives within the per-case time limit (scaled by the machine's load) the worker is
killed and the case is re-run alone with four times the limit: its result there counts, and only a
second timeout makes it a `timeout` (reported apart from failures: a hang or a machine too busy to
tell). Either way a fresh worker continues with the next case.

Testing hook: `CINN_PY_FUZZ_INJECT="crash:3,hang:5,hang-first:6"` makes the worker segfault
before case 3, sleep forever before case 5, and before case 6 except when it re-runs that case
alone (a case slow only under load); tests of the isolation itself use it.
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
    timeouts: list[dict[str, Any]] = field(default_factory=list)
    """Cases without a result within the limit, twice (the second time re-run alone)."""
    slow: list[tuple[int, float]] = field(default_factory=list)
    """(case, seconds) of cases that timed out once and gave their result when re-run alone."""
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
        elif result["status"] in ("fail", "timeout"):
            (self.failures if result["status"] == "fail" else self.timeouts).append(result)
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
        if self.slow:
            lines.append(f"slow: {len(self.slow)} case(s) timed out once and passed re-run alone: " +
                         ", ".join(f"{index} ({seconds:.0f} s)" for index, seconds in self.slow))
        if self.timeouts:
            lines.append(f"TIMEOUTS ({len(self.timeouts)}; no result twice, the second time alone):")
            lines += [f"  case {t['index']}: {t.get('detail', '')[:200]}" for t in self.timeouts]
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
        if inject.get(index) == "hang" or (inject.get(index) == "hang-first" and RERUN_ENV not in os.environ):
            time.sleep(1e9)
        result = _as_dict(check_case(seed, index, opts))
        print(RESULT + json.dumps(result), file=out, flush=True)
    return 0


def _injected_faults() -> dict[int, str]:
    spec = os.environ.get("CINN_PY_FUZZ_INJECT", "")
    faults = {}
    for item in filter(None, (x.strip() for x in spec.split(","))):
        kind, _, index = item.partition(":")
        if kind in ("crash", "hang", "hang-first") and index.isdigit():
            faults[int(index)] = kind
    return faults


def run_with_workers(seed: int, indices: range, opts: Any, timeout: float, worker_args: list[str],
                     summary: Summary) -> None:
    """Run cases in worker subprocesses, restarting a worker after a crash or hang.

    A case past its time limit is not yet a failure: on a shared machine the limit may fall to
    load, not to a hang. The limit scales with the load (`scaled_timeout`), and a case that
    exceeds it is re-run once alone, in a fresh worker, with `RERUN_FACTOR` times the limit:
    its result there counts (and the case is listed as slow); only a case that times out again
    ends as `timeout`, which `Summary` reports apart from wrong results and crashes."""
    next_index = indices.start
    while next_index < indices.stop:
        next_index, timed_out = _one_worker(seed, next_index, indices.stop, timeout, worker_args, summary)
        if timed_out is not None:
            _rerun_alone(seed, timed_out, timeout, worker_args, summary)


RERUN_FACTOR = 4.0
"""A timed-out case is re-run alone with this many times the (load-scaled) limit."""
MAX_LOAD_SCALE = 8.0


def scaled_timeout(timeout: float) -> float:
    """`timeout` stretched by the machine's load per CPU (1-minute load average; at most
    `MAX_LOAD_SCALE` times): a case that takes 20 s on an idle machine takes 120 s where six
    processes share each core, and counting that as a hang would bury real hangs in noise."""
    try:
        load = os.getloadavg()[0]
    except OSError:   # no load average on this platform: the limit as given
        return timeout
    return timeout * min(max(load / (os.cpu_count() or 1), 1.0), MAX_LOAD_SCALE)


def _rerun_alone(seed: int, index: int, timeout: float, worker_args: list[str], summary: Summary) -> None:
    limit = RERUN_FACTOR * timeout
    started = time.monotonic()
    _, again = _one_worker(seed, index, index + 1, limit, worker_args, summary,
                           env={RERUN_ENV: "1"})
    if again is not None:
        summary.add(_special(index, "timeout", f"no result within {scaled_timeout(timeout):.0f}s, nor within "
                                               f"{scaled_timeout(limit):.0f}s when re-run alone", seed,
                             worker_args, status="timeout"))
    else:
        summary.slow.append((index, time.monotonic() - started))


RERUN_ENV = "CINN_PY_FUZZ_RERUN"
"""Set in a worker that re-runs a timed-out case alone (the `hang-first` fault ignores it)."""


def _worker_command(start: int, stop: int, worker_args: list[str]) -> list[str]:
    return [sys.executable, "-m", "cinn_py.tools.fuzz", *worker_args, "--worker", "--start", str(start),
            "--examples", str(stop - start)]


def _one_worker(seed: int, start: int, stop: int, timeout: float, worker_args: list[str],
                summary: Summary, env: Mapping[str, str] | None = None) -> tuple[int, int | None]:
    """Run one worker until it finishes, crashes or exceeds the time limit; returns the next index
    to run and the index of the case that timed out (None if none did)."""
    with tempfile.TemporaryFile(mode="w+") as err:
        proc = subprocess.Popen(_worker_command(start, stop, worker_args), stdout=subprocess.PIPE, stderr=err,
                                text=True, env={**os.environ, "PYTHONFAULTHANDLER": "1", **(env or {})})
        assert proc.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        current: int | None = None
        deadline = time.monotonic() + scaled_timeout(timeout)
        try:
            while True:
                if not sel.select(timeout=max(deadline - time.monotonic(), 0.0)):
                    proc.kill()   # our own worker, by its handle
                    proc.wait()
                    index = current if current is not None else start
                    return index + 1, index
                line = proc.stdout.readline()
                if not line:
                    code = proc.wait()
                    if current is None:
                        return stop, None
                    err.seek(0)
                    tail = err.read()[-3000:]
                    summary.add(_special(current, "crash", f"worker exited with status {code}\n{tail}", seed,
                                         worker_args))
                    return current + 1, None
                if line.startswith(BEGIN):
                    current = int(line[len(BEGIN):])
                    deadline = time.monotonic() + scaled_timeout(timeout)
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


def _special(index: int, kind: str, detail: str, seed: int, worker_args: list[str],
             status: str = "fail") -> dict[str, Any]:
    """A crash/timeout result with a reproducer described by a separate, non-executing process."""
    mode = mode_args(worker_args)
    describe = [sys.executable, "-m", "cinn_py.tools.fuzz", *mode, "--seed", str(seed), "--case", str(index),
                "--describe"]
    try:
        text = subprocess.run(describe, capture_output=True, text=True, timeout=120).stdout
    except subprocess.TimeoutExpired:
        text = "(describing the case timed out too)"
    flags = "".join(f" {a}" for a in mode)
    reproducer = "\n".join([f"=== {status.upper()} case {index} (seed {seed}) at {kind}", detail.rstrip(),
                            f"--- reproduce: python -m cinn_py.tools.fuzz --seed {seed} --case "
                            f"{index}{flags} --in-process",
                            text])
    return {"index": index, "status": status, "stage": kind, "error": kind, "detail": detail, "steps": [],
            "reproducer": reproducer}
