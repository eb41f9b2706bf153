"""The model zoo benchmark: real architectures through eager PyTorch, Inductor and cinn-py.

    python examples/model_zoo.py [--models resnet,bert] [--size tiny|small|base] [--modes infer,train]
                                 [--dtypes fp32,bf16] [--repeat 10] [--threads 2] [--json FILE] [--plot
                                 FILE.png]
    cinn-py bench --models [LIST] ...   (the same, from the command line)

Models (`cinn_py.tools.zoo_models`, random init, no downloads): ResNet and MobileNetV2 (CNNs),
BERT (encoder), GPT-2 (decoder, LM loss), Llama (RMSNorm, RoPE, SwiGLU, GQA) and a plain
`torch.nn.TransformerEncoderLayer`. A case is one model in one mode (`infer`: eval mode under
`torch.no_grad()`; `train`: train mode, forward + loss, `loss.backward()` and an SGD step) and one
dtype (`fp32`, or `bf16`: the step under `torch.autocast("cpu", torch.bfloat16)`, fp32 weights).

Per case, three variants of the same net (same weights, same inputs): eager, `torch.compile`
with Inductor and with `backend="cinn_py"` (both `dynamic=False`; Dynamo is reset between cases).
- correctness: each compiled variant's first step against eager's first step: every output
  (loss included) and, in training, every parameter's gradient; fp32: rtol 1e-3, atol 1e-4
  (`torch.allclose`), or else, for a tensor that eager's own fp32 result misses by that much (batch
  norm over a few elements per channel amplifies rounding), Inductor's accuracy rule against a
  float64 run of the same net: RMS error vs float64 <= 2x eager's + atol/10; bf16: max abs error <= 5% of the
  tensor's largest magnitude + 1e-3 (two
  bf16 computations that round in different places agree to about that);
- compile seconds: the first step of each compiled variant (tracing, compiling, one run);
- % converted: of the ATen compute ops in the graphs cinn-py was given (forward and backward),
  the share running in cinn-py kernels (`cinn_py.torch.reports()`), with what fell back and why;
- time: the median of `repeat` steps after 2 warm-up steps, the variants called in turn round by
  round (all see the same load), with torch at `threads` intra-op threads and
  `OMP_WAIT_POLICY=PASSIVE` set before torch is imported (spinning OpenMP workers make torch up to
  10x slower on a shared machine); the load average is reported before and after.
"""

from __future__ import annotations

import contextlib
import copy
import math
import os
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

# Before torch's OpenMP runtime is loaded (it reads the variable once, at load).
_TORCH_WAS_IMPORTED = "torch" in sys.modules
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402  # pyright: ignore[reportMissingImports]

from cinn_py.tools.bench import time_alternating  # noqa: E402
from cinn_py.tools.zoo_models import ARCHITECTURES, ZooNet  # noqa: E402
from cinn_py.tools.zoo_options import DTYPES, MODES, SIZES, VARIANTS  # noqa: E402
FP32_RTOL, FP32_ATOL = 1e-3, 1e-4
FP64_MULTIPLIER = 2.0
"""Inductor's `same(..., fp64_ref=...)` multiplier: a compiled fp32 result may be up to twice as far
from the float64 result as eager's fp32 result is."""
BF16_RELATIVE = 0.05
BF16_ATOL = 1e-3
"""bf16: an absolute floor for tensors whose exact value is ~0 (BERT's key-bias gradient: softmax
ignores a per-row constant, so what is left is rounding noise, 1e-6 against 1e-5)."""

Outputs = tuple[list[torch.Tensor], dict[str, torch.Tensor]]


@dataclass
class VariantResult:
    """One variant of one case: its first step (compile) and its timed steps."""

    name: str
    compile_s: float | None = None
    ms: float | None = None
    correct: bool | None = None
    mismatch: str = ""
    """The first output or gradient outside the tolerance (empty when correct)."""
    error: str = ""
    """The first step raised: the exception, in one line (the variant is then not timed)."""


