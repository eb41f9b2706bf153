"""PyTorch's OpInfo samples through `torch.compile(backend="cinn_py")`: values and gradients vs eager.

PyTorch's op database (`torch.testing._internal.common_methods_invocations.op_db`) gives each op
the sample inputs its own tests use. For every op that supports float32 on the CPU, its first
samples run compiled (`fullgraph=False, dynamic=False`, strict: an internal error of the backend
raises) and eagerly; outputs are compared, and for ops with `supports_autograd` the gradients of
every input through `sum(output * cotangent)` too. The backend's reports say, per op, whether
every compute op ran in cinn-py kernels (`converted`), some stayed in eager PyTorch (`eager`,
with the ops and reasons; `by_design` when all of them have no sensible loop-nest kernel:
FFTs, LAPACK factorisations and solvers, complex dtypes: `EAGER_BY_DESIGN`, left out of the
share), a value differed (`wrong`) or the backend raised (`error`, with the
traceback). Ops nothing can be said about are `skipped`, with the reason: no float32, a random
or uninitialised output, no sample eager PyTorch runs, or Dynamo breaking the graph (the op then
runs in Python, out of any backend's reach).

`python -m cinn_py.torch.conformance` prints the figures (forward: ops converted / eligible;
gradient: the same over the training graphs, forward and backward); `--ops` picks ops by name,
`--sampled N` a deterministic subset of N ops (the default test tier's), `--samples K` the
samples per op, `--shard i/n` every n-th op (to split a run over processes), `--json PATH` appends
each result to PATH as a JSON line and `--resume` keeps the results PATH already holds (a killed
or extended run goes on where it stopped). tests/torch/test_opinfo.py runs the subset by default
and every op in the on-demand `exhaustive` tier.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch  # pyright: ignore[reportMissingImports]
from torch.utils import _pytree as pytree  # pyright: ignore[reportMissingImports]

from cinn_py.torch import backend

MODES = ("forward", "gradient")
OUTCOMES = ("converted", "by_design", "eager", "wrong", "error", "skipped")
_LAPACK = ("_linalg_svd", "_linalg_eigh", "linalg_eig", "_linalg_det", "_linalg_slogdet",
           "linalg_lu_factor_ex",
           "linalg_lu_solve", "linalg_lu", "lu_unpack", "linalg_solve_triangular", "_linalg_solve_ex",
           "linalg_inv_ex",
           "linalg_cholesky_ex", "linalg_qr", "geqrf", "ormqr", "linalg_householder_product",
           "linalg_ldl_factor_ex",
           "linalg_ldl_solve", "triangular_solve", "cholesky_solve", "cholesky_inverse", "linalg_lstsq",
           "linalg_eigvals", "_linalg_eigvals", "cholesky")
EAGER_BY_DESIGN: tuple[tuple[str, str], ...] = (
    *((f"aten.{name}.", "a LAPACK factorisation or solver") for name in _LAPACK),
    ("aten.linalg_pinv.", "a pseudo-inverse (an SVD or eigendecomposition)"),
    ("aten.linalg_matrix_exp.",
     "a matrix exponential (its Pade degree and squarings picked from the data's norm)"),
    ("aten._fft_", "an FFT"),
    ("no converter for the effectful call of aten._linalg_check_errors",
     "the error check of a LAPACK call's result"),
    ("dtype complex", "complex dtypes"),
    *((f"aten.{name}.", "complex dtypes") for name in ("view_as_real", "view_as_complex", "_conj", "polar",
                                                        "complex", "conj_physical", "_conj_physical")),
)
"""ATen ops (name prefixes, or a prefix of the fallback reason) with no sensible loop-nest kernel:
an op whose eager ops are all of these counts as `by_design`, apart from the ops that could run
in cinn-py kernels and do not (`eager`)."""
RANDOM_OPS = ("bernoulli", "normal", "rand", "uniform", "multinomial", "dropout", "rrelu", "cauchy",
              "exponential",
              "geometric", "log_normal", "randint", "randn")
"""Name parts of ops whose values are random draws (they cannot equal eager's)."""
FORWARD_TOL = (1e-4, 1e-4)
GRADIENT_TOL = (1e-3, 1e-3)
"""(rtol, atol) of the forward values and of the gradients."""
"""float32 with the backend's fast math (a few ulp) and reassociated sums: the gradients add up
more terms (broadcasts' sums, reductions' expansions)."""


@dataclass(frozen=True)
class OpResult:
    """What one op's samples did in one mode."""

    op: str
    mode: str
    outcome: str
    detail: str = ""
    """converted: empty; eager: the ops left to eager with their reasons; wrong: the mismatch;
    error: the exception with its traceback; skipped: why."""
    eager_ops: tuple[str, ...] = ()
    samples: int = 0

    def line(self, verbose: bool = False) -> str:
        """One line (an error's exception, unless `verbose`: with the whole traceback)."""
        detail = self.detail if verbose or self.outcome != "error" else (self.detail.splitlines() or [""])[0]
        return f"{self.mode:8s} {self.outcome:9s} {self.op}: {detail}"


@dataclass
class Summary:
    """Outcome counts per mode, and each op's result."""

    results: list[OpResult] = field(default_factory=list)

    def counts(self, mode: str) -> Counter[str]:
        return Counter(r.outcome for r in self.results if r.mode == mode)

    def eligible(self, mode: str) -> int:
        """Ops that ran (not skipped), those eager by design (no sensible kernel) excluded."""
        return sum(n for outcome, n in self.counts(mode).items() if outcome not in ("skipped", "by_design"))

    def figures(self) -> str:
        lines = []
        for mode in MODES:
            counts, eligible = self.counts(mode), self.eligible(mode)
            if not counts:
                continue
            share = 100 * counts["converted"] / eligible if eligible else 0.0
            ran = eligible + counts["by_design"]
            lines.append(f"{mode}: {counts['converted']} of {eligible} eligible ops converted ({share:.1f}%; "
                         f"{counts['converted']} of {ran} with the {counts['by_design']} eager by design), "
                         f"eager {counts['eager']}, wrong {counts['wrong']}, error {counts['error']}, "
                         f"skipped {counts['skipped']}")
        return "\n".join(lines)

    def skip_reasons(self, mode: str) -> Counter[str]:
        return Counter(r.detail.split(":")[0] for r in self.results if r.mode == mode and r.outcome
                       == "skipped")

    def eager_ops(self, mode: str) -> Counter[str]:
        """ATen op -> how many OpInfo ops left it to eager (the converters most worth writing)."""
        return Counter(op for r in self.results if r.mode == mode for op in r.eager_ops)


def write_result(path: str, result: OpResult) -> None:
    """Appends one result as a JSON line (flushed: a killed run keeps what it finished)."""
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(dataclasses.asdict(result)) + "\n")


