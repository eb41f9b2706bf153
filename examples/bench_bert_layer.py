"""Benchmark: one training step (forward + backward) of the BERT-style encoder layer of
examples/train_bert_layer.py, eager PyTorch vs `torch.compile(backend="cinn_py")` vs
`torch.compile` with Inductor, in the same run.

    python examples/bench_bert_layer.py [--batch 4 --seq 64 --hidden 128 --ffn 512] [--repeat 20]
                                        [--dtype float32|bfloat16] [--compare-native]
                                        [--device cpu|cuda]

Each variant runs the same step on the CPU (or, `--device cuda`, on a GPU: the CUDA kernels,
each step synchronised before its time is taken): the layer on the same input and weights, loss = sum of
the output times a fixed random tensor, `backward()`, gradients cleared (set to None). The
compiled variants compile in their warm-up steps (their compile times are printed apart); the
timed steps then alternate between the variants round by round, so all see the same load. The
table gives the median, minimum and maximum step time and the speed-up over eager, with the load
average before and after (the machine may be shared: quote figures with it). Each variant's
output and gradients are checked against eager's first (bfloat16: to 5% of each tensor's
largest magnitude, as two bfloat16 computations in different orders agree).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import train_bert_layer as layer  # noqa: E402

import cinn_py.torch  # noqa: E402
from cinn_py.pipeline import NATIVE_ENV  # noqa: E402
from cinn_py.torch.backend import cinn_py_backend  # noqa: E402 - by object: works without the installed entry point
from cinn_py.tools.bench import time_alternating  # noqa: E402

Step = Callable[[], Any]


def make_step(fn: Callable[..., torch.Tensor], x: torch.Tensor, params: dict[str, torch.Tensor]) -> Step:
    """One training step of `fn(x, *params)`; returns the output and the gradients."""
    names = list(params)
    # a fixed random cotangent: the sum of squares of a layer_norm output would be constant
    cot = torch.randn(x.shape, generator=torch.Generator().manual_seed(3)).to(x.dtype).to(x.device)

    def step() -> tuple[torch.Tensor, list[torch.Tensor]]:
        for p in params.values():
            p.grad = None
        out = fn(x, *params.values())
        (out * cot).sum().backward()
        if x.is_cuda:
            torch.cuda.synchronize()
        return out.detach(), [params[n].grad for n in names]
    return step


def compiled_without_native_graph(step: Step) -> Step:
    """`step` whose partitions compile (at its first call) with `CINN_PY_NATIVE_GRAPH=0`: kernel by
    kernel from Python, the runtime before the native graph (docs/runtime.md)."""
    compiled = False

    def run() -> Any:
        nonlocal compiled
        if compiled:
            return step()
        previous = os.environ.get(NATIVE_ENV)
        os.environ[NATIVE_ENV] = "0"
        try:
            return step()
        finally:
            compiled = True
            if previous is None:
                del os.environ[NATIVE_ENV]
            else:
                os.environ[NATIVE_ENV] = previous
    return run


def variants(x: torch.Tensor, hidden: int, ffn: int, compare_native: bool = False) -> dict[str, Step]:
    def eager(x: torch.Tensor, *p: torch.Tensor) -> torch.Tensor:
        return layer.eager_layer(x, dict(zip(layer.PARAMS, p)))

    def params() -> dict[str, torch.Tensor]:
        return {k: v.detach().to(x.dtype).to(x.device).requires_grad_()
                for k, v in layer.init_params(hidden=hidden, ffn=ffn).items()}

    steps = {"eager": make_step(eager, x, params())}
    for name, backend in (("cinn_py", cinn_py_backend), ("inductor", "inductor")):
        compiled = torch.compile(eager, backend=backend, dynamic=False)
        steps[name] = make_step(compiled, x, params())
    if compare_native:
        def eager_kernels(x: torch.Tensor, *p: torch.Tensor) -> torch.Tensor:  # Dynamo caches per code object
            return layer.eager_layer(x, dict(zip(layer.PARAMS, p)))

        compiled = torch.compile(eager_kernels, backend=cinn_py_backend, dynamic=False)
        steps["cinn_py/kernels"] = compiled_without_native_graph(make_step(compiled, x, params()))
        name, step = on_other_pool(steps["cinn_py"])
        steps[name] = step
    return steps


def on_other_pool(step: Step) -> tuple[str, Step]:
    """`step` with parallel loops on the pool this run does not use by default: torch's OpenMP
    threads or cinn-py's own workers (codegen/llvm/openmp.py decides by OMP_WAIT_POLICY)."""
    from codegen.llvm.jit import parallel_runtime  # noqa: PLC0415
    from codegen.llvm.openmp import adopt_loaded_openmp, entry_points, loaded_libgomp  # noqa: PLC0415

    pool = parallel_runtime()
    shared_by_default = adopt_loaded_openmp(pool)
    path = loaded_libgomp()
    other = None if shared_by_default else entry_points(path) if path else None

    def run() -> Any:
        pool.share_openmp(other)
        try:
            return step()
        finally:
            adopt_loaded_openmp(pool)
    return ("cinn_py/own-pool" if shared_by_default else "cinn_py/omp-pool"), run


