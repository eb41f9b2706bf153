"""`cinn-py bench`: x86 benchmark of cinn-py kernels, hand-scheduled and auto-scheduled, against
numpy (and PyTorch).

    python -m cinn_py.tools.bench [NAMES ...] [--repeat N] [--threads T] [--tiny] [--no-auto]
                                  [--json] [--plot FILE.png] [--peers torch.compile,numba]
    results = run_benchmarks(names=None, repeat=20, threads=None)
    print(format_table(results))

Workloads (`cinn_py.tools.bench_workloads`): relu(x*2+1) on 2^24 float32, RMSNorm [2048,768], softmax
[4096,1024], row-sum and column-sum [4096,4096], layernorm [8192,768], bias+gelu(tanh)
[4096,3072], transpose [4096,4096], and the compute-bound matmul 1024^3, batched matmul
16 x 256^3 and matmul + bias + relu 1024^3 (numpy's BLAS as the baseline; target: within 1.5x of
it; GB/s does not apply); each is built with the compute DSL, scheduled by hand for
x86 and compiled with `fast_math=True` (vectorised exp/tanh/rsqrt polynomials, reassociable
float reductions). The same function is also scheduled by `schedule="auto"` (the x86 tactics of
`schedules.tactics`) and compiled the same way: columns "auto ms" and "auto x hand" (the hand
schedule's time over the auto one's: above 1 the automatic schedule is faster).

Measurement, per workload:
- the kernel's output is compared with numpy before timing (`BenchmarkError` when wrong);
- times are medians of `repeat` calls after warm-up calls (`time.perf_counter`, whole calls:
  argument validation and the parallel launch included), with preallocated outputs (`out=`);
  the hand and auto kernels are called alternately, so both see the same machine load;
  numpy and torch run their idiomatic expressions (allocating their outputs, as users do);
  `--peers` adds torch.compile of the torch expression and numba loops (`bench_peers`; numba
  writes into a preallocated output), each checked against numpy first;
- GB/s counts the bytes every input is read once plus the output written once;
- memory bandwidth is measured as the faster of two copies of a 128 MiB float32 buffer (beyond
  the last-level cache): numpy's `np.copyto` (one thread) and a cinn-py parallel vectorised
  copy kernel, median of 10 copies before and after the workloads (the better of the two; the
  header line reports it);
- "% BW" of a workload is relative to the bandwidth of the cinn-py copy kernel *timed right
  before and right after that workload's calls* (7 copies each side, the better median; column
  "BW@run"): the machine's memory is shared with other processes, so a bandwidth measured
  minutes apart can differ by 1.5x. The copies stay out of the timed loop (they would evict
  the caches). Working sets that fit the last-level cache (RMSNorm: 12 MB) can exceed 100%.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

import cinn_py as cp
from cinn_py.tools.bench_attention import ATTENTION, format_attention_table, run_attention, torch_available
from cinn_py.tools.bench_compare import _compare, _peer_key
from cinn_py.tools.bench_conv import CONV, conv_summary, format_conv_table, run_conv
from cinn_py.tools.bench_peers import PEERS
from cinn_py.tools.bench_table import format_table
from cinn_py.tools.bench_timing import (
    BANDWIDTH_ELEMENTS, BenchmarkError, CopyProbe, _schedule, check_result, measure_bandwidth,
    time_alternating, time_bracketed,
)
from cinn_py.tools.bench_tuned import add_best_peer, tune_workloads, tuning_db_off
from cinn_py.tools.bench_workloads import FIVE_X_NUMPY, WORKLOADS, Workload
from cinn_py.diagnostics import CinnError

TARGET_BW_FRACTION = 0.8
TARGET_NUMPY_SPEEDUP = 5.0
BLAS_FACTOR = 1.5
"""Compute-bound workloads (matmul): at most this many times slower than numpy's BLAS."""


def build_workload(workload: Workload, shape: dict[str, int] | None = None,
                   threads: int | None = None) -> Any:
    """Lower, schedule and compile `workload` at `shape` (default: its benchmark shape)."""
    shape = shape or workload.shape
    sch = _schedule(workload.lower(shape))
    workload.schedule(sch, shape)
    options = {} if threads is None else {"num_threads": threads}
    return cp.build(sch.func, target="x86", fast_math=True, **options)


