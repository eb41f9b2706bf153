"""The baselines a benchmark row is compared with: numpy (the reference the result is checked
against), PyTorch eager when installed, and the optional peers of `bench_peers` (each timed on
the same arrays, its result checked against numpy; a peer that is missing, has no version of the
workload, fails or computes a wrong result gets a note instead of a time: a peer never stops the
benchmark).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from cinn_py.tools.bench_timing import _torch, check_result, time_call
from cinn_py.tools.bench_workloads import Workload


def _compare(row: dict[str, Any], workload: Workload, arrays: list[np.ndarray], repeat: int,
             peers: Sequence[str] = ()) -> None:
    np_times = time_call(lambda: workload.numpy(*arrays), repeat, warmup=1, budget_s=3.0)
    row["numpy_ms"] = statistics.median(np_times) * 1e3
    row["x_numpy"] = row["numpy_ms"] / row["ms"]
    row["auto_x_numpy"] = None if row.get("auto_ms") is None else row["numpy_ms"] / row["auto_ms"]
    torch = _torch()
    if torch is None or workload.torch is None:
        row["torch_ms"] = row["x_torch"] = None
    else:
        tensors = [torch.from_numpy(a) for a in arrays]
        with torch.no_grad():
            torch_fn = workload.torch
            t_times = time_call(lambda: torch_fn(torch, *tensors), repeat, warmup=2, budget_s=3.0)
        row["torch_ms"] = statistics.median(t_times) * 1e3
        row["x_torch"] = row["torch_ms"] / row["ms"]
    for peer in peers:
        row[_peer_key(peer)] = _time_peer(peer, workload, arrays, repeat, row.setdefault("peer_notes", {}))


def _peer_key(peer: str) -> str:
    return peer.replace(".", "_").replace("-", "_") + "_ms"


def _time_peer(peer: str, workload: Workload, arrays: list[np.ndarray], repeat: int,
               notes: dict[str, str]) -> float | None:
    """Median ms of `peer` (see `bench_peers`) on `workload`, its result checked against numpy;
    None (with a note) when the peer is not installed, has no version of the workload, fails
    or computes a wrong result: a peer never stops the benchmark."""
    try:
        call = _peer_call(peer, workload, arrays, notes)
        if call is None:
            return None
        with _no_grad():
            got = call()
            check_result(f"{workload.name} ({peer})", np.asarray(got), workload.numpy(*arrays), workload.rtol,
                         workload.atol)
            times = time_call(call, repeat, warmup=2, budget_s=5.0)
    except Exception as err:  # noqa: BLE001 (a peer's own failure is reported, never fatal)
        first = str(err).splitlines()[0][:200] if str(err) else ""
        notes[peer] = f"{type(err).__name__}: {first}"
        return None
    return statistics.median(times) * 1e3


def _peer_call(peer: str, workload: Workload, arrays: list[np.ndarray],
               notes: dict[str, str]) -> Callable[[], Any] | None:
    """A no-argument call of `peer` on `arrays` returning a numpy array (None: unavailable)."""
    from cinn_py.tools import bench_peers  # noqa: PLC0415

    if peer == "torch.compile":
        torch = _torch()
        if torch is None or workload.torch is None:
            notes[peer] = "torch not installed" if torch is None else "no PyTorch version"
            return None
        tensors = [torch.from_numpy(a) for a in arrays]
        compiled = bench_peers.torch_compiled(torch, workload.torch)
        return lambda: compiled(*tensors).numpy()
    numba = _optional("numba")
    kernel = None if numba is None else bench_peers.numba_kernel(numba, workload.name)
    if kernel is None:
        notes[peer] = "numba not installed" if numba is None else "no numba version"
        return None
    out = np.empty_like(workload.numpy(*arrays))

    def run() -> np.ndarray:
        kernel(*arrays, out)
        return out
    return run


def _optional(module: str) -> Any:
    try:
        return __import__(module)
    except ImportError:
        return None


def _no_grad() -> Any:
    import contextlib  # noqa: PLC0415

    torch = _torch()
    return contextlib.nullcontext() if torch is None else torch.no_grad()