@dataclass
class CaseResult:
    model: str
    mode: str
    dtype: str
    variants: dict[str, VariantResult] = field(default_factory=dict)
    converted: int = 0
    """ATen compute ops running in cinn-py kernels (all of the case's graphs)."""
    total_ops: int = 0
    fallbacks: dict[str, str] = field(default_factory=dict)
    """Op (with its count) -> why it ran in eager PyTorch."""
    failures: list[str] = field(default_factory=list)
    graphs: int = 0

    @property
    def key(self) -> str:
        return f"{self.model} {self.mode} {self.dtype}"

    @property
    def pct_converted(self) -> float | None:
        return 100.0 * self.converted / self.total_ops if self.total_ops else None

    def speedup(self, variant: str, over: str = "eager") -> float | None:
        """`over`'s median time / `variant`'s (above 1: `variant` is faster)."""
        a, b = self.variants.get(variant), self.variants.get(over)
        if a is None or b is None or not a.ms or not b.ms:
            return None
        return b.ms / a.ms

    def as_dict(self) -> dict[str, Any]:
        row: dict[str, Any] = {"model": self.model, "mode": self.mode, "dtype": self.dtype,
                               "pct_converted": self.pct_converted, "converted_ops": self.converted,
                               "total_ops": self.total_ops, "graphs": self.graphs,
                               "fallbacks": self.fallbacks,
                               "failures": self.failures}
        for name, v in self.variants.items():
            row[name] = {"ms": v.ms, "compile_s": v.compile_s, "correct": v.correct, "mismatch": v.mismatch,
                         "error": v.error}
        row["cinn_py_x_eager"] = self.speedup("cinn_py")
        row["cinn_py_x_inductor"] = self.speedup("cinn_py", "inductor")
        row["inductor_x_eager"] = self.speedup("inductor")
        return row


def progress(message: str) -> None:
    print(f"[zoo] {message}", file=sys.stderr, flush=True)


def _autocast(dtype: str) -> Any:
    return torch.autocast("cpu", dtype=torch.bfloat16) if dtype == "bf16" else contextlib.nullcontext()


class Step:
    """One step of a net: inference (no_grad, eval) or training (forward, loss.backward(), SGD)."""

    def __init__(self, net: ZooNet, fn: Callable[[], Any], mode: str, dtype: str) -> None:
        self.net, self.fn, self.mode, self.dtype = net, fn, mode, dtype
        self.params = dict(net.named_parameters())
        self.optimizer = torch.optim.SGD(self.params.values(), lr=1e-4) if mode == "train" else None

    def __call__(self) -> Outputs:
        if self.optimizer is None:
            with torch.no_grad(), _autocast(self.dtype):
                return [o.detach() for o in self.fn()], {}
        for p in self.params.values():
            p.grad = None
        with _autocast(self.dtype):
            out = self.fn()
        out[0].backward()
        self.optimizer.step()  # updates the weights in place; `p.grad` itself stays as computed
        return [o.detach() for o in out], {n: p.grad for n, p in self.params.items() if p.grad is not None}


def _rms_error(got: torch.Tensor, exact: torch.Tensor) -> float:
    return (got.double() - exact).square().mean().sqrt().item() if exact.numel() else 0.0


def _as_close_as_eager(got: torch.Tensor, want: torch.Tensor, exact: torch.Tensor | None) -> bool:
    """Inductor's fp64 accuracy rule (`torch._dynamo.utils.same(fp64_ref=...)`): the compiled
    result's RMS error against float64 is at most FP64_MULTIPLIER x eager fp32's own, plus atol/10.
    For ill-conditioned tensors (normalisation over 2-8 elements) eager itself is not within
    rtol 1e-3 of the exact value, so demanding that of a compiled variant would measure noise."""
    if exact is None or exact.shape != got.shape:
        return False
    ours, eagers = _rms_error(got, exact), _rms_error(want, exact)
    return not math.isnan(ours) and ours <= FP64_MULTIPLIER * eagers + FP32_ATOL / 10


def _mismatch(what: str, got: torch.Tensor, want: torch.Tensor, dtype: str,
              exact: torch.Tensor | None = None) -> str:
    """Why `got` is not close enough to eager's `want` ("" when it is); `exact`: the float64
    reference."""
    if got.shape != want.shape:
        return f"{what}: shape {tuple(got.shape)}, eager's {tuple(want.shape)}"
    g, w = got.double(), want.double()
    err = (g - w).abs().max().item() if g.numel() else 0.0
    if dtype == "bf16":
        scale = w.abs().max().item() if w.numel() else 0.0
        if err <= BF16_RELATIVE * scale + BF16_ATOL and not math.isnan(err):
            return ""
        if _as_close_as_eager(g, w, exact):
            return ""
        return (f"{what}: max abs error {err:.3g} > {BF16_RELATIVE:.0%} of its largest magnitude {scale:.3g} "
                f"+ {BF16_ATOL:g}{_fp64_figures(g, w, exact)}")
    if torch.allclose(g, w, rtol=FP32_RTOL, atol=FP32_ATOL) or _as_close_as_eager(g, w, exact):
        return ""
    # the worst element against its own tolerance, and the tensor's scale: a sum of many terms
    # (a convolution's weight gradient) can cancel to ~0 where rounding differences do not
    excess = int(((g - w).abs() / (FP32_ATOL + FP32_RTOL * w.abs())).flatten().argmax().item())
    return (f"{what}: max abs error {err:.3g} (rtol {FP32_RTOL:g}, atol {FP32_ATOL:g}); worst element "
            f"{g.flatten()[excess].item():.6g} vs eager {w.flatten()[excess].item():.6g}, largest |eager| "
            f"{w.abs().max().item():.3g}{_fp64_figures(g, w, exact)}")


