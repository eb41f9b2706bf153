"""Random but plausible schedule sequences for the fuzzer.

`apply_random_schedule(sch, rng, steps, target)` draws `steps` primitives of `IRSchedule` with
arguments that usually make sense (split factors that divide the extent or use -1, adjacent
loops to fuse, a permutation of one chain to reorder, a vector width dividing a constant extent,
a consumer's loop for compute_at, a reduce loop for rfactor...) and applies them. A primitive
whose precondition fails raises `ScheduleError` and leaves the schedule untouched; that is an
expected outcome and is recorded, not raised. Any other exception propagates to the harness.

The schedule object is duck-typed (this module is part of the core package, which must not
import `schedules`); the harness passes an `IRSchedule`.
"""

from __future__ import annotations

import random
from typing import Any

from cinn_py.diagnostics import ScheduleError
from cinn_py.ir import For, IntImm, walk
from cinn_py.target import Target, TargetLike

X86_KINDS = ("split", "split", "fuse", "reorder", "parallel", "vectorize", "unroll", "annotate",
             "flatten_loops", "compute_inline", "compute_inline", "reverse_compute_inline", "compute_at",
             "simple_compute_at", "rfactor", "factorize_reduction", "add_unit_loop", "set_buffer")
CUDA_KINDS = X86_KINDS + ("bind", "bind", "sync_threads")


def loop_extents(sch: Any) -> dict[int, int | None]:
    """Loop uid -> constant extent (None when symbolic) of the schedule's current function."""
    return {n.uid: (int(n.extent.value) if isinstance(n.extent, IntImm) else None)
            for n in walk(sch.func.body) if isinstance(n, For)}


def _divisor_factors(extent: int | None, rng: random.Random) -> list[int]:
    if extent is None:
        return rng.choice(([-1, 2], [4, -1], [-1, 1], [2, -1, 2]))
    divisors = [d for d in range(2, extent) if extent % d == 0]
    if divisors and rng.random() < 0.7:
        d = rng.choice(divisors)
        return rng.choice(([extent // d, d], [-1, d], [d, -1]))
    return rng.choice(([-1, 3], [5, -1], [-1, 1], [extent, 1] if extent else [-1, 2]))


def apply_step(sch: Any, kind: str, rng: random.Random, target: TargetLike = "x86") -> None:
    """Apply one primitive of `kind` with drawn arguments (may raise ScheduleError)."""
    blocks = sch.get_all_blocks()
    if not blocks:
        return
    block = rng.choice(blocks)
    loops = sch.get_loops(block)
    loop = rng.choice(loops)
    extents = loop_extents(sch)
    if kind == "split":
        sch.split(loop, _divisor_factors(extents.get(loop.uid), rng))
    elif kind in ("fuse", "flatten_loops"):
        start = rng.randrange(len(loops))
        getattr(sch, kind)(loops[start:start + rng.choice((2, 2, 3))])
    elif kind == "reorder":
        chosen = loops[-rng.choice((2, 3)):]
        order = list(chosen)
        rng.shuffle(order)
        sch.reorder(order)
    elif kind in ("parallel", "unroll"):
        getattr(sch, kind)(loop)
    elif kind == "vectorize":
        extent = extents.get(loops[-1].uid)
        widths = [w for w in (2, 4, 8, 16) if extent and extent % w == 0] or [4]
        sch.vectorize(loops[-1] if rng.random() < 0.8 else loop, rng.choice(widths))
    elif kind == "annotate":
        sch.annotate(block, rng.choice(("fuzz_key", "unroll_hint")), rng.choice((1, 2.5, True, "x")))
    elif kind in ("compute_inline", "reverse_compute_inline"):
        getattr(sch, kind)(block)
    elif kind in ("compute_at", "simple_compute_at"):
        other = rng.choice(blocks)
        getattr(sch, kind)(block, rng.choice(sch.get_loops(other)))
    elif kind in ("rfactor", "factorize_reduction"):
        # the reduce loop is usually the innermost loop of a reduction's update block
        reduce_loop = loops[-1] if rng.random() < 0.7 else loop
        getattr(sch, kind)(reduce_loop, rng.randint(0, max(len(loops) - 1, 0)))
    elif kind == "add_unit_loop":
        sch.add_unit_loop(block)
    elif kind == "set_buffer":
        gpu = Target.parse(target).is_gpu  # x86 buffers stay global (and draw no random number)
        sch.set_buffer(block, rng.choice(("global", "local", "shared")) if gpu else "global")
    elif kind == "bind":
        sch.bind(loop, rng.choice(("blockIdx.x", "threadIdx.x", "blockIdx.y", "threadIdx.y")))
    elif kind == "sync_threads":
        sch.sync_threads(loop if rng.random() < 0.5 else block, after=rng.random() < 0.7)
    else:
        raise ValueError(f"unknown schedule step kind {kind!r}")


def apply_random_schedule(sch: Any, rng: random.Random, steps: int,
                          target: TargetLike = "x86") -> list[tuple[str, str]]:
    """Apply `steps` random primitives; returns (kind, "applied" | "rejected: <error class>") per step."""
    kinds = CUDA_KINDS if Target.parse(target).is_gpu else X86_KINDS
    log = []
    for _ in range(steps):
        kind = rng.choice(kinds)
        try:
            apply_step(sch, kind, rng, target)
        except ScheduleError as exc:
            log.append((kind, f"rejected: {type(exc).__name__}"))
            continue
        log.append((kind, "applied"))
    return log


def bind_for_gpu(sch: Any) -> None:
    """Make every top-level loop nest a GPU kernel: fuse its outer loops and split the result
    over blockIdx.x / threadIdx.x (CINN's default GPU schedule, simplified). Nests whose
    loops cannot be fused/bound are left as they are (ScheduleError is swallowed per nest)."""
    for block in sch.get_all_blocks():
        try:
            loops = sch.get_loops(block)
            outer = loops[0]
            extents = loop_extents(sch)
            if extents.get(outer.uid) not in (None, 1) and extents[outer.uid] > 64:  # type: ignore[operator]
                bx, tx = sch.split(outer, [-1, 64])
            else:
                bx, tx = sch.split(outer, [-1, 1])
            sch.bind(bx, "blockIdx.x")
            sch.bind(tx, "threadIdx.x")
        except ScheduleError:
            continue
