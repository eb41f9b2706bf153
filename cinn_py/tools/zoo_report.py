"""The model zoo's outputs: the text table, the JSON file, the bar chart, and the command line
(`examples/model_zoo.py`, `cinn-py bench --models`). See `cinn_py.tools.zoo`."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from cinn_py.tools.zoo import CaseResult, ZooRun, run_zoo
from cinn_py.tools.zoo_options import MODELS, add_zoo_arguments

HEADER = ("model", "mode", "dtype", "eager ms", "inductor ms", "cinn_py ms", "x eager", "x inductor",
          "converted",
          "compile s cinn/ind", "correct cinn/ind")


def _opt(value: float | None, fmt: str, suffix: str = "") -> str:
    return "-" if value is None else f"{value:{fmt}}{suffix}"


def _correct(case: CaseResult, name: str) -> str:
    v = case.variants.get(name)
    if v is None:
        return "-"
    if v.error:
        return "ERROR"
    return "ok" if v.correct else "WRONG"


def _row(case: CaseResult) -> tuple[str, ...]:
    ms = ({name: case.variants[name].ms if name in case.variants else None for name
           in ("eager", "inductor", "cinn_py")})
    compile_s = [case.variants[n].compile_s if n in case.variants else None for n in ("cinn_py", "inductor")]
    pct = case.pct_converted
    converted = "-" if pct is None else f"{pct:.0f}% ({case.converted}/{case.total_ops})"
    return (case.model, case.mode, case.dtype, _opt(ms["eager"], ".2f"), _opt(ms["inductor"], ".2f"),
            _opt(ms["cinn_py"], ".2f"), _opt(case.speedup("cinn_py"), ".2f", "x"),
            _opt(case.speedup("cinn_py", "inductor"), ".2f", "x"), converted,
            f"{_opt(compile_s[0], '.1f')} / {_opt(compile_s[1], '.1f')}",
            f"{_correct(case, 'cinn_py')} / {_correct(case, 'inductor')}")


def _load(load: Sequence[float]) -> str:
    return "/".join(f"{v:.2f}" for v in load)


def format_table(run: ZooRun) -> str:
    """The table of a zoo run, its conditions on top, geomeans, then mismatches and fallbacks."""
    lines = [f"model zoo, size {run.size}: median of {run.repeat} steps after 2 warm-up steps, variants "
             "interleaved "
             f"round by round; torch {run.torch_version}, {run.threads} threads, "
             f"OMP_WAIT_POLICY={run.omp_wait_policy}; "
             f"load average (1/5/15 min) before {_load(run.load_before)}, after {_load(run.load_after)}",
             "x eager / x inductor: cinn_py's speed-up (their ms / cinn_py ms); compile s: first step "
             "(trace, "
             "compile, one run); correct: outputs and parameter gradients vs eager (fp32 rtol 1e-3 atol "
             "1e-4; "
             "bf16 within 5% of each tensor's largest magnitude + 1e-3; either, or else RMS error vs a "
             "float64 run <= 2x eager's)"]
    rows = [HEADER, *(_row(c) for c in run.cases)]
    widths = [max(len(r[k]) for r in rows) for k in range(len(HEADER))]
    for k, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(w) if c < 3 else cell.rjust(w)
                               for c, (cell, w) in enumerate(zip(row, widths))).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    lines.append(_geomean_line(run))
    lines += _notes(run.cases)
    return "\n".join(lines)


def _geomean_line(run: ZooRun) -> str:
    g = run.as_dict()["geomean"]
    return (f"geomean: cinn_py {_opt(g['cinn_py_x_eager'], '.2f', 'x')} eager, "
            f"{_opt(g['cinn_py_x_inductor'], '.2f', 'x')} inductor; inductor "
            f"{_opt(g['inductor_x_eager'], '.2f', 'x')} "
            "eager")


def _notes(cases: Sequence[CaseResult]) -> list[str]:
    lines: list[str] = []
    for case in cases:
        for v in case.variants.values():
            if v.error:
                lines.append(f"{case.key}: {v.name} failed: {v.error}")
            elif v.mismatch:
                lines.append(f"{case.key}: {v.name} differs from eager: {v.mismatch}")
        for failure in case.failures:
            lines.append(f"{case.key}: cinn_py partition failed: {failure[:300]}")
        if case.fallbacks:
            eager = "; ".join(f"{op} ({why})" for op, why in case.fallbacks.items())
            lines.append(f"{case.key}: cinn_py left to eager: {eager}")
    return lines


def plot(run: ZooRun, path: str | Path) -> Path:
    """A bar chart of the speed-ups over eager (log scale), one group of bars per case."""
    from cinn_py.tools.bench_plot import require_matplotlib  # noqa: PLC0415

    plt = require_matplotlib()
    cases = run.cases
    fig, ax = plt.subplots(figsize=(max(7.0, 0.9 * len(cases) + 2), 4.8))
    width = 0.38
    for k, (name, color) in enumerate((("inductor", "#dd8452"), ("cinn_py", "#4c72b0"))):
        xs = [i + (k - 0.5) * width for i in range(len(cases))]
        values = [c.speedup(name) or 0.0 for c in cases]
        bars = ax.bar(xs, values, width, label=name, color=color)
        ax.bar_label(bars, labels=[f"{v:.2f}" if v else "n/a" for v in values], fontsize=6, padding=1)
    ax.set_xticks(range(len(cases)), [c.key for c in cases], rotation=40, ha="right", fontsize=8)
    ax.set_yscale("log")
    ticks = plt.FuncFormatter(lambda v, _: f"{v:g}x")
    ax.yaxis.set_major_formatter(ticks)
    ax.yaxis.set_minor_formatter(ticks)
    ax.tick_params(axis="y", which="minor", labelsize=7)
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.set_ylabel("speed-up over eager (log)")
    ax.legend()
    # Two short lines: a long one-line title is cut off at the figure's edge.
    fig.suptitle(f"cinn-py model zoo ({run.size}, {run.threads} threads, torch {run.torch_version})\n"
                 f"median of {run.repeat} steps; load average {_load(run.load_before)} -> "
                 f"{_load(run.load_after)}",
                 fontsize=10)
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return out


def _names(text: str | None) -> list[str]:
    return [t.strip() for t in (text or "").split(",") if t.strip() and t.strip() != "all"]


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The zoo's own command line (`examples/model_zoo.py`)."""
    add_zoo_arguments(parser)
    parser.add_argument("--models", default="", help=f"comma-separated: {', '.join(MODELS)} (default all)")
    parser.add_argument("--repeat", type=int, default=10, help="timed steps per variant (median reported)")
    parser.add_argument("--threads", type=int, default=2, help="torch intra-op threads (default 2)")
    parser.add_argument("--json", metavar="FILE",
                        help="also write the results as JSON ('-': print them instead "
                        "of the table)")
    parser.add_argument("--plot", metavar="FILE.png",
                        help="also write a bar chart (needs matplotlib: cinn-py[plot])")
    return parser


def run_from_args(ns: argparse.Namespace) -> int:
    if ns.plot:
        from cinn_py.tools.bench_plot import require_matplotlib  # noqa: PLC0415

        require_matplotlib()  # before the (long) run, not after it
    run = run_zoo(_names(ns.models), ns.size, _names(ns.modes), _names(ns.dtypes),
                  repeat=10 if ns.repeat is None else ns.repeat,
                  threads=2 if ns.threads is None else ns.threads, variants=_names(ns.variants))
    data = json.dumps(run.as_dict(), indent=1, default=str)
    if ns.json == "-":
        print(data)
    else:
        print(format_table(run))
        if ns.json:
            Path(ns.json).write_text(data + "\n")
    if ns.plot:
        plot(run, ns.plot)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = add_arguments(argparse.ArgumentParser(prog="model_zoo",
                                                   description=(__doc__ or "").split("\n")[0]))
    ns = parser.parse_args(argv)
    try:
        return run_from_args(ns)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