def _fp64_figures(got: torch.Tensor, want: torch.Tensor, exact: torch.Tensor | None) -> str:
    if exact is None or exact.shape != got.shape:
        return ""
    return f"; RMS error vs float64 {_rms_error(got, exact):.3g}, eager's {_rms_error(want, exact):.3g}"


def compare(got: Outputs, want: Outputs, dtype: str, exact: Outputs | None = None) -> str:
    """The first mismatch of a variant's outputs and gradients against eager's ("" when all match);
    `exact`: the same step run in float64, for `_as_close_as_eager`."""
    outs, grads = got
    want_outs, want_grads = want
    exact_outs, exact_grads = exact if exact is not None else ([], {})
    if len(outs) != len(want_outs):
        return f"{len(outs)} outputs, eager has {len(want_outs)}"
    missing = sorted(set(want_grads) - set(grads))
    if missing:
        return f"no gradient for {missing[0]} ({len(missing)} parameter(s))"
    checks = [(("loss" if k == 0 else f"output {k}"), o, w, exact_outs[k] if k < len(exact_outs) else None)
              for k, (o, w) in enumerate(zip(outs, want_outs))]
    checks += [(f"grad {n}", grads[n], w, exact_grads.get(n)) for n, w in want_grads.items()]
    for what, g, w, x in checks:
        reason = _mismatch(what, g, w, dtype, x)
        if reason:
            return reason
    return ""


def _one_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0][:240] if text else ''}"


def _first_step(step: Step, result: VariantResult, reference: Outputs | None, dtype: str,
                exact: Outputs | None = None) -> Outputs | None:
    t0 = time.perf_counter()
    try:
        out = step()
    except Exception as err:  # noqa: BLE001 (a variant's failure is a result of the benchmark)
        result.error = _one_line(err)
        return None
    result.compile_s = time.perf_counter() - t0
    if reference is not None:
        result.mismatch = compare(out, reference, dtype, exact)
        result.correct = not result.mismatch
    return out


def _float64_step(base: ZooNet, mode: str) -> Outputs | None:
    """The first step of a float64 copy of the net, eagerly (None if the model cannot run in
    float64: the check then falls back to the plain tolerance)."""
    net = base.in_float64()
    try:
        return Step(net, net, mode, "fp32")()
    except RuntimeError as err:
        progress(f"no float64 reference ({_one_line(err)})")
        return None


def _conversion(case: CaseResult) -> None:
    import cinn_py.torch as cinn_torch  # noqa: PLC0415

    fallback: Counter[str] = Counter()
    reasons: dict[str, str] = {}
    for report in cinn_torch.reports():
        case.graphs += 1
        case.converted += sum(report.compiled.values())
        fallback.update(report.fallback)
        fallback.update(report.failed)
        for op, why in report.reasons.items():
            reasons.setdefault(op, why)
        for op in report.failed:
            reasons.setdefault(op, "its partition raised (see the partition errors)")
        case.failures += [str(e) for e in report.errors]
    case.total_ops = case.converted + sum(fallback.values())
    case.fallbacks = {f"{op} x{n}": reasons.get(op, "?") for op, n in fallback.most_common()}


