"""Compile time of a model zoo case: cinn_py against Inductor, cold and warm, each in a fresh process.

    cinn-py bench --compile [MODELS] [--size base] [--modes train] [--variants inductor,cinn_py]
                  [--rounds N] [--json FILE]
    python -m cinn_py.tools.bench_compile bert --size base      (the same)

Per model zoo case (`cinn_py.tools.zoo_models`: `bert --size base` is a 4-layer BERT, hidden 256,
sequence 128, batch 2; mode `train` by default: forward, loss, backward and an SGD step), every
measurement is a fresh Python process that builds the net, runs ONE step and exits:

- `eager`: the step without torch.compile: what the other processes spend besides compiling
  (imports, building the model, one eager step);
- `inductor` (cold): `torch.compile(backend="inductor")` with every Inductor cache off
  (`TORCHINDUCTOR_FORCE_DISABLE_CACHES=1`, a fresh `TORCHINDUCTOR_CACHE_DIR`);
- `cinn_py` (cold): `backend="cinn_py"` with an empty `CINN_PY_CACHE_DIR`;
- `cinn_py warm`: a second cinn_py process on the cache the cold one filled (a warm start).

Figures: `step s` / `step CPU s`, the first step's wall and CPU time inside the process (Dynamo,
AOT autograd, the backend, one run; the CPU of worker processes not included); `backend s` /
`backend CPU s` (cinn_py), the part spent in cinn_py's graph compiler
(`cinn_py.torch.backend.compile_graph`: partitioning, conversion, `compile_program`); `process s` and
`CPU s`, the whole process's wall time and its CPU time (user + system) together with every
process it started (compile workers: Inductor's and ours), and `compile CPU s`, that CPU time
minus the eager process's: the CPU a compile costs. This process becomes a child subreaper
(Linux `PR_SET_CHILD_SUBREAPER`) so that workers orphaned when a measured process exits are reaped
here and their CPU counted. On a shared machine the CPU seconds are the reliable measure (wall
time depends on the other processes); `--rounds N` repeats every measurement N times, the
variants in turn, and reports medians. The load average is reported before and after.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cinn_py.tools.zoo_options import DTYPES, MODELS, MODES, SIZES

RESULT_MARK = "bench_compile result: "
KINDS = ("eager", "inductor", "cinn_py", "cinn_py warm")
_ROOT = Path(__file__).resolve().parents[2]
_PR_SET_CHILD_SUBREAPER = 36
FIGURES = ("step_s", "step_cpu_s", "backend_s", "backend_cpu_s", "process_s", "cpu_s")


@dataclass(frozen=True)
class Measurement:
    """One fresh process: what it reported and what it cost."""

    kind: str
    step_s: float
    step_cpu_s: float
    """The first step's CPU time in the process itself (not its workers)."""
    backend_s: float | None
    backend_cpu_s: float | None
    """cinn_py's graph compiler's CPU time in the process itself (not its workers)."""
    process_s: float
    cpu_s: float
    graphs: int = 0
    kernels: int = 0
    errors: int = 0


@dataclass
class CaseTimes:
    """Every measurement of one (model, mode, dtype) case, by kind."""

    model: str
    mode: str
    dtype: str
    size: str
    runs: dict[str, list[Measurement]] = field(default_factory=dict)

    def median(self, kind: str, figure: str) -> float | None:
        values = [getattr(m, figure) for m in self.runs.get(kind, []) if getattr(m, figure) is not None]
        return statistics.median(values) if values else None

    def compile_cpu(self, kind: str) -> float | None:
        """The CPU seconds `kind`'s process spent beyond the eager process's (the compile's cost)."""
        cpu, eager = self.median(kind, "cpu_s"), self.median("eager", "cpu_s")
        return None if cpu is None or eager is None else cpu - eager

    def as_dict(self) -> dict[str, Any]:
        return {"model": self.model, "mode": self.mode, "dtype": self.dtype, "size": self.size,
                "runs": {k: [asdict(m) for m in v] for k, v in self.runs.items()},
                "medians": {k: {**{f: self.median(k, f) for f in FIGURES},
                                "compile_cpu_s": self.compile_cpu(k)} for k in self.runs}}


