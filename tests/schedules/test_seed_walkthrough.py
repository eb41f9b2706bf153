"""Acceptance: the seed walk-through (seed 003 §2.2 steps (2)-(7)) on the seed example.

align -> tile sp [-1, 16, 32] and rb [-1, 32] -> compute_inline the elementwise producers ->
two-step reduce (factorize_reduction over the outer rb tile, then bind that rf loop to
threadIdx.x, as CINN's TileFirstGeneralTactic does) -> loop fusion (simple_compute_at of F under
C's spatial loops) -> bind blockIdx.x / threadIdx.y / threadIdx.x.

The seed tiles sp as [-1, 16, 64]; with threadIdx.y = 64 and threadIdx.x = 32 that is 2048
threads per block, over CUDA's 1024 limit (bind rejects it, see `test_seed_inner_tile_64`), so
the inner tile is 32 here. The printed result is the golden file
`tests/golden/schedules/seed_walkthrough.ir` (`CINN_PY_UPDATE_GOLDENS=1` rewrites it); the trace
replays through JSON and Python to the same IR, and the IR interprets equal to the unscheduled
program and to numpy for several bindings of the symbolic dims.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from cinn_py.interp import run_ir
from cinn_py.ir import LoweredFunc, reset_name_ids
from schedules import BindLimitError, IRSchedule
from schedules.analysis.loops import all_blocks
from tests.schedules.block_helpers import SYM2, check
from tests.schedules.seed_program import seed_func, seed_reference

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "schedules" / "seed_walkthrough.ir"


def schedule_seed(f: LoweredFunc, inner_tile: int = 32) -> IRSchedule:
    sch = IRSchedule(f)
    sch.align_iter_space()                                         # (2) [sp, rb] for every block
    for name in "ABCDEF":                                          # (3) tile every nest alike
        sch.split(sch.get_loops(name)[0], [-1, 16, inner_tile])
        if len(sch.get_loops(name)) == 4:
            sch.split(sch.get_loops(name)[3], [-1, 32])
    for name in "ABDE":                                            # (4) inline elementwise producers
        sch.compute_inline(name)
    sch.factorize_reduction(sch.get_loops("C")[3], 2)              # (5) two-step reduce
    sch.bind(sch.get_loops("C")[3], "threadIdx.x")
    sch.simple_compute_at("F", sch.get_loops("C")[2])              # (6) loop fusion
    sch.bind(sch.get_loops("C")[1], "blockIdx.x")                  # (7) CUDA axes
    sch.bind(sch.get_loops("C")[2], "threadIdx.y")
    sch.bind(sch.get_loops("F")[3], "threadIdx.x")
    return sch


@pytest.fixture(scope="module")
def scheduled() -> tuple[LoweredFunc, IRSchedule]:
    reset_name_ids()
    before = seed_func()
    return before, schedule_seed(before)


def test_golden(scheduled: tuple[LoweredFunc, IRSchedule]) -> None:
    text = str(scheduled[1]) + "\n"
    if os.environ.get("CINN_PY_UPDATE_GOLDENS") or not GOLDEN.exists():
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text()


def test_structure(scheduled: tuple[LoweredFunc, IRSchedule]) -> None:
    sch = scheduled[1]
    assert [b.name for b in all_blocks(sch.func)] == ["C__reduce_init", "C_rf__reduce_init", "C_rf", "C", "F"]
    axes = ["blockIdx.x", "threadIdx.y", "threadIdx.x"]
    for name in ("C_rf", "F"):
        assert [str(lp).split(" for")[0] for lp in sch.get_loops(name)] == \
            ["serial"] + [f"thread_bind[{a}]" for a in axes] + ["serial"]
    assert sch.get_loops("F")[:3] == sch.get_loops("C")[:3]


def test_replay_and_differential(scheduled: tuple[LoweredFunc, IRSchedule]) -> None:
    before, sch = scheduled
    check(before, sch, SYM2)


@pytest.mark.parametrize("s1,s2", [(1, 1), (3, 5)])
def test_matches_numpy(scheduled: tuple[LoweredFunc, IRSchedule], s1: int, s2: int) -> None:
    x = np.random.default_rng(s1 * 10 + s2).random((s1, s2, 1024), dtype=np.float32)
    np.testing.assert_allclose(run_ir(scheduled[1].func, {"X": x})["F"], seed_reference(x), rtol=1e-5)


def test_seed_inner_tile_64() -> None:
    """The seed's own tile (64 threads on y, 32 on x) is over the 1024-thread limit."""
    with pytest.raises(BindLimitError, match="makes 2048 threads per block; the limit is 1024"):
        schedule_seed(seed_func(), inner_tile=64)