def build_auto(workload: Workload, shape: dict[str, int] | None = None, threads: int | None = None) -> Any:
    """Lower `workload` at `shape` and build it with the automatic x86 schedule; returns
    (kernel, the scheduler's report)."""
    shape = shape or workload.shape
    sch = cp.auto_schedule(workload.lower(shape), target="x86")
    options = {} if threads is None else {"num_threads": threads}
    return cp.build(sch.func, target="x86", fast_math=True, **options), sch.report


def run_workload(workload: Workload, repeat: int = 20, threads: int | None = None, tiny: bool = False,
                 seed: int = 0, compare: bool = True, probe: CopyProbe | None = None,
                 auto: bool = True, peers: Sequence[str] = (), tuned: bool = False) -> dict[str, Any]:
    """Build, verify and time one workload (hand schedule, and with `auto` the automatic one;
    with `compare` numpy, torch and `peers`); returns its result row (see `run_benchmarks`). With `probe`,
    copies are timed right before
    and after the calls (`local_bandwidth_gbs`)."""
    shape = workload.tiny if tiny else workload.shape
    t0 = time.perf_counter()
    kernel = build_workload(workload, shape, threads)
    build_s = time.perf_counter() - t0
    arrays = workload.inputs(shape, np.random.default_rng(seed))
    want = workload.numpy(*arrays)
    got = kernel(*arrays)
    max_err = check_result(workload.name, got, want, workload.rtol, workload.atol)
    out = np.empty_like(got)
    fns = [lambda: kernel(*arrays, out=out)]
    row: dict[str, Any] = {"auto_ms": None, "auto_x_hand": None}
    if auto:
        t0 = time.perf_counter()
        with tuning_db_off() if tuned else contextlib.nullcontext():  # --tuned: this column is untuned
            auto_kernel, report = build_auto(workload, shape, threads)
        row.update(auto_build_s=time.perf_counter() - t0, auto_plan=report.strategy, auto_nests=report.nests,
                   auto_fallbacks=report.fallbacks,
                   auto_max_abs_err=check_result(f"{workload.name} (auto)", auto_kernel(*arrays), want,
                                                 workload.rtol, workload.atol))
        auto_out = np.empty_like(got)
        fns.append(lambda: auto_kernel(*arrays, out=auto_out))
    if auto and tuned:
        tuned_kernel, tuned_report = build_auto(workload, shape, threads)
        row.update(tuned_plan=tuned_report.strategy, tuned_notes=tuned_report.notes,
                   tuned_max_abs_err=check_result(f"{workload.name} (tuned)", tuned_kernel(*arrays), want,
                                                  workload.rtol, workload.atol))
        tuned_out = np.empty_like(got)
        fns.append(lambda: tuned_kernel(*arrays, out=tuned_out))
    if probe is None:
        times, copy_s = time_alternating(fns, repeat), None
    else:
        times, copy_s = time_bracketed(fns, probe, repeat)
    check_result(workload.name, out, want, workload.rtol, workload.atol)
    ms = statistics.median(times[0]) * 1e3
    moved = workload.bytes_moved(arrays, got)
    row.update({
        "name": workload.name, "description": workload.description, "shape": dict(shape),
        "ms": ms, "min_ms": min(times[0]) * 1e3, "bytes": moved, "gbs": moved / ms / 1e6,
        "max_abs_err": max_err, "build_s": build_s, "repeat": len(times[0]),
        "threads": kernel.num_threads or _pool_threads(),
        "local_bandwidth_gbs": probe.gbs(copy_s) if probe is not None and copy_s else None,
    })
    if auto:
        row["auto_ms"] = statistics.median(times[1]) * 1e3
        row["auto_min_ms"] = min(times[1]) * 1e3
        row["auto_gbs"] = moved / row["auto_ms"] / 1e6
        row["auto_x_hand"] = ms / row["auto_ms"]
    if auto and tuned:
        row["tuned_ms"] = statistics.median(times[2]) * 1e3
        row["tuned_x_auto"] = row["auto_ms"] / row["tuned_ms"]
    if compare:
        _compare(row, workload, arrays, repeat, peers)
        if tuned:
            add_best_peer(row, [_peer_key(p) for p in peers])
    return row


