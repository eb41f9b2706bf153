"""Acceptance: the seed walk-through (seed 003 §2.2 steps (2)-(7)) on the seed example.

align -> tile sp [-1, 16, 32] and rb [-1, 32] -> compute_inline the elementwise producers ->
two-step reduce (factorize_reduction on the threadIdx.x-bound rb loop) -> loop fusion
(simple_compute_at of F under C's spatial loops) -> bind blockIdx.x / threadIdx.y / threadIdx.x.

The seed tiles sp as [-1, 16, 64]; with threadIdx.y = 64 and threadIdx.x = 32 that is 2048
threads per block, over CUDA's 1024 limit (bind rejects it), so the inner tile is 32 here.
The printed result is the golden file `tests/golden/schedules/seed_walkthrough.ir`
(`CINN_PY_UPDATE_GOLDENS=1` rewrites it), and it interprets equal to numpy for several
bindings of the symbolic dims.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from cinn_py.ir import For, LoweredFunc, print_ir
from schedules.analysis.loops import enclosing_loops, find_block
from schedules.primitives.align import align_iter_space
from schedules.primitives.compute_at import simple_compute_at
from schedules.primitives.compute_inline import compute_inline
from schedules.primitives.for_type import bind
from schedules.primitives.reduction import factorize_reduction
from schedules.primitives.split import split
from tests.schedules._oracle import run
from tests.schedules.seed_program import seed_func, seed_reference

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "schedules" / "seed_walkthrough.ir"


def loops(f: LoweredFunc, name: str) -> list[For]:
    return enclosing_loops(f, find_block(f, name))


def schedule_seed(f: LoweredFunc) -> LoweredFunc:
    f = align_iter_space(f)                                        # (2) [sp, rb] for every block
    for name in "ABCDEF":                                          # (3) tile every nest alike
        f, _ = split(f, loops(f, name)[0], [-1, 16, 32])
        if len(loops(f, name)) == 4:
            f, _ = split(f, loops(f, name)[3], [-1, 32])
    for name in "ABDE":                                            # (4) inline elementwise producers
        f = compute_inline(f, find_block(f, name))
    f = bind(f, loops(f, "C")[3], "threadIdx.x")                   # (5) two-step reduce
    f, _ = factorize_reduction(f, loops(f, "C")[3], 2)
    f = simple_compute_at(f, find_block(f, "F"), loops(f, "C")[2])  # (6) loop fusion
    f = bind(f, loops(f, "C")[1], "blockIdx.x")                    # (7) CUDA axes
    f = bind(f, loops(f, "C")[2], "threadIdx.y")
    return bind(f, loops(f, "F")[3], "threadIdx.x")


@pytest.fixture(scope="module")
def scheduled() -> tuple[LoweredFunc, LoweredFunc]:
    from cinn_py.ir import reset_name_ids

    reset_name_ids()
    before = seed_func()
    return before, schedule_seed(before)


def test_golden(scheduled: tuple[LoweredFunc, LoweredFunc]) -> None:
    text = print_ir(scheduled[1]) + "\n"
    if os.environ.get("CINN_PY_UPDATE_GOLDENS") or not GOLDEN.exists():
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text()


def test_structure(scheduled: tuple[LoweredFunc, LoweredFunc]) -> None:
    f = scheduled[1]
    names = [b.name for b in __import__("schedules.analysis.loops", fromlist=["all_blocks"]).all_blocks(f)]
    assert names == ["C__reduce_init", "C_rf__reduce_init", "C_rf", "C", "F"]
    axes = [lp.bind_axis for lp in loops(f, "C_rf")]
    assert axes == [None, "blockIdx.x", "threadIdx.y", "threadIdx.x", None]
    assert [lp.bind_axis for lp in loops(f, "F")] == [None, "blockIdx.x", "threadIdx.y", "threadIdx.x", None]
    assert loops(f, "F")[:3] == loops(f, "C")[:3]


@pytest.mark.parametrize("s1,s2", [(1, 1), (3, 5), (4, 7)])
def test_matches_numpy(scheduled: tuple[LoweredFunc, LoweredFunc], s1: int, s2: int) -> None:
    before, after = scheduled
    x = np.random.default_rng(s1 * 10 + s2).random((s1, s2, 1024), dtype=np.float32)
    want = seed_reference(x)
    np.testing.assert_allclose(run(before, {"X": x})["F"], want, rtol=1e-5)
    np.testing.assert_allclose(run(after, {"X": x})["F"], want, rtol=1e-5)