def read_results(path: str) -> list[OpResult]:
    """The results a `write_result` file holds (none when it does not exist); a torn last line
    (the run was killed mid-write) is dropped."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return []
    results = []
    for line in lines:
        try:
            fields = json.loads(line)
        except json.JSONDecodeError:
            continue
        results.append(OpResult(**{**fields, "eager_ops": tuple(fields.get("eager_ops", ()))}))
    return results


def op_database() -> list[Any]:
    """PyTorch's OpInfo entries (importing them takes seconds: only when asked)."""
    from torch.testing._internal.common_methods_invocations import op_db  # noqa: PLC0415

    return list(op_db)


def op_label(op: Any) -> str:
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


def sampled(ops: Sequence[Any], count: int) -> list[Any]:
    """`count` ops spread evenly over the ops sorted by name (a deterministic subset)."""
    ordered = sorted(ops, key=op_label)
    if count >= len(ordered):
        return ordered
    return [ordered[k * len(ordered) // count] for k in range(count)]


def skip_reason(op: Any, mode: str) -> str | None:
    """Why `op` says nothing about the backend in `mode` (None: it runs)."""
    if torch.float32 not in op.supported_dtypes("cpu"):
        return "no float32 on cpu"
    if mode == "gradient" and not op.supports_autograd:
        return "no autograd"
    if mode == "gradient" and torch.float32 not in op.supported_backward_dtypes("cpu"):
        return "no float32 backward on cpu"
    if any(getattr(op, flag, False) for flag in ("has_nondeterministic_output",
                                                 "skip_correctness_check_compile_vs_eager")):  # newer torch
        return "nondeterministic output"
    if any(part in op.name for part in RANDOM_OPS):
        return "random output"
    return None


def _samples(op: Any, mode: str, count: int) -> list[Any]:
    torch.manual_seed(0)
    samples = op.sample_inputs("cpu", torch.float32, requires_grad=mode == "gradient")
    return [s for _, s in zip(range(count), samples)]


def _call(op: Any) -> Callable[..., Any]:
    fn = op.op

    def run(inp: Any, args: Any, kwargs: Any) -> Any:
        return fn(inp, *args, **kwargs)
    return run


def _leaves(sample: Any) -> list[Any]:
    flat = pytree.tree_leaves((sample.input, sample.args, sample.kwargs))
    return [t for t in flat if isinstance(t, torch.Tensor) and t.requires_grad]


def _differentiable(out: Any) -> list[Any]:
    return [t for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor) and t.grad_fn is not None
            and t.is_floating_point()]


def _gradients(out: Any, leaves: list[Any]) -> list[Any]:
    """d sum(out_k * cot_k) / d leaves, the cotangents seeded (the same for eager and compiled)."""
    outs = _differentiable(out)
    if not outs or not leaves:
        return []
    gen = torch.Generator().manual_seed(7)
    loss = torch.stack([(o * torch.randn(o.shape, generator=gen)).sum() for o in outs]).sum()
    grads = torch.autograd.grad(loss, leaves, allow_unused=True)
    return [g if g is None else g.detach() for g in grads]


@dataclass(frozen=True)
class _Run:
    outcome: str
    detail: str = ""
    eager_ops: tuple[str, ...] = ()


def _is_backend_error(exc: BaseException) -> bool:
    """Whether the exception was raised by cinn-py (a frame in its packages), not by Dynamo/torch."""
    frames = traceback.extract_tb(exc.__traceback__)
    cause = exc.__cause__ or exc.__context__
    return any("/cinn_py/" in f.filename or "/codegen/" in f.filename or "/schedules/" in f.filename
               for f in frames) or (cause is not None and _is_backend_error(cause))


def _root_cause(exc: BaseException) -> BaseException:
    """The innermost exception (Dynamo wraps the backend's in BackendCompilerFailed)."""
    while True:
        inner = exc.__cause__ or getattr(exc, "inner_exception", None)
        if not isinstance(inner, BaseException):
            return exc
        exc = inner


def _run_sample(op: Any, mode: str, mine: Any, ref: Any) -> _Run:
    """One sample: eager first (a sample eager rejects says nothing), then compiled."""
    fn = _call(op)
    try:
        expected = fn(ref.input, ref.args, ref.kwargs)
        expected_grads = _gradients(expected, _leaves(ref)) if mode == "gradient" else []
    except Exception as exc:  # noqa: BLE001 - the sample itself is invalid for eager torch
        return _Run("skipped", f"eager raises: {type(exc).__name__}")
    if mode == "gradient" and not expected_grads:
        return _Run("skipped", "no differentiable output")
    torch._dynamo.reset()  # pyright: ignore[reportAttributeAccessIssue]
    torch._dynamo.utils.counters.clear()  # pyright: ignore[reportAttributeAccessIssue]
    backend.reset_reports()
    compiled = torch.compile(fn, backend=backend.cinn_py_backend, fullgraph=False, dynamic=False,
                             options={"strict": True})
    try:
        out = compiled(mine.input, mine.args, mine.kwargs)
        grads = _gradients(out, _leaves(mine)) if mode == "gradient" else []
    except Exception as exc:  # noqa: BLE001 - classified: the backend's errors are the product's
        if _is_backend_error(exc):
            root = _root_cause(exc)
            first = f"{type(root).__name__}: {str(root).splitlines()[0] if str(root) else ''}"
            return _Run("error", first + "\n" + "".join(traceback.format_exception(root)))
        return _Run("skipped", f"dynamo raises: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}")
    breaks = torch._dynamo.utils.counters["graph_break"]  # pyright: ignore[reportAttributeAccessIssue]
    if breaks:
        return _Run("skipped", f"dynamo graph break: {next(iter(breaks))[:120]}")
    reports = backend.reports()
    if not reports:
        return _Run("skipped", "dynamo made no graph")
    try:
        _assert_close(out, expected, FORWARD_TOL)
        for k, (a, b) in enumerate(zip(grads, expected_grads)):
            _assert_close(a, b, GRADIENT_TOL, f"gradient of input {k}: ")
    except (AssertionError, TypeError, ValueError, RuntimeError) as exc:
        return _Run("wrong", str(exc)[:600])
    if any(r.errors for r in reports):  # not strict (cannot happen with the option; defensive)
        return _Run("error", "\n".join(e.traceback for r in reports for e in r.errors))
    eager = {op_name: r.reasons.get(op_name, "?") for r in reports for op_name in r.fallback}
    if eager:
        detail = ", ".join(f"{k} ({v})" for k, v in sorted(eager.items()))
        designed = all(_by_design(k, v) for k, v in eager.items())
        return _Run("by_design" if designed else "eager", detail, tuple(sorted(eager)))
    return _Run("converted")


def _by_design(op_name: str, reason: str) -> bool:
    return any(op_name.startswith(prefix) or reason.startswith(prefix) for prefix, _ in EAGER_BY_DESIGN)


def _assert_close(actual: Any, expected: Any, tol: tuple[float, float], what: str = "") -> None:
    torch.testing.assert_close(actual, expected, rtol=tol[0], atol=tol[1], equal_nan=True, check_stride=False,
                               msg=lambda m: what + m)


_SEVERITY = {"error": 5, "wrong": 4, "eager": 3, "by_design": 2, "converted": 1, "skipped": 0}


def run_op(op: Any, mode: str, samples: int = 3) -> OpResult:
    """The op's first `samples` samples in `mode`; the worst outcome over them (error > wrong >
    eager > converted; skipped when every sample was)."""
    label = op_label(op)
    reason = skip_reason(op, mode)
    if reason is not None:
        return OpResult(label, mode, "skipped", reason)
    try:
        pairs = list(zip(_samples(op, mode, samples), _samples(op, mode, samples)))
    except Exception as exc:  # noqa: BLE001 - OpInfo's sample generator itself fails
        return OpResult(label, mode, "skipped", f"no samples: {type(exc).__name__}")
    runs = [_run_sample(op, mode, mine, ref) for mine, ref in pairs]
    torch._dynamo.reset()  # pyright: ignore[reportAttributeAccessIssue]
    if not runs:
        return OpResult(label, mode, "skipped", "no samples")
    worst = max(runs, key=lambda r: _SEVERITY[r.outcome])
    eager_ops = tuple(sorted({o for r in runs for o in r.eager_ops}))
    details = worst.detail if worst.outcome not in ("eager", "by_design") else ", ".join(
        sorted({part for r in runs if r.outcome == worst.outcome for part in r.detail.split(", ")}))
    ran = sum(r.outcome != "skipped" for r in runs)
    return OpResult(label, mode, worst.outcome, details, eager_ops, ran)


def run(ops: Iterable[Any], modes: Sequence[str] = MODES, samples: int = 3,
        progress: Callable[[OpResult], None] | None = None, done: Sequence[OpResult] = ()) -> Summary:
    """Each op in each mode; an (op, mode) with a result in `done` (an earlier run's, to resume
    it) keeps that result and does not run again."""
    summary = Summary()
    earlier = {(r.op, r.mode): r for r in done}
    for op in ops:
        for mode in modes:
            known = earlier.get((op_label(op), mode))
            if known is not None:
                summary.results.append(known)
                continue
            result = run_op(op, mode, samples)
            summary.results.append(result)
            if progress is not None:
                progress(result)
    return summary


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m cinn_py.torch.conformance",
                                description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--ops", nargs="*", help="op names (OpInfo name or name.variant); default: all")
    p.add_argument("--sampled", type=int, default=0, help="a deterministic subset of this many ops")
    p.add_argument("--samples", type=int, default=3, help="sample inputs per op (default 3)")
    p.add_argument("--mode", choices=(*MODES, "both"), default="both")
    p.add_argument("--shard", default="0/1", help="i/n: every n-th op from the i-th (to run in parallel)")
    p.add_argument("--verbose", "-v", action="store_true", help="every op's line, errors with tracebacks")
    p.add_argument("--json", metavar="PATH", help="append each result to PATH as a JSON line")
    p.add_argument("--resume", action="store_true",
                   help="with --json: keep the results PATH already holds, run only the other ops")
    return p


def select(ops: Sequence[Any], names: Sequence[str] | None, count: int) -> list[Any]:
    chosen = [op for op in ops if not names or op_label(op) in names or op.name in names]
    return sampled(chosen, count) if count else sorted(chosen, key=op_label)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.getLogger("cinn_py.torch").setLevel(logging.ERROR)  # errors are in the results
    index, count = (int(v) for v in args.shard.split("/"))
    ops = select(op_database(), args.ops, args.sampled)[index::count]
    modes = MODES if args.mode == "both" else (args.mode,)
    start = time.perf_counter()

    if args.resume and not args.json:
        raise SystemExit("--resume needs --json PATH (the results to resume from)")
    done = read_results(args.json) if args.resume else []

    def show(result: OpResult) -> None:
        print(result.line(args.verbose), flush=True)
        if args.json:
            write_result(args.json, result)

    summary = run(ops, modes, args.samples, show, done)
    print(f"\n{len(ops)} ops, {args.samples} samples each, {time.perf_counter() - start:.0f} s")
    for mode in modes:
        print(f"{mode} skipped: {dict(summary.skip_reasons(mode).most_common())}")
        print(f"{mode} most frequent eager ATen ops: {summary.eager_ops(mode).most_common(25)}")
    print(summary.figures())
    bad = sum(summary.counts(m)["wrong"] + summary.counts(m)["error"] for m in modes)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