def _pool_threads() -> int:
    from cinn_py.runtime import threadpool  # noqa: PLC0415

    return threadpool.get_num_threads()


# ---------------------------------------------------------------------------------------------
# The suite
# ---------------------------------------------------------------------------------------------
def select(names: Sequence[str] | None) -> list[Workload]:
    """Workloads by name (all of them for None/empty)."""
    if not names:
        return list(WORKLOADS.values())
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        raise BenchmarkError(f"bench: unknown workload(s) {unknown}; available: "
                             f"{', '.join([*WORKLOADS, *ATTENTION, *CONV])}")
    return [WORKLOADS[n] for n in names]


def run_benchmarks(names: Sequence[str] | None = None, repeat: int = 20, threads: int | None = None,
                   tiny: bool = False, compare: bool = True, auto: bool = True,
                   peers: Sequence[str] = (), tuned: bool = False) -> list[dict[str, Any]]:
    """Run the suite; one dict per workload with keys `name, description, shape, ms` (median of
    the hand-scheduled kernel), `auto_ms, auto_min_ms, auto_gbs, auto_x_hand` (hand ms / auto
    ms), `auto_x_numpy, auto_plan, auto_nests, auto_fallbacks, auto_build_s, auto_max_abs_err`
    (the automatic schedule's; `auto_ms` and `auto_x_hand` are None with `auto=False`),
    `min_ms, gbs, bytes, local_bandwidth_gbs` (the copy kernel timed right before and after
    this workload), `pct_bw` (percent of `local_bandwidth_gbs`), `numpy_ms, x_numpy, torch_ms,
    x_torch` (None without torch), per requested peer (`bench_peers.PEERS`) `torch_compile_ms`
    / `numba_ms` (None when unavailable; `peer_notes` says why), `max_abs_err, build_s, threads, targets`
    (which targets of
    the benchmark issue apply and whether they are met) and the bandwidth figures
    `numpy_copy_gbs, cinn_copy_gbs, bandwidth_gbs` and the load averages `load_before,
    load_after` (1/5/15 minutes) of this run."""
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise ValueError(f"run_benchmarks: repeat must be a positive int, got {repeat!r}")
    workloads = select(names)
    unknown = [p for p in peers if p not in PEERS]
    if unknown:
        raise BenchmarkError(f"bench: unknown peer(s) {unknown}; available: {', '.join(PEERS)}")
    n = (1 << 16) if tiny else BANDWIDTH_ELEMENTS
    load_before = _load_average()
    before = measure_bandwidth(threads=threads, n=n)
    probe = CopyProbe(n, threads)
    results = [run_workload(workload, repeat, threads, tiny, compare=compare, probe=probe, auto=auto,
                            peers=peers, tuned=tuned)
               for workload in workloads]
    # measured again at the end: on a shared machine the better of the two is the capability
    after = measure_bandwidth(threads=threads, n=n)
    bw = {key: max(before[key], after[key]) for key in before}
    load = {"load_before": load_before, "load_after": _load_average()}
    for workload, row in zip(workloads, results):
        row.update(bw)
        row.update(load)
        row["pct_bw"] = 100.0 * row["gbs"] / row["local_bandwidth_gbs"]
        # The targets are about full-size workloads (bandwidth, BLAS, numpy speed-ups): at tiny
        # sizes a launch costs more than the work, so a target there would only print noise.
        row["targets"] = {} if tiny else _targets(workload, row)
    return results


def _load_average() -> tuple[float, float, float] | None:
    """The 1/5/15-minute load averages (None where the OS has none): on a shared machine every
    figure is only meaningful with the load it was taken under."""
    try:
        return os.getloadavg()
    except OSError:
        return None


