"""GPU benchmark of hand-scheduled cinn-py CUDA kernels against PyTorch (eager and torch.compile).

    python -m cinn_py.tools.bench_cuda [--repeat 50] [--no-compile]

Reports median time, effective GB/s (bytes read + written once) and % of the measured
device-to-device copy bandwidth; every cinn-py result is first checked against PyTorch. Needs
PyCUDA, PyTorch and a GPU; it cannot run in CI (the `*_schedule` functions are tested there:
tests/codegen/cuda/test_bench_schedules.py).

Softmax, LayerNorm and RMSNorm are single kernels, one block per row (CINN's block-reduce
schedule): each row statistic is a two-step reduction (every thread accumulates a strided, hence
coalesced, slice in a register `T_rf`, then one block reduce), the statistics stay in registers
(`set_buffer(.., "local")`, privatised per thread), and the elementwise tail recomputes the inlined
producers. LayerNorm is two-pass (mean, then the variance of `x - mean`) for accuracy.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import cinn_py as cp

if TYPE_CHECKING:
    from schedules import IRSchedule as Schedule


# An entry point (like the driver): schedules and codegen are imported lazily, inside functions.
def IRSchedule(func: Any) -> Any:  # noqa: N802  (stands in for the class)
    from schedules import IRSchedule as _IRSchedule  # noqa: PLC0415

    return _IRSchedule(func)


def build_cuda(func: Any, arch: str = "auto", fast_math: bool = False) -> Any:
    from codegen.cuda import build_cuda as _build_cuda  # noqa: PLC0415

    return _build_cuda(func, arch=arch, fast_math=fast_math)


def _bind_flat(s: Schedule, block: str, threads: int = 256) -> None:
    loops = s.get_loops(block)
    fused = s.fuse(loops) if len(loops) > 1 else loops[0]
    outer, inner = s.split(fused, [-1, threads])
    s.bind(outer, "blockIdx.x")
    s.bind(inner, "threadIdx.x")


def elementwise(n: int) -> Any:
    A = cp.placeholder((n,), "float32", "A")
    B = cp.compute((n,), lambda i: A[i] * 2.0 + 1.0, "B")
    s = IRSchedule(cp.lower("elementwise", [A, B]))
    b, t, v = s.split(s.get_loops("B")[0], [-1, 256, 4])
    s.bind(b, "blockIdx.x")
    s.bind(t, "threadIdx.x")
    s.vectorize(v, 4)
    return build_cuda(s.func, arch="auto", fast_math=True)


def bias_gelu(rows: int, cols: int) -> Any:
    X = cp.placeholder((rows, cols), "float32", "X")
    bias = cp.placeholder((cols,), "float32", "bias")

    def gelu(i: Any, j: Any) -> Any:
        v = X[i, j] + bias[j]
        return v * 0.5 * (cp.erf(v * 0.7071067811865476) + 1.0)

    Y = cp.compute((rows, cols), gelu, "Y")
    s = IRSchedule(cp.lower("bias_gelu", [X, bias, Y]))
    _bind_flat(s, "Y")
    return build_cuda(s.func, arch="auto", fast_math=True)


def row_reduce(rows: int, cols: int, square: bool = False) -> Any:
    X = cp.placeholder((rows, cols), "float32", "X")
    k = cp.reduce_axis(cols, "k")
    body = ((lambda i: cp.reduce_sum(X[i, k] * X[i, k], k)) if square
            else (lambda i: cp.reduce_sum(X[i, k], k)))
    R = cp.compute((rows,), body, "R")
    s = IRSchedule(cp.lower("row_reduce", [X, R]))
    loops = s.get_loops("R")
    s.bind(loops[0], "blockIdx.x")
    threads = min(1024, cols)
    if cols > threads:
        _, inner = s.split(loops[1], [-1, threads])
        s.bind(inner, "threadIdx.x")
    else:
        s.bind(loops[1], "threadIdx.x")
    return build_cuda(s.func, arch="auto")


def col_reduce(rows: int, cols: int) -> Any:
    X = cp.placeholder((rows, cols), "float32", "X")
    k = cp.reduce_axis(rows, "k")
    R = cp.compute((cols,), lambda j: cp.reduce_sum(X[k, j], k), "R")
    s = IRSchedule(cp.lower("col_reduce", [X, R]))
    outer, inner = s.split(s.get_loops("R")[0], [-1, 256])  # threads over columns: coalesced
    s.bind(outer, "blockIdx.x")
    s.bind(inner, "threadIdx.x")
    return build_cuda(s.func, arch="auto")


def rms_scale(rows: int, cols: int) -> Any:
    X = cp.placeholder((rows, cols), "float32", "X")
    S = cp.placeholder((rows,), "float32", "S")
    W = cp.placeholder((cols,), "float32", "W")
    Y = cp.compute((rows, cols), lambda i, j: X[i, j] * cp.rsqrt(S[i] / float(cols) + 1e-6) * W[j], "Y")
    s = IRSchedule(cp.lower("rms_scale", [X, S, W, Y]))
    _bind_flat(s, "Y")
    return build_cuda(s.func, arch="auto", fast_math=True)


def _row_stat(s: Schedule, block: str, threads: int) -> None:
    """One block per row; thread t accumulates X[i, ko * threads + t] serially, then a block reduce."""
    i, k = s.get_loops(block)
    s.bind(i, "blockIdx.x")
    ko, ki = s.split(k, [-1, threads])
    s.reorder([ki, ko])
    s.bind(ki, "threadIdx.x")
    s.factorize_reduction(ki, 1)
    s.set_buffer(block, "local")
    s.set_buffer(f"{block}_rf", "local")


def _row_tail(s: Schedule, block: str, threads: int) -> None:
    i, j = s.get_loops(block)
    s.bind(i, "blockIdx.x")
    _, ji = s.split(j, [-1, threads])
    s.bind(ji, "threadIdx.x")


def softmax_schedule(rows: int, cols: int, threads: int = 256) -> Any:
    """Y = exp(X - max X) / sum exp(X - max X) over each row, one kernel."""
    X = cp.placeholder((rows, cols), "float32", "X")
    k1, k2 = cp.reduce_axis(cols, "k1"), cp.reduce_axis(cols, "k2")
    M = cp.compute((rows,), lambda i: cp.reduce_max(X[i, k1], k1), "M")
    E = cp.compute((rows, cols), lambda i, j: cp.exp(X[i, j] - M[i]), "E")
    S = cp.compute((rows,), lambda i: cp.reduce_sum(E[i, k2], k2), "S")
    Y = cp.compute((rows, cols), lambda i, j: E[i, j] / S[i], "Y")
    s = IRSchedule(cp.lower("softmax", [X, Y]))
    s.compute_inline("E")
    for block in ("M", "S"):
        _row_stat(s, block, threads)
    _row_tail(s, "Y", threads)
    return s


def layernorm_schedule(rows: int, cols: int, threads: int = 256, eps: float = 1e-5) -> Any:
    """Y = (X - mean) * rsqrt(var + eps) * W + B over each row (two-pass variance), one kernel."""
    X = cp.placeholder((rows, cols), "float32", "X")
    W = cp.placeholder((cols,), "float32", "W")
    B = cp.placeholder((cols,), "float32", "B")
    k1, k2 = cp.reduce_axis(cols, "k1"), cp.reduce_axis(cols, "k2")
    inv = 1.0 / cols
    Sum = cp.compute((rows,), lambda i: cp.reduce_sum(X[i, k1], k1), "Sum")
    D = cp.compute((rows, cols), lambda i, j: X[i, j] - Sum[i] * inv, "D")
    Sq = cp.compute((rows,), lambda i: cp.reduce_sum(D[i, k2] * D[i, k2], k2), "Sq")
    Y = cp.compute((rows, cols), lambda i, j: D[i, j] * cp.rsqrt(Sq[i] * inv + eps) * W[j] + B[j], "Y")
    s = IRSchedule(cp.lower("layernorm", [X, W, B, Y]))
    s.compute_inline("D")
    for block in ("Sum", "Sq"):
        _row_stat(s, block, threads)
    _row_tail(s, "Y", threads)
    return s


def rmsnorm_schedule(rows: int, cols: int, threads: int = 256, eps: float = 1e-6) -> Any:
    """Y = X * rsqrt(mean(X^2) + eps) * W over each row, one kernel."""
    X = cp.placeholder((rows, cols), "float32", "X")
    W = cp.placeholder((cols,), "float32", "W")
    k = cp.reduce_axis(cols, "k")
    Sq = cp.compute((rows,), lambda i: cp.reduce_sum(X[i, k] * X[i, k], k), "Sq")
    Y = cp.compute((rows, cols), lambda i, j: X[i, j] * cp.rsqrt(Sq[i] * (1.0 / cols) + eps) * W[j], "Y")
    s = IRSchedule(cp.lower("rmsnorm", [X, W, Y]))
    _row_stat(s, "Sq", threads)
    _row_tail(s, "Y", threads)
    return s


def _checked(name: str, ours: Callable[[], Any], reference: Callable[[], Any], tol: float = 1e-3) -> None:
    import torch  # noqa: PLC0415  # pyright: ignore[reportMissingImports] (optional)

    got, want = ours(), reference()
    if not torch.allclose(got, want, rtol=tol, atol=tol):
        err = (got - want).abs().max().item()
        raise SystemExit(f"bench_cuda: '{name}' differs from PyTorch (max abs error {err:.3g}); not timing "
                         "it")


def _time(fn: Callable[[], Any], repeat: int) -> float:
    import torch  # noqa: PLC0415  # pyright: ignore[reportMissingImports] (optional)

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1e-3)
    return statistics.median(times)


def copy_bandwidth(repeat: int) -> float:
    """Device-to-device copy bandwidth in GB/s (read + write counted)."""
    import torch  # noqa: PLC0415  # pyright: ignore[reportMissingImports] (optional)

    src = torch.empty(1 << 28, dtype=torch.float32, device="cuda")
    dst = torch.empty_like(src)
    seconds = _time(lambda: dst.copy_(src), repeat)
    return 2 * src.numel() * 4 / seconds / 1e9


def main(argv: list[str] | None = None) -> None:
    import torch  # noqa: PLC0415  # pyright: ignore[reportMissingImports] (optional)

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--no-compile", action="store_true",
                        help="skip torch.compile (its Triton builds take minutes)")
    args = parser.parse_args(argv)
    peak = copy_bandwidth(args.repeat)
    print(f"device copy bandwidth: {peak:.0f} GB/s")
    rows: list[tuple[str, float, Callable[[], Any], Callable[[], Any]]] = []

    n = 1 << 28
    x = torch.randn(n, device="cuda")
    k = elementwise(n)
    rows.append(("elementwise 2^28", 2 * n * 4, lambda: k(x), lambda: x * 2 + 1))

    for r, c in ((4096, 4096),):
        xb = torch.randn(r, c, device="cuda")
        b = torch.randn(c, device="cuda")
        kg = bias_gelu(r, c)
        rows.append((f"bias+gelu [{r},{c}]", 2 * r * c * 4, lambda: kg(xb, b),
                     lambda: torch.nn.functional.gelu(xb + b)))
        kr, kc = row_reduce(r, c), col_reduce(r, c)
        rows.append((f"row reduce [{r},{c}]", r * c * 4, lambda: kr(xb), lambda: xb.sum(dim=1)))
        rows.append((f"col reduce [{r},{c}]", r * c * 4, lambda: kc(xb), lambda: xb.sum(dim=0)))

    for r, c in ((2048, 768), (32768, 4096)):
        xr = torch.randn(r, c, device="cuda")
        w, bb = torch.randn(c, device="cuda"), torch.randn(c, device="cuda")
        ksq, ksc = row_reduce(r, c, square=True), rms_scale(r, c)
        krms = build_cuda(rmsnorm_schedule(r, c).func, arch="auto", fast_math=True)
        ksm = build_cuda(softmax_schedule(r, c).func, arch="auto", fast_math=True)
        kln = build_cuda(layernorm_schedule(r, c).func, arch="auto", fast_math=True)

        def cinn_rms2(xr: Any = xr, w: Any = w, ksq: Any = ksq, ksc: Any = ksc) -> Any:
            return ksc(xr, ksq(xr), w)

        def torch_rms(xr: Any = xr, w: Any = w) -> Any:
            return xr * torch.rsqrt(xr.pow(2).mean(-1, keepdim=True) + 1e-6) * w

        rows.append((f"rmsnorm [{r},{c}] (2 kernels)", 2 * r * c * 4, cinn_rms2, torch_rms))
        rows.append((f"rmsnorm [{r},{c}]", 2 * r * c * 4,
                     lambda krms=krms, xr=xr, w=w: krms(xr, w), torch_rms))
        rows.append((f"softmax [{r},{c}]", 2 * r * c * 4, lambda ksm=ksm, xr=xr: ksm(xr),
                     lambda xr=xr: torch.softmax(xr, dim=-1)))
        rows.append((f"layernorm [{r},{c}]", 2 * r * c * 4, lambda kln=kln, xr=xr, w=w, bb=bb: kln(xr, w, bb),
                     lambda xr=xr, w=w, bb=bb, c=c: torch.nn.functional.layer_norm(xr, (c,), w, bb, 1e-5)))

    print(f"{'workload':34s} {'cinn ms':>9s} {'GB/s':>7s} {'%copy':>6s} {'eager ms':>9s} {'compile ms':>11s}")
    for name, nbytes, ours, eager in rows:
        _checked(name, ours, eager)
        t_ours, t_eager = _time(ours, args.repeat), _time(eager, args.repeat)
        t_comp = float("nan")
        if not args.no_compile:
            try:
                t_comp = _time(torch.compile(eager), args.repeat)
            except Exception:  # torch.compile unavailable (no triton): report eager only
                pass
        gbs = nbytes / t_ours / 1e9
        print(f"{name:34s} {t_ours * 1e3:9.3f} {gbs:7.0f} {100 * gbs / peak:5.0f}% {t_eager * 1e3:9.3f} "
              f"{t_comp * 1e3:11.3f}")


if __name__ == "__main__":
    main()