def run_case(model: str, mode: str, dtype: str, size: str, repeat: int, warmup: int = 2,
             variants: Sequence[str] = VARIANTS, time_steps: bool = True) -> CaseResult:
    """Build the three variants of one case, check them against eager and time them."""
    import cinn_py.torch as cinn_torch  # noqa: PLC0415 (registers nothing: the backend is an entry point)

    case = CaseResult(model, mode, dtype)
    torch._dynamo.reset()  # a fresh Dynamo cache: earlier cases' guards and recompile counts do not leak in
    base = ARCHITECTURES[model].net(size)
    base.train(mode == "train")
    steps: dict[str, Step] = {}
    reference: Outputs | None = None
    exact = _float64_step(base, mode)
    for name in ("eager", *[v for v in variants if v != "eager"]):
        net = copy.deepcopy(base)
        fn = net if name == "eager" else torch.compile(net, backend=name, dynamic=False)
        step = Step(net, fn, mode, dtype)
        result = case.variants[name] = VariantResult(name)
        if name == "cinn_py":
            cinn_torch.reset_reports()
        progress(f"{case.key}: {name} first step{'' if name == 'eager' else ' (compiling)'} ...")
        out = _first_step(step, result, reference, dtype, exact)
        if name == "cinn_py":
            _conversion(case)
        if out is None:
            progress(f"{case.key}: {name} failed: {result.error}")
            continue
        if name == "eager":
            reference = out
        else:
            verdict = "correct" if result.correct else f"WRONG ({result.mismatch})"
            progress(f"{case.key}: {name} first step {result.compile_s:.1f} s, {verdict}")
        steps[name] = step
    if time_steps and steps:
        times = time_alternating(list(steps.values()), repeat, warmup=warmup)
        for name, t in zip(steps, times):
            case.variants[name].ms = statistics.median(t) * 1e3
        progress(f"{case.key}: median ms " + ", ".join(f"{n} {case.variants[n].ms:.2f}" for n in steps))
    return case


@dataclass(frozen=True)
class ZooRun:
    """What `run_zoo` measured: the cases and the conditions they were measured under."""

    cases: list[CaseResult]
    size: str
    repeat: int
    threads: int
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]
    omp_wait_policy: str
    torch_version: str = torch.__version__

    def as_dict(self) -> dict[str, Any]:
        return {"size": self.size, "repeat": self.repeat, "threads": self.threads,
                "load_before": self.load_before,
                "load_after": self.load_after, "omp_wait_policy": self.omp_wait_policy,
                "torch": self.torch_version, "cases": [c.as_dict() for c in self.cases],
                "geomean": geomeans(self.cases)}


def omp_wait_policy() -> str:
    """The OMP_WAIT_POLICY torch runs under, and whether it was set before torch was loaded."""
    value = os.environ.get("OMP_WAIT_POLICY", "(unset)")
    return f"{value} (set after torch was imported: no effect)" if _TORCH_WAS_IMPORTED else value


def geomeans(cases: Sequence[CaseResult]) -> dict[str, float | None]:
    """Geometric mean speed-ups over the cases where both variants were timed."""
    out: dict[str, float | None] = {}
    for key, variant, over in (("cinn_py_x_eager", "cinn_py", "eager"),
                               ("cinn_py_x_inductor", "cinn_py", "inductor"),
                               ("inductor_x_eager", "inductor", "eager")):
        values = [s for c in cases if (s := c.speedup(variant, over))]
        out[key] = math.exp(sum(map(math.log, values)) / len(values)) if values else None
    return out


def check_names(given: Sequence[str], known: Sequence[str], what: str) -> list[str]:
    unknown = [g for g in given if g not in known]
    if unknown:
        raise ValueError(f"model zoo: unknown {what} {', '.join(unknown)}; expected some of "
                         f"{', '.join(known)}")
    return list(given)


def run_zoo(models: Sequence[str] = (), size: str = "small", modes: Sequence[str] = MODES,
            dtypes: Sequence[str] = DTYPES, repeat: int = 10, threads: int = 2,
            variants: Sequence[str] = VARIANTS, time_steps: bool = True) -> ZooRun:
    """Every (model, mode, dtype) case, in that order; see the module docstring."""
    models = check_names(models, list(ARCHITECTURES), "model(s)") if models else list(ARCHITECTURES)
    check_names(modes, MODES, "mode(s)")
    check_names(dtypes, DTYPES, "dtype(s)")
    check_names([size], SIZES, "size")
    check_names(variants, VARIANTS, "variant(s)")
    if repeat < 1 or threads < 1:
        raise ValueError(f"model zoo: repeat and threads must be positive, got {repeat} and {threads}")
    torch.set_num_threads(threads)
    load_before = os.getloadavg()
    cases = [run_case(m, mode, dtype, size, repeat, variants=variants, time_steps=time_steps)
             for m in models for mode in modes for dtype in dtypes]
    return ZooRun(cases, size, repeat, threads, load_before, os.getloadavg(), omp_wait_policy())
