"""Property test: random primitive sequences on small lowered programs.

Every step either raises a ScheduleError and leaves the IR and the trace unchanged, or keeps the
interpreter's results equal to the unscheduled program's. No other exception type may escape. At
the end the trace replays (JSON and Python) to the same IR.

The generator aims where primitives can succeed (rfactor / factorize_reduction on the loops that
drive a reduction's reduce iter vars, compute_at onto another block's loops) but also draws
arbitrary handles, and `test_every_primitive_both_outcomes` checks that every primitive was both
applied and rejected during the run (derandomized, so the check is reproducible).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from cinn_py.frontend.compute import compute, placeholder, reduce_axis, reduce_max, reduce_sum, sym
from cinn_py.interp import run_ir
from cinn_py.ir import For, LoweredFunc, Var, reset_name_ids, structural_equal, walk
from cinn_py.lowering import lower
from schedules import IRSchedule, LoopRV, ScheduleError
from schedules.analysis.loops import find_block
from schedules.testing import check_replay, random_inputs


def _elementwise() -> LoweredFunc:
    a = placeholder((6, 4), "float32", "A")
    b = compute((6, 4), lambda i, j: a[i, j] * 2.0, "B")
    c = compute((6, 4), lambda i, j: b[i, j] + 1.0, "C")
    return lower("fn", [a, c])


def _reduction() -> LoweredFunc:
    a = placeholder((4, 6), "float32", "A")
    b = compute((4, 6), lambda i, j: a[i, j] * a[i, j], "B")
    k = reduce_axis(6)
    c = compute((4,), lambda i: reduce_sum(b[i, k], [k]), "C")
    return lower("fn", [a, c])


def _symbolic() -> LoweredFunc:
    s0 = sym("S0")
    a = placeholder((s0, 3), "float32", "A")
    k = reduce_axis(3)
    b = compute((s0,), lambda i: reduce_max(a[i, k], [k]), "B")
    return lower("fn", [a, b])


PROGRAMS: list[tuple[Callable[[], LoweredFunc], list[dict[str, int]]]] = [
    (_elementwise, [{}]), (_reduction, [{}]), (_symbolic, [{"S0": 1}, {"S0": 5}]),
]

KINDS = ["split", "fuse", "reorder", "parallel", "vectorize", "unroll", "bind", "annotate", "set_buffer",
         "sync_threads", "flatten_loops", "compute_inline", "reverse_compute_inline", "compute_at",
         "simple_compute_at", "rfactor", "factorize_reduction", "align_iter_space"]


OUTCOMES: Counter[tuple[str, str]] = Counter()


def _reduce_loops(sch: IRSchedule, draw: st.DrawFn) -> list[LoopRV]:
    """The loops of a drawn reduction update block that drive its reduce iter vars (outer first)."""
    updates = [b for b in sch.get_all_blocks()
               if any(v.is_reduce_axis for v in find_block(sch.func, b.name).schedule_block.iter_vars)]
    if not updates:
        return []
    block = updates[draw(st.integers(0, len(updates) - 1))]
    realize = find_block(sch.func, block.name)
    used = {n for v, e in zip(realize.schedule_block.iter_vars, realize.iter_values) if v.is_reduce_axis
            for n in walk(e)}
    return [lp for lp in sch.get_loops(block) if find_loop_var(sch, lp) in used]


def find_loop_var(sch: IRSchedule, loop: LoopRV) -> Var:
    return next(lp.loop_var for lp in walk(sch.func.body) if isinstance(lp, For) and lp.uid == loop.uid)


def _apply(sch: IRSchedule, kind: str, draw: st.DrawFn) -> None:
    blocks = sch.get_all_blocks()
    block = blocks[draw(st.integers(0, len(blocks) - 1))]
    loops = sch.get_loops(block)
    loop = loops[draw(st.integers(0, len(loops) - 1))]
    aimed = False
    if kind in ("rfactor", "factorize_reduction", "bind") and draw(st.integers(0, 3)):
        # Aim at a reduction's reduce loops (the outermost one for factorize_reduction).
        candidates = _reduce_loops(sch, draw)
        if candidates:
            aimed = True
            loop = candidates[0] if kind == "factorize_reduction" else \
                candidates[draw(st.integers(0, len(candidates) - 1))]
    pick = draw(st.integers(0, 3))
    if kind == "split":
        sch.split(loop, draw(st.sampled_from([[2, -1], [-1, 4], [3, 2], [-1, 1], [5, -1]])))
    elif kind in ("fuse", "flatten_loops"):
        start = draw(st.integers(0, len(loops) - 1))
        getattr(sch, kind)(loops[start:start + 2])
    elif kind == "reorder":
        sch.reorder(list(reversed(loops[-2:])) if pick else list(reversed(loops)))
    elif kind in ("parallel", "unroll"):
        getattr(sch, kind)(loop)
    elif kind == "vectorize":
        sch.vectorize(loop, draw(st.sampled_from([1, 2, 4])))
    elif kind == "bind":
        # A reduce loop may be bound to threadIdx (cross-thread reduction) but not to blockIdx.
        axes = (["blockIdx.x", "threadIdx.x"] if aimed
                else ["blockIdx.x", "blockIdx.y", "threadIdx.x", "threadIdx.y"])
        sch.bind(loop, draw(st.sampled_from(axes)))
    elif kind == "annotate":
        sch.annotate(block, "k", pick)
    elif kind == "set_buffer":
        sch.set_buffer(block, draw(st.sampled_from(["local", "shared", "global"])))
    elif kind == "sync_threads":
        node = sch.get_root_block() if draw(st.integers(0, 5)) == 0 else loop if pick % 2 else block
        sch.sync_threads(node, after=pick < 2)
    elif kind in ("compute_inline", "reverse_compute_inline"):
        # Producers come first and consumers last in program order.
        target = (blocks[-1] if kind == "reverse_compute_inline" else blocks[0]) if pick else block
        getattr(sch, kind)(target)
    elif kind in ("compute_at", "simple_compute_at"):
        other = blocks[draw(st.integers(0, len(blocks) - 1))]
        if pick and len(blocks) > 1:  # a producer onto its last consumer's loops
            block, other = blocks[0], blocks[-1]
        target = sch.get_loops(other)
        getattr(sch, kind)(block, target[draw(st.integers(0, len(target) - 1))])
    elif kind in ("rfactor", "factorize_reduction"):
        getattr(sch, kind)(loop, draw(st.integers(0, 2)))
    else:
        sch.align_iter_space()


def _results(func: LoweredFunc, bindings: list[dict[str, int]]) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(7)
    return [run_ir(func, random_inputs(func, b, rng)) for b in bindings]


@settings(max_examples=400, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_schedules(data: st.DataObject) -> None:
    reset_name_ids()
    make, bindings = PROGRAMS[data.draw(st.integers(0, len(PROGRAMS) - 1))]
    func = make()
    expected = _results(func, bindings)
    sch = IRSchedule(func)
    kinds = data.draw(st.lists(st.sampled_from(KINDS), min_size=1, max_size=4))
    for kind in kinds:
        before, recorded = sch.func, len(sch.trace)
        try:
            _apply(sch, kind, data.draw)
        except ScheduleError:
            assert structural_equal(sch.func, before), f"{kind} raised but changed the IR"
            assert kind not in [s.kind for s in sch.trace.steps[recorded:]], f"{kind} raised but was recorded"
            event(f"{kind}: rejected")
            OUTCOMES[(kind, "rejected")] += 1
            continue
        event(f"{kind}: applied")
        OUTCOMES[(kind, "applied")] += 1
        for want, got in zip(expected, _results(sch.func, bindings)):
            for name in want:
                np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-5,
                                           err_msg=f"after {kind}:\n{sch}")
    check_replay(func, sch)


# annotate has no IR precondition (any block takes any attribute; a bad key or value is a
# TypeError), so it can only be applied.
NEVER_REJECTED = {"annotate"}


def test_every_primitive_both_outcomes() -> None:
    if not OUTCOMES:
        pytest.skip("runs after test_random_schedules in the same session")
    missing = [f"{kind}: {outcome}" for kind in KINDS for outcome in ("applied", "rejected")
               if not OUTCOMES[(kind, outcome)] and not (outcome == "rejected" and kind in NEVER_REJECTED)]
    assert not missing, f"outcomes never drawn: {', '.join(missing)}"
