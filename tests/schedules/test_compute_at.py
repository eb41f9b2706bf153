"""compute_at / simple_compute_at: golden IR, one test per rule, differential runs."""

from __future__ import annotations

import importlib

import pytest

from cinn_py.ir import print_ir
from schedules.primitives.align import align_iter_space
from schedules.primitives.split import split
from tests.schedules import sched_programs as P
from tests.schedules.block_helpers import assert_same_results, block, loops
from tests.schedules.seed_program import seed_func

CA = importlib.import_module("schedules.primitives.compute_at")
SYM = ({"S1": 1, "S2": 1}, {"S1": 3, "S2": 5}, {"S1": 4, "S2": 7})


@pytest.fixture()
def aligned() -> object:
    return align_iter_space(seed_func(8))


def test_simple_compute_at_fuses_consumer(aligned: object) -> None:
    f = aligned
    g = CA.simple_compute_at(f, block(f, "F"), loops(f, "E")[0])
    assert loops(g, "F")[0] is loops(g, "E")[0]
    assert loops(g, "F")[1] is not loops(g, "E")[1]
    assert [print_ir(v) for v in block(g, "F").iter_values] == ["(sp / S2)", "(sp % S2)", "rb"]
    assert_same_results(f, g, SYM)


def test_simple_compute_at_tiled_with_guard() -> None:
    from schedules.primitives.compute_inline import compute_inline

    f = align_iter_space(seed_func(8))
    for name in "DE":
        f = compute_inline(f, block(f, name))
    for name in "CF":
        f, _ = split(f, loops(f, name)[0], [-1, 4])
    g = CA.simple_compute_at(f, block(f, "F"), loops(f, "C")[1])
    text = print_ir(g)
    assert text.count("if ((((sp * 4ll) + sp_0) < (S1 * S2)))") == 2
    assert_same_results(f, g, SYM)


def test_simple_compute_at_extent_mismatch(aligned: object) -> None:
    f = aligned
    with pytest.raises(CA.LoopMismatchError, match="at least 2 loops"):
        CA.simple_compute_at(f, block(f, "D"), loops(f, "E")[1])
    f, _ = split(f, loops(f, "E")[0], [-1, 4])
    with pytest.raises(CA.LoopMismatchError, match=r"should equal .* got \(S1 \* S2\)"):
        CA.simple_compute_at(f, block(f, "F"), loops(f, "E")[1])


def test_simple_compute_at_illegal_dependence(aligned: object) -> None:
    f = aligned
    with pytest.raises(CA.IllegalDependenceError, match="accesses to 'B'"):
        CA.simple_compute_at(f, block(f, "C"), loops(f, "A")[0])
    with pytest.raises(CA.IllegalDependenceError, match="accesses to 'C' with block 'D'"):
        CA.simple_compute_at(f, block(f, "C"), loops(f, "F")[0])


def test_loop_enclosing_block_rejected(aligned: object) -> None:
    f = aligned
    with pytest.raises(CA.LoopNotFoundError, match="must not enclose"):
        CA.simple_compute_at(f, block(f, "A"), loops(f, "A")[0])


def test_compute_at_region(aligned: object) -> None:
    f = aligned
    g = CA.compute_at(f, block(f, "A"), loops(f, "B")[0])
    text = print_ir(g)
    assert "serial for (ax0, 0ll, 8ll)" in text
    assert "attrs(compute_at_extra_var:ax0)" in text
    assert [print_ir(v) for v in block(g, "A").iter_values] == ["(sp / S2)", "(sp % S2)", "ax0"]
    assert_same_results(f, g, SYM)


def test_compute_at_tiled_inner_loop() -> None:
    f = P.two_stage((16, 8))
    f, _ = split(f, loops(f, "C")[0], [4, 4])
    g = CA.compute_at(f, block(f, "B"), loops(f, "C")[0])
    text = print_ir(g)
    assert "serial for (ax0, 0, 4)" in text and "serial for (ax1, 0, 8)" in text
    assert_same_results(f, g)


def test_compute_at_unit_loops() -> None:
    f = P.two_stage((4, 8))
    g = CA.compute_at(f, block(f, "B"), loops(f, "C")[1])
    assert "ax0" not in print_ir(g)
    h = CA.compute_at(f, block(f, "B"), loops(f, "C")[1], keep_unit_loops=True)
    assert "serial for (ax0, 0, 1)" in print_ir(h)
    assert_same_results(f, g)
    assert_same_results(f, h)


def test_compute_at_rejects_reduction(aligned: object) -> None:
    f = aligned
    with pytest.raises(CA.ComputeAtBlockError, match="without reduction"):
        CA.compute_at(f, block(f, "C"), loops(f, "D")[0])


def test_compute_at_rejects_outside_reader(aligned: object) -> None:
    f = aligned
    with pytest.raises(CA.RegionError, match="must be inside loop"):
        CA.compute_at(f, block(f, "D"), loops(f, "F")[0])  # E reads D outside F's loop
    with pytest.raises(CA.RegionError, match="function argument"):
        CA.compute_at(f, block(f, "F"), loops(f, "A")[0])


def test_stale_handles(aligned: object) -> None:
    f = aligned
    loop = loops(f, "B")[0]
    g = CA.compute_at(f, block(f, "A"), loop)
    with pytest.raises(CA.StaleHandleError):
        CA.compute_at(g, block(f, "A"), loops(g, "B")[0])
