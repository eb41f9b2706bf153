"""Attention rows of `cinn-py bench`: the fused attention kernels (`flash_attention` forward and
`flash_attention_grad`, `cinn_py.frontend.ops.attention`) against torch's CPU SDPA, forward and
forward + backward, in the same run.

Rows (BERT-base heads: 12 heads of 64; batch x heads x seq x head dim):

    attention_128          8 x 12 x 128 x 64, no mask
    attention_2048         1 x 12 x 2048 x 64, no mask
    attention_causal_2048  1 x 12 x 2048 x 64, causal

Ours: two compiled NetBuilder programs, the forward (q, k, v -> packed out and lse) and
forward + backward (the forward, then the backward kernel fed the forward's output and a
cotangent: dq, dk, dv). torch: `F.scaled_dot_product_attention` under `no_grad`, and with
autograd (`out.backward(cotangent)`), on `torch.set_num_threads(threads)` threads (2 by
default) with `OMP_WAIT_POLICY=PASSIVE` (set before torch is first imported: spinning OpenMP
workers slow torch down several times on a shared machine). The four are timed in interleaved
rounds (each round calls each once), medians reported; results are checked against torch first.
Target (issue 22): fwd + bwd >= 1.0x torch's SDPA.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cinn_py.diagnostics import CinnError

__all__ = ["ATTENTION", "AttentionBenchError", "AttentionCase", "format_attention_table", "run_attention",
           "torch_available"]

TARGET_X_TORCH = 1.0


@dataclass(frozen=True)
class AttentionCase:
    name: str
    batch: int
    heads: int
    seq: int
    head_dim: int
    causal: bool = False

    def tiny(self) -> AttentionCase:
        return AttentionCase(self.name, 1, 2, 40 if self.seq > 128 else 24, 16, self.causal)

    @property
    def shape(self) -> dict[str, int]:
        return {"b": self.batch, "h": self.heads, "seq": self.seq, "e": self.head_dim}


ATTENTION: dict[str, AttentionCase] = {c.name: c for c in (
    AttentionCase("attention_128", 8, 12, 128, 64),
    AttentionCase("attention_2048", 1, 12, 2048, 64),
    AttentionCase("attention_causal_2048", 1, 12, 2048, 64, causal=True),
)}


def _programs(case: AttentionCase) -> tuple[Any, Any]:
    """(forward, forward + backward) NetBuilder programs."""
    from cinn_py.frontend import NetBuilder  # noqa: PLC0415

    shape = [case.batch, case.heads, case.seq, case.head_dim]
    built = []
    for with_grad in (False, True):
        nb = NetBuilder(f"bench_{case.name}{'_train' if with_grad else ''}")
        q, k, v = (nb.create_input("float32", shape, n) for n in ("Q", "K", "V"))
        packed = nb.flash_attention(q, k, v, causal=case.causal)
        if not with_grad:
            built.append(nb.build([packed]))
            continue
        dpacked = nb.create_input("float32", [int(packed.shape[0])], "DPACKED")
        built.append(nb.build([packed,
                               nb.flash_attention_grad(q, k, v, packed, dpacked, causal=case.causal)]))
    return built[0], built[1]


def torch_available() -> bool:
    import importlib.util  # noqa: PLC0415

    return importlib.util.find_spec("torch") is not None


def _torch(threads: int) -> Any:
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        import torch  # noqa: PLC0415  # pyright: ignore[reportMissingImports] (optional)
    except ImportError:
        raise AttentionBenchError("bench: the attention rows compare with torch's SDPA; install "
                                  "torch") from None

    torch.set_num_threads(threads)
    return torch


def run_case(case: AttentionCase, repeat: int, threads: int | None, tiny: bool) -> dict[str, Any]:
    """Build, check against torch and time one case (module docstring); its result row."""
    from cinn_py import compile_program  # noqa: PLC0415
    from cinn_py.frontend.ops.attention import packed_sizes  # noqa: PLC0415
    from cinn_py.runtime.threadpool import num_threads_override  # noqa: PLC0415
    from cinn_py.tools.bench import time_alternating  # noqa: PLC0415

    shape = case.tiny() if tiny else case
    torch = _torch(threads or 2)
    F = torch.nn.functional
    fwd_prog, train_prog = _programs(shape)
    fwd = compile_program(fwd_prog, "x86", schedule="auto")
    train = compile_program(train_prog, "x86", schedule="auto")
    rng = np.random.default_rng(0)
    dims = (shape.batch, shape.heads, shape.seq, shape.head_dim)
    q, k, v = (rng.standard_normal(dims).astype(np.float32) for _ in range(3))
    sizes = packed_sizes(q.shape, k.shape, v.shape)
    dout = rng.standard_normal(dims).astype(np.float32)
    dpacked = np.concatenate([dout.ravel(), np.zeros(sizes["lse"], np.float32)])
    tq, tk, tv = (torch.from_numpy(a).requires_grad_() for a in (q, k, v))
    tdout = torch.from_numpy(dout)
    max_err = _check(case.name, torch, F, (q, k, v), (tq, tk, tv), tdout, train(q, k, v, dpacked), sizes,
                     shape.causal)

    def torch_fwd() -> None:
        with torch.no_grad():
            F.scaled_dot_product_attention(tq, tk, tv, is_causal=shape.causal)

    def torch_train() -> None:
        F.scaled_dot_product_attention(tq, tk, tv, is_causal=shape.causal).backward(tdout)

    fns = [lambda: fwd(q, k, v), lambda: train(q, k, v, dpacked), torch_fwd, torch_train]
    load_before = os.getloadavg()
    with num_threads_override(threads):
        times = [statistics.median(t) * 1e3 for t in time_alternating(fns, repeat, warmup=2)]
    row = {"kind": "attention", "name": case.name, "shape": shape.shape, "causal": shape.causal,
           "fwd_ms": times[0], "fwd_bwd_ms": times[1], "torch_fwd_ms": times[2], "torch_fwd_bwd_ms": times[3],
           "x_torch_fwd": times[2] / times[0], "x_torch": times[3] / times[1], "max_abs_err": max_err,
           "repeat": repeat, "torch_threads": torch.get_num_threads(), "load_before": load_before,
           "load_after": os.getloadavg()}
    row["targets"] = ({} if tiny
                      else {f">={TARGET_X_TORCH:g}x torch SDPA fwd+bwd": row["x_torch"] >= TARGET_X_TORCH})
    return row


def _check(name: str, torch: Any, F: Any, arrays: Sequence[np.ndarray], tensors: Sequence[Any], tdout: Any,
           got: Sequence[np.ndarray], sizes: dict[str, int], causal: bool) -> float:
    out = F.scaled_dot_product_attention(*tensors, is_causal=causal)
    out.backward(tdout)
    want = [out.detach().numpy().ravel(), *(t.grad.numpy().ravel() for t in tensors)]
    packed, grads = got
    mine = [packed[:sizes["out"]], grads[:sizes["dq"]], grads[sizes["dq"]:sizes["dq"] + sizes["dk"]],
            grads[sizes["dq"] + sizes["dk"]:]]
    for t in tensors:
        t.grad = None
    err = 0.0
    for label, a, b in zip(("out", "dq", "dk", "dv"), mine, want):
        if not np.allclose(a, b, rtol=1e-3, atol=1e-3):
            raise CinnError(f"bench '{name}': {label} differs from torch's SDPA: max abs error "
                            f"{float(np.max(np.abs(a - b))):.3g}")
        err = max(err, float(np.max(np.abs(a - b))))
    return err


def run_attention(names: Sequence[str], repeat: int = 20, threads: int | None = None,
                  tiny: bool = False) -> list[dict[str, Any]]:
    """One row per named case: `fwd_ms, fwd_bwd_ms` (ours), `torch_fwd_ms, torch_fwd_bwd_ms`,
    `x_torch_fwd, x_torch` (torch ms / ours), `max_abs_err` (vs torch), `load_before/after`, `targets`."""
    return [run_case(ATTENTION[n], repeat, threads, tiny) for n in names]


def format_attention_table(rows: Sequence[dict[str, Any]]) -> str:
    """The attention rows as a fixed-width table (medians of interleaved rounds, with the load)."""
    if not rows:
        return ""
    first, last = rows[0], rows[-1]
    load = "/".join(f"{v:.2f}" for v in first["load_before"])
    head = (f"attention vs torch SDPA (torch {first['torch_threads']} threads, OMP_WAIT_POLICY="
            f"{os.environ.get('OMP_WAIT_POLICY', '-')}; medians of {first['repeat']} interleaved rounds; "
            "load "
            f"average before {load}, after {'/'.join(f'{v:.2f}' for v in last['load_after'])})")
    header = ("workload", "BxHxSxE", "causal", "fwd ms", "torch fwd ms", "x torch fwd", "fwd+bwd ms",
              "torch fwd+bwd ms", "x torch", "targets")
    table: list[tuple[str, ...]] = [header]
    for r in rows:
        targets = ", ".join(f"{k} {'ok' if ok else 'MISSED'}" for k, ok in r["targets"].items()) or "-"
        table.append((r["name"], "x".join(str(v) for v in r["shape"].values()),
                      "yes" if r["causal"] else "no",
                      f"{r['fwd_ms']:.2f}", f"{r['torch_fwd_ms']:.2f}", f"{r['x_torch_fwd']:.2f}x",
                      f"{r['fwd_bwd_ms']:.2f}", f"{r['torch_fwd_bwd_ms']:.2f}",
                      f"{r['x_torch']:.2f}x", targets))
    widths = [max(len(row[k]) for row in table) for k in range(len(header))]
    lines = [head]
    for k, row in enumerate(table):
        lines.append("  ".join(c.ljust(w) if i in (0, 1, 2, len(header) - 1) else c.rjust(w)
                               for i, (c, w) in enumerate(zip(row, widths))).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


class AttentionBenchError(CinnError):
    """An attention row cannot run (torch is not installed)."""