# -- the measured process ---------------------------------------------------------------------------
def _child(variant: str, model: str, mode: str, dtype: str, size: str, threads: int) -> dict[str, Any]:
    """In the fresh process: build the net, run one step (compiled unless `variant` is eager)."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import torch  # noqa: PLC0415  # pyright: ignore[reportMissingImports]

    from cinn_py.tools.zoo import Step  # noqa: PLC0415
    from cinn_py.tools.zoo_models import ARCHITECTURES  # noqa: PLC0415

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    net = ARCHITECTURES[model].net(size)
    net.train(mode == "train")
    backend_s, backend_cpu_s = [0.0], [0.0]
    if variant == "cinn_py":
        import cinn_py.torch.backend as cinn_backend  # noqa: PLC0415

        inner = cinn_backend.compile_graph

        def timed(*args: Any, **kwargs: Any) -> Any:
            t0, c0 = time.perf_counter(), time.process_time()
            try:
                return inner(*args, **kwargs)
            finally:
                backend_s[0] += time.perf_counter() - t0
                backend_cpu_s[0] += time.process_time() - c0

        cinn_backend.compile_graph = timed  # looked up by name at each graph: every graph is timed
    fn = net if variant == "eager" else torch.compile(net, backend=variant, dynamic=False)
    step = Step(net, fn, mode, dtype)
    t0, c0 = time.perf_counter(), time.process_time()
    step()
    result: dict[str, Any] = {"step_s": time.perf_counter() - t0, "step_cpu_s": time.process_time() - c0,
                              "backend_s": None, "backend_cpu_s": None}
    if variant == "cinn_py":
        import cinn_py.torch as cinn_torch  # noqa: PLC0415

        reports = cinn_torch.reports()
        result.update(backend_s=backend_s[0], backend_cpu_s=backend_cpu_s[0], graphs=len(reports),
                      kernels=sum(r.kernels for r in reports),
                      errors=sum(len(r.errors) for r in reports))
    return result


# -- the measuring process --------------------------------------------------------------------------
def _become_subreaper() -> bool:
    """Orphaned descendants (compile workers outliving their parent) are reparented to this
    process, so that reaping them adds their CPU time to RUSAGE_CHILDREN. Linux only."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _reap_orphans(timeout_s: float = 30.0) -> None:
    """Wait for the descendants a measured process left behind (they exit when their parent has)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.05)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(kind: str, model: str, mode: str, dtype: str, size: str, threads: int, cinn_cache: Path,
            inductor_cache: Path) -> Measurement:
    """One fresh process of `kind` (see the module docstring); raises if it fails."""
    variant = "cinn_py" if kind.startswith("cinn_py") else kind
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE", "CINN_PY_CACHE_DIR": str(cinn_cache),
           "TORCHINDUCTOR_CACHE_DIR": str(inductor_cache), "TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(_ROOT), os.environ.get("PYTHONPATH")]))}
    env.pop("CINN_PY_DISABLE_DISK_CACHE", None)
    command = [sys.executable, "-m", "cinn_py.tools.bench_compile", "--child", variant, model,
               "--modes", mode, "--dtypes", dtype, "--size", size, "--threads", str(threads)]
    cpu0, t0 = _children_cpu(), time.perf_counter()
    proc = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          check=False)
    process_s = time.perf_counter() - t0
    _reap_orphans()
    cpu_s = _children_cpu() - cpu0
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(RESULT_MARK)]
    if proc.returncode != 0 or not lines:
        tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
        raise RuntimeError(f"bench --compile: the {kind} process for {model} {mode} {dtype} exited with "
                           f"status {proc.returncode} and no result; its last stderr lines:\n{tail}")
    got = json.loads(lines[-1][len(RESULT_MARK):])
    return Measurement(kind, got["step_s"], got["step_cpu_s"], got["backend_s"], got["backend_cpu_s"],
                       process_s, cpu_s, got.get("graphs", 0),
                       got.get("kernels", 0), got.get("errors", 0))


def run_case(model: str, mode: str, dtype: str, size: str, kinds: Sequence[str], rounds: int, threads: int,
             log: Any = None) -> CaseTimes:
    """`rounds` rounds of every kind, in turn; each cold run on fresh, empty caches."""
    case = CaseTimes(model, mode, dtype, size)
    for _ in range(rounds):
        scratch = Path(tempfile.mkdtemp(prefix="cinn_py_bench_compile_"))
        try:
            for kind in kinds:
                cold = kind != "cinn_py warm"
                cinn_cache = scratch / ("cinn_cold_" + kind if cold else "cinn_cold_cinn_py")
                m = measure(kind, model, mode, dtype, size, threads, cinn_cache, scratch / f"inductor_{kind}")
                case.runs.setdefault(kind, []).append(m)
                if log is not None:
                    log(f"{model} {mode} {dtype} {size}: {kind}: step {m.step_s:.2f} s"
                        + (f" (backend {m.backend_s:.2f} s)" if m.backend_s is not None else "")
                        + f", process {m.process_s:.1f} s, CPU {m.cpu_s:.1f} s")
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return case


def _fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def format_table(cases: Sequence[CaseTimes], load_before: Sequence[float],
                 load_after: Sequence[float]) -> str:
    head = ["case", "kind", "step s", "step CPU s", "backend s", "backend CPU s", "process s", "CPU s",
            "compile CPU s"]
    rows = [head]
    for case in cases:
        for kind in case.runs:
            rows.append([f"{case.model} {case.mode} {case.dtype} {case.size}", kind,
                         *[_fmt(case.median(kind, f)) for f in FIGURES[:4]],
                         *[_fmt(case.median(kind, f), 1) for f in FIGURES[4:]],
                         "-" if kind == "eager" else _fmt(case.compile_cpu(kind), 1)])
    widths = [max(len(r[k]) for r in rows) for k in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines.append(f"load average before {' '.join(f'{x:.2f}' for x in load_before)}, "
                 f"after {' '.join(f'{x:.2f}' for x in load_after)}")
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("models", nargs="*", default=["bert"], help="zoo models (default bert)")
    parser.add_argument("--size", choices=SIZES, default="base", help="zoo size (default base)")
    parser.add_argument("--modes", default="train", help="comma-separated: infer, train (default train)")
    parser.add_argument("--dtypes", default="fp32", help="comma-separated: fp32, bf16 (default fp32)")
    parser.add_argument("--variants", default="inductor,cinn_py",
                        help="comma-separated: inductor, cinn_py (default both; eager always runs, and a "
                             "warm cinn_py start follows a cold one)")
    parser.add_argument("--rounds", type=int, default=1, help="measurements of each kind (median; default 1)")
    parser.add_argument("--threads", type=int, default=2, help="torch's intra-op threads (default 2)")
    parser.add_argument("--json", metavar="FILE", help="also write the measurements as JSON into FILE")
    parser.add_argument("--child", metavar="VARIANT", help=argparse.SUPPRESS)
    return parser


def _names(text: str, known: Sequence[str], what: str) -> list[str]:
    given = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [g for g in given if g not in known]
    if unknown or not given:
        raise ValueError(f"bench --compile: unknown or missing {what} {unknown or text!r}; expected some of "
                         f"{', '.join(known)}")
    return given


def run(ns: argparse.Namespace) -> int:
    models = _names(",".join(ns.models), MODELS, "model(s)")
    modes, dtypes = _names(ns.modes, MODES, "mode(s)"), _names(ns.dtypes, DTYPES, "dtype(s)")
    variants = _names(ns.variants, ("inductor", "cinn_py"), "variant(s)")
    if ns.rounds < 1 or ns.threads < 1:
        raise ValueError(f"bench --compile: --rounds and --threads must be positive, got {ns.rounds} and "
                         f"{ns.threads}")
    if ns.child is not None:
        result = _child(ns.child, models[0], modes[0], dtypes[0], ns.size, ns.threads)
        print(RESULT_MARK + json.dumps(result), flush=True)
        return 0
    kinds = ["eager", *variants, *(["cinn_py warm"] if "cinn_py" in variants else [])]
    if not _become_subreaper():
        print("bench --compile: not a child subreaper (not Linux?): orphaned workers' CPU is not counted",
              file=sys.stderr)
    load_before = os.getloadavg()
    cases = [run_case(m, mode, dtype, ns.size, kinds, ns.rounds, ns.threads,
                      log=lambda s: print(f"[compile] {s}", file=sys.stderr, flush=True))
             for m in models for mode in modes for dtype in dtypes]
    load_after = os.getloadavg()
    print(format_table(cases, load_before, load_after))
    if ns.json:
        Path(ns.json).write_text(json.dumps({"load_before": load_before, "load_after": load_after,
                                             "cases": [c.as_dict() for c in cases]}, indent=1) + "\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = add_arguments(argparse.ArgumentParser(prog="python -m cinn_py.tools.bench_compile",
                                                   description=(__doc__ or "").split("\n")[0]))
    try:
        return run(parser.parse_args(argv))
    except (ValueError, RuntimeError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