def _close(name: str, what: str, got: torch.Tensor, want: torch.Tensor) -> None:
    if want.dtype == torch.float32:
        torch.testing.assert_close(got, want, rtol=1e-3, atol=1e-4, msg=lambda m: f"{name} {what}: {m}")
        return
    err = (got.float() - want.float()).abs().max().item() / (want.float().abs().max().item() + 1e-6)
    if err > 0.05:
        raise AssertionError(f"{name} {what}: differs from eager by {err:.1%} of its largest magnitude")


def check(steps: dict[str, Step]) -> dict[str, float]:
    """Per variant: compile (first-step) seconds; raises if output or gradients differ from eager."""
    ref_out, ref_grads = steps["eager"]()
    first: dict[str, float] = {}
    for name, step in steps.items():
        t0 = time.perf_counter()
        out, grads = step()
        first[name] = time.perf_counter() - t0
        _close(name, "output", out, ref_out)
        for k, (g, r) in enumerate(zip(grads, ref_grads)):
            _close(name, f"gradient {k}", g, r)
    return first


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--ffn", type=int, default=512)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32")
    parser.add_argument("--compare-native", action="store_true",
                        help="also time cinn_py with its partitions run kernel by kernel "
                             "(CINN_PY_NATIVE_GRAPH=0) "
                             "and with its parallel loops on its own thread pool instead of torch's OpenMP "
                             "threads")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    args = parser.parse_args()
    torch.manual_seed(0)
    x = torch.randn(args.batch, args.seq, args.hidden).to(getattr(torch, args.dtype)).to(args.device)
    load_before = os.getloadavg()
    steps = variants(x, args.hidden, args.ffn, args.compare_native)
    cinn_py.torch.reset_reports()
    first = check(steps)
    times = time_alternating(list(steps.values()), args.repeat, warmup=2)
    load_after = os.getloadavg()
    where = torch.cuda.get_device_name() if args.device == "cuda" else "CPU"
    print(f"BERT layer training step (forward + backward), {args.dtype}, {where}: batch {args.batch}, seq "
          f"{args.seq}, "
          f"hidden {args.hidden}, ffn {args.ffn}; {args.repeat} alternating rounds; torch "
          f"{torch.__version__}, {torch.get_num_threads()} threads")
    eager_median = statistics.median(times[0])
    print(f"{'variant':<15} {'median ms':>10} {'min ms':>8} {'max ms':>8} {'vs eager':>9} "
          f"{'first step s':>13}")
    for (name, _), t in zip(steps.items(), times):
        median = statistics.median(t)
        print(f"{name:<15} {median * 1e3:>10.2f} {min(t) * 1e3:>8.2f} {max(t) * 1e3:>8.2f} "
              f"{eager_median / median:>8.2f}x {first[name]:>13.1f}")
    for report in cinn_py.torch.reports():
        print(report)
    print("load average (1/5/15 min): before " + " ".join(f"{v:.2f}" for v in load_before)
          + ", after " + " ".join(f"{v:.2f}" for v in load_after))


if __name__ == "__main__":
    main()
