"""Shared helpers of the block-primitive tests: resolve nodes, run before/after on random inputs."""

from __future__ import annotations

import numpy as np

from cinn_py.ir import For, LoweredFunc, ScheduleBlockRealize, Var
from schedules.analysis.loops import enclosing_loops, find_block
from tests.schedules._oracle import run


def block(f: LoweredFunc, name: str) -> ScheduleBlockRealize:
    return find_block(f, name)


def loops(f: LoweredFunc, name: str) -> list[For]:
    return enclosing_loops(f, find_block(f, name))


def assert_same_results(before: LoweredFunc, after: LoweredFunc,
                        bindings: tuple[dict[str, int], ...] = ({},)) -> None:
    """Run both functions on the same random inputs for each symbolic-dim binding."""
    rng = np.random.default_rng(0)
    for binding in bindings:
        inputs = {}
        for t in before.inputs:
            shape = tuple(binding[d.name] if isinstance(d, Var) else int(d.value) for d in t.shape)  # type: ignore[attr-defined]
            inputs[t.name] = rng.random(shape, dtype=np.float32)
        want, got = run(before, inputs), run(after, inputs)
        for name, value in want.items():
            np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=1e-5)
