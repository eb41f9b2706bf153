"""A pytest plugin: the CPU seconds each test costs, for keeping the default tier in its budget.

Wall times lie on a shared 2-core machine (a test waits for the cores as long as it runs);
CPU seconds do not. Per test: this process's user + system time, that of children it reaped,
and what its live descendants (the compile workers, which outlive the test) used meanwhile, read
from /proc. One JSON line per test goes to `$CINN_PY_CPU_DURATIONS/<worker>-<pid>.jsonl`:

    CINN_PY_CPU_DURATIONS=/tmp/cpu python -m pytest -q -p tests.cpu_durations
    python -m tests.cpu_durations /tmp/cpu        # the costliest tests and files
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest

_TICKS = os.sysconf("SC_CLK_TCK")
_OUT: list[IO[str]] = []


def _descendants(pid: int) -> list[int]:
    found: list[int] = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            found += [int(c) for c in Path(f"/proc/{pid}/task/{tid}/children").read_text().split()]
    except OSError:  # the process ended meanwhile
        return found
    return found + [d for child in list(found) for d in _descendants(child)]


def _live_cpu() -> dict[int, float]:
    seconds: dict[int, float] = {}
    for pid in _descendants(os.getpid()):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            seconds[pid] = (int(fields[11]) + int(fields[12])) / _TICKS  # utime + stime
        except (OSError, IndexError, ValueError):
            continue
    return seconds


def _own_cpu() -> float:
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


def _out() -> IO[str]:
    if not _OUT:
        folder = Path(os.environ.get("CINN_PY_CPU_DURATIONS", "cpu-durations"))
        folder.mkdir(parents=True, exist_ok=True)
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        _OUT.append((folder / f"{worker}-{os.getpid()}.jsonl").open("a", encoding="utf-8"))
    return _OUT[0]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    own, live, start = _own_cpu(), _live_cpu(), time.perf_counter()
    yield
    after = _live_cpu()
    children = sum(s - live.get(pid, 0.0) for pid, s in after.items())
    record = {"id": item.nodeid, "cpu": _own_cpu() - own + children, "wall": time.perf_counter() - start}
    _out().write(json.dumps(record) + "\n")
    _out().flush()


def summary(folder: Path, top: int = 30) -> str:
    """The costliest tests, test functions (parametrisations summed) and files of a run."""
    records = [json.loads(line) for f in folder.glob("*.jsonl")
               for line in f.read_text().splitlines() if line]
    by_function: Counter[str] = Counter()
    by_file: Counter[str] = Counter()
    for r in records:
        by_function[r["id"].split("[")[0]] += r["cpu"]
        by_file[r["id"].split("::")[0]] += r["cpu"]
    lines = [f"{len(records)} tests, {sum(r['cpu'] for r in records):.0f} CPU-s"]
    for title, counts in (("test functions", by_function), ("files", by_file)):
        lines.append(f"-- costliest {title} (CPU-s)")
        lines += [f"{cpu:8.1f}  {name}" for name, cpu in counts.most_common(top)]
    return "\n".join(lines)


if __name__ == "__main__":
    print(summary(Path(sys.argv[1] if len(sys.argv) > 1 else "cpu-durations")))