def _targets(workload: Workload, row: dict[str, Any]) -> dict[str, bool]:
    targets: dict[str, bool] = {}
    if workload.fused_memory_bound:
        targets[f">={TARGET_BW_FRACTION:.0%} BW"] = row["pct_bw"] >= 100 * TARGET_BW_FRACTION
    if workload.extra.get("blas") and row.get("x_numpy") is not None:
        targets[f"<={BLAS_FACTOR:g}x BLAS"] = row["x_numpy"] >= 1 / BLAS_FACTOR
    if workload.name in FIVE_X_NUMPY and row.get("x_numpy") is not None:
        targets[f">={TARGET_NUMPY_SPEEDUP:g}x numpy"] = row["x_numpy"] >= TARGET_NUMPY_SPEEDUP
    return targets


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """Arguments of `cinn-py bench` (added to `parser` when given, e.g. a CLI subparser)."""
    parser = (parser
              or argparse.ArgumentParser(prog="cinn-py bench", description=(__doc__ or "").split("\n")[0]))
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"workloads (default: all): {', '.join([*WORKLOADS, *ATTENTION, *CONV])}")
    parser.add_argument("--repeat", type=int, default=None, help="timed calls per kernel (median reported; "
                        "default 20, with --models 10 steps)")
    parser.add_argument("--threads", type=int, default=None,
                        help="threads of parallel loops (default: all cores; "
                        "with --models: torch's intra-op threads, default 2)")
    parser.add_argument("--tiny", action="store_true", help="tiny shapes (a quick correctness run)")
    parser.add_argument("--no-auto", action="store_true", help="skip the auto-scheduled kernels")
    parser.add_argument("--json", nargs="?", const="-", metavar="FILE",
                        help="print the results as JSON instead of the table (with FILE: the table, and the "
                             "JSON into FILE)")
    parser.add_argument("--plot", metavar="FILE.png",
                        help="also write a bar chart (needs matplotlib: cinn-py[plot])")
    parser.add_argument("--tuned", action="store_true",
                        help="tune each workload first (cinn-py tune), then time the untuned and the tuned "
                             "automatic schedule side by side, against the fastest peer (x peer)")
    parser.add_argument("--tune-budget", type=float, default=120.0, metavar="SECONDS",
                        help="with --tuned: tuning seconds per workload (default 120)")
    parser.add_argument("--tune-trials", type=int, default=64,
                        help="with --tuned: candidates measured per workload at most (default 64)")
    parser.add_argument("--tune-plot", metavar="FILE.png",
                        help="with --tuned: the tuning-progress plot (best time against trials)")
    parser.add_argument("--peers", default="", metavar="LIST",
                        help=f"comma-separated peers to time too: {', '.join(PEERS)} (see "
                             "cinn_py.tools.bench_peers)")
    parser.add_argument("--models", nargs="?", const="all", metavar="LIST",
                        help="the model zoo instead of the kernels: real models through eager, Inductor and "
                             "cinn_py (comma-separated, default all; see cinn_py/tools/zoo.py)")
    parser.add_argument("--compile", action="store_true",
                        help="compile time instead of run time: cold cinn_py and Inductor compiles of the "
                             "--models cases (default bert), each in a fresh process, and a warm cinn_py "
                             "start (see cinn_py/tools/bench_compile.py; the issue's case: --models bert "
                             "--size base "
                             "--modes train --dtypes fp32)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="with --compile: measurements of each kind (median; default 1)")
    from cinn_py.tools.zoo_options import add_zoo_arguments  # noqa: PLC0415 (no torch import)

    add_zoo_arguments(parser.add_argument_group("model zoo (with --models)"))
    parser.add_argument("--target", choices=("x86", "cuda"), default="x86",
                        help="x86 (default); cuda: the auto-scheduled CUDA kernels against PyTorch on a GPU, "
                             "or with "
                             "--static the no-GPU report (cinn_py.tools.cuda_report)")
    parser.add_argument("--static", action="store_true",
                        help="with --target cuda: registers, spills, shared memory, occupancy and the global "
                             "bytes "
                             "each kernel moves in the CPU emulator against the minimum; no GPU needed")
    return parser


def run_from_args(ns: argparse.Namespace) -> int:
    if ns.compile:
        return _run_compile(ns)
    if ns.models is not None:
        return _run_zoo(ns)
    from cinn_py.target import Target  # noqa: PLC0415

    if Target.parse(ns.target).is_gpu:
        from cinn_py.tools import cuda_report  # noqa: PLC0415

        return cuda_report.run_from_args(ns)
    if ns.static:
        raise ValueError("bench: --static is the CUDA report; add --target cuda")
    if ns.plot:
        from cinn_py.tools.bench_plot import require_matplotlib  # noqa: PLC0415

        require_matplotlib()  # before the (long) run, not after it
    peers = [p.strip() for p in ns.peers.split(",") if p.strip()]
    repeat = 20 if ns.repeat is None else ns.repeat
    kernels, attention, conv = _split_names(ns.names)
    if ns.tuned:
        if ns.no_auto:
            raise BenchmarkError("bench: --tuned compares automatic schedules; drop --no-auto")
        tune_workloads(select(kernels), ns.tune_budget, ns.tune_trials, ns.tiny, plot=ns.tune_plot)
    results = run_benchmarks(kernels, repeat=repeat, threads=ns.threads, tiny=ns.tiny, auto=not ns.no_auto,
                             peers=peers, tuned=ns.tuned) if kernels is None or kernels else []
    attention_rows = run_attention(attention, repeat=repeat, threads=ns.threads, tiny=ns.tiny)
    conv_rows = run_conv(conv, repeat=repeat, threads=ns.threads, tiny=ns.tiny)
    summary = [{"kind": "conv_summary", **conv_summary(conv_rows, ns.tiny)}] if conv_rows else []
    data = json.dumps(results + attention_rows + conv_rows + summary, indent=1, default=str)
    tables = ([t for t in (format_table(results) if results else "", format_attention_table(attention_rows),
                           format_conv_table(conv_rows, ns.tiny)) if t])
    print(data if ns.json == "-" else "\n\n".join(tables))
    if ns.json and ns.json != "-":
        with open(ns.json, "w") as f:
            f.write(data + "\n")
    if ns.plot:
        from cinn_py.tools.bench_plot import plot_results  # noqa: PLC0415

        plot_results(results, ns.plot)
    return 0


def _split_names(names: Sequence[str] | None) -> tuple[list[str] | None, list[str], list[str]]:
    """(kernel workload names, None for all; attention rows; conv rows): the attention and conv
    rows run after the kernel table (`bench_attention`, `bench_conv`); with no names, all of them
    when torch is installed."""
    if not names:
        with_torch = torch_available()
        return None, list(ATTENTION) if with_torch else [], list(CONV) if with_torch else []
    return ([n for n in names if n not in ATTENTION and n not in CONV], [n for n in names if n in ATTENTION],
            [n for n in names if n in CONV])


def _run_compile(ns: argparse.Namespace) -> int:
    """`--compile`: cold and warm compile times of model zoo cases (cinn_py.tools.bench_compile)."""
    if ns.names or ns.tiny or ns.peers or ns.no_auto or ns.plot:
        raise BenchmarkError("bench --compile times model zoo compiles: workload names, --tiny, --peers, "
                             "--no-auto and --plot apply to the kernel benchmarks (use --models and --size)")
    from cinn_py.tools import bench_compile  # noqa: PLC0415

    variants = ",".join(v for v in ns.variants.split(",") if v.strip() and v.strip() != "eager")
    args = argparse.Namespace(models=(ns.models or "bert").replace("all", "bert").split(","), size=ns.size,
                              modes=ns.modes, dtypes=ns.dtypes, variants=variants, rounds=ns.rounds,
                              threads=2 if ns.threads is None else ns.threads,
                              json=None if ns.json in (None, "-") else ns.json, child=None)
    return bench_compile.run(args)


def _run_zoo(ns: argparse.Namespace) -> int:
    """`--models`: the model zoo (cinn_py.tools.zoo), which needs torch and transformers."""
    if ns.names or ns.tiny or ns.peers or ns.no_auto:
        raise BenchmarkError("bench --models runs the model zoo: workload names, --tiny, --peers and "
                             "--no-auto "
                             "apply to the kernel benchmarks (use --size tiny)")
    # Before torch is imported (the zoo imports it): spinning OpenMP workers slow torch down.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    from cinn_py.tools import zoo_report  # noqa: PLC0415

    return zoo_report.run_from_args(ns)


def run_reporting_errors(ns: argparse.Namespace) -> int:
    """`run_from_args`, with a benchmark's or argument's error printed as one line and exit status 1."""
    try:
        return run_from_args(ns)
    except (CinnError, ValueError, TypeError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `python -m cinn_py.tools.bench` (`cinn-py bench` shares its parser); the exit status."""
    return run_reporting_errors(build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
