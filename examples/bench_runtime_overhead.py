"""Benchmark: what running a compiled program costs beyond its kernels' own time.

    python examples/bench_runtime_overhead.py [--kernels 20] [--rounds 15] [--batch 300]

A chain of `--kernels` tiny groups (4x4 float32 row sums and column maxima, each fused with a
broadcast elementwise op) runs three ways, interleaved round by round so that all see the same
load: as one native call (`CompiledProgram.native`, the default on x86), kernel by kernel from
Python (`native = None`, the fallback), and `--kernels` numpy `np.add` calls on 4x4 arrays for
scale. One thread (the kernels are far too small to split). Prints the fastest round's time per
call and per kernel, the entry function alone (no Python), and the load average.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

import numpy as np

from cinn_py.frontend import NetBuilder
from cinn_py.frontend.program import Program
from cinn_py.pipeline import compile_program
from cinn_py.runtime import threadpool


def chain(kernels: int) -> Program:
    nb = NetBuilder("chain")
    x = nb.create_input("float32", [4, 4], "x")
    v = x
    for k in range(kernels):
        if k % 2 == 0:
            v = nb.add(x, nb.reduce_sum(v, [1], keep_dim=True))
        else:
            v = nb.multiply(x, nb.reduce_max(v, [0], keep_dim=True))
    return nb.build([v])


def best(rounds: int, batch: int, fns: dict[str, Callable[[], object]]) -> dict[str, float]:
    """Microseconds per call of each function: the fastest of `rounds` interleaved batches."""
    result = {name: float("inf") for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            start = time.perf_counter()
            for _ in range(batch):
                fn()
            result[name] = min(result[name], (time.perf_counter() - start) / batch * 1e6)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or '').splitlines()[0])
    parser.add_argument("--kernels", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--batch", type=int, default=300)
    args = parser.parse_args()
    program = chain(args.kernels)
    native = compile_program(program, "x86", schedule="auto")
    per_kernel = compile_program(program, "x86", schedule="auto")
    per_kernel.native = None
    assert native.native is not None, native.native_reason
    x = np.random.default_rng(0).random((4, 4), dtype=np.float32)
    y = x.copy()
    np.testing.assert_allclose(native(x), per_kernel(x), rtol=1e-6)
    sized = native.native.sized({})
    out = np.empty((4, 4), np.float32)
    sized.pointers[:2] = [x.ctypes.data, out.ctypes.data]
    entry = native.native.entry.function

    def ufuncs() -> None:
        for _ in range(args.kernels):
            np.add(x, y)

    load = os.getloadavg()[0]
    with threadpool.num_threads_override(1):
        times = best(args.rounds, args.batch, {
            "native graph call": lambda: native(x),
            "entry function alone": lambda: entry(sized.pointers_address, sized.arena_address,
                                                  sized.offsets_address, sized.symbols_address),
            "kernel by kernel": lambda: per_kernel(x),
            f"{args.kernels} x np.add": ufuncs,
        })
    k = args.kernels
    print(f"{k} kernels, 4x4 float32, 1 thread; load average {load:.2f} -> {os.getloadavg()[0]:.2f}")
    for name, us in times.items():
        print(f"  {name:22s} {us:8.2f} us/call  {us / k:6.2f} us/kernel")
    overhead = times["native graph call"] - times["entry function alone"]
    print(f"  Python side of a native call: {overhead:.2f} us; np.add: {times[f'{k} x np.add'] / k:.2f} "
          "us/call")


if __name__ == "__main__":
    main()
