"""Every ScheduleError the primitives raise, through IRSchedule, in one table.

For each case: the exception class, the message `<primitive>: <rule: expected vs actual>`, an IR
excerpt in `detail` with the offending node underlined (`^^^`) where there is a node to mark, and
after the error the schedule's IR and trace are exactly as before.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from cinn_py.ir import LoweredFunc
from schedules import (
    BindLimitError, BlockNotFoundError, BufferError, ExtentMismatchError, IllegalDependenceError,
    InvalidArgumentError, IRSchedule, LoopKindError, LoopNotFoundError,
    NonConstantExtentError, NotAChainError, NotPerfectlyNestedError, ScheduleError, StaleHandleError,
)
from schedules.primitives.align import AlignError
from schedules.primitives.compute_at import ComputeAtBlockError, LoopMismatchError, RegionError
from schedules.primitives.compute_inline import InlineOutputError, InlineReductionError
from schedules.primitives.reduction import ReductionBlockError, RfAxisError
from tests.codegen.cuda.gpu_programs import drop_reduce_init
from tests.schedules import sched_programs as P
from tests.schedules.seed_program import seed_func


@dataclass(frozen=True)
class Case:
    program: Callable[[], LoweredFunc]
    prepare: Callable[[IRSchedule], None]
    """Successful steps before the failing one."""
    fail: Callable[[IRSchedule], object]
    error: type[ScheduleError]
    message: str
    """Regex matched at the start of the message (after `<primitive>: `)."""
    marked: bool = True


def _none(sch: IRSchedule) -> None:
    return None


def _aligned(sch: IRSchedule) -> None:
    sch.align_iter_space()


def _loops(name: str, k: int) -> Callable[[IRSchedule], object]:
    return lambda sch: sch.get_loops(name)[k]


SYM = P.sym
CASES: dict[str, Case] = {
    "split/factor-product": Case(P.elementwise, _none, lambda s: s.split(s.get_loops("B")[0], [3, 5]),
                                 ExtentMismatchError, r"split: .*32"),
    "split/two-inferred": Case(P.elementwise, _none, lambda s: s.split(s.get_loops("B")[0], [-1, -1]),
                               InvalidArgumentError, r"split: "),
    "fuse/not-adjacent": Case(P.two_stage, _none,
                              lambda s: s.fuse([s.get_loops("B")[0], s.get_loops("C")[1]]),
                              NotPerfectlyNestedError, r"fuse: "),
    "reorder/not-chain": Case(P.two_stage, _none,
                              lambda s: s.reorder([s.get_loops("B")[1], s.get_loops("C")[0]]),
                              NotAChainError, r"reorder: "),
    "reorder/dependence": Case(lambda: P.shifted(), lambda s: s.split(s.get_loops("A")[0], [4, 4]),
                               lambda s: s.reorder(s.get_loops("A")[::-1]), IllegalDependenceError,
                               r"reorder: loop 'i' carries a dependence"),
    "parallel/dependence": Case(lambda: P.shifted(), _none, lambda s: s.parallel(s.get_loops("A")[0]),
                                IllegalDependenceError, r"parallel: loop 'i' carries a dependence"),
    "parallel/not-serial": Case(P.elementwise, lambda s: s.unroll(s.get_loops("B")[1]),
                                lambda s: s.parallel(s.get_loops("B")[1]), LoopKindError,
                                r"parallel: loop 'j' must be serial, but is unroll"),
    "vectorize/factor": Case(P.elementwise, _none, lambda s: s.vectorize(s.get_loops("B")[1], 0),
                             InvalidArgumentError, r"vectorize: factor must be positive, got 0"),
    "vectorize/reduce-loop": Case(P.reduce_sum, _none, lambda s: s.vectorize(s.get_loops("B")[1], 4),
                                  IllegalDependenceError, r"vectorize: loop 'k0' is a reduction axis"),
    "unroll/symbolic": Case(lambda: P.elementwise((SYM("N"), 4)), _none,
                            lambda s: s.unroll(s.get_loops("B")[0]),
                            NonConstantExtentError, r"unroll: loop 'i' needs a constant extent"),
    "bind/axis": Case(P.elementwise, _none, lambda s: s.bind(s.get_loops("B")[0], "threadIdx.w"),
                      InvalidArgumentError, r"bind: unknown axis 'threadIdx.w'"),
    "bind/limit": Case(lambda: P.elementwise((2048, 4)), _none,
                       lambda s: s.bind(s.get_loops("B")[0], "threadIdx.x"),
                       BindLimitError, r"bind: extent 2048 of loop 'i' exceeds the block limit 1024"),
    "bind/axis-reused": Case(P.elementwise, lambda s: s.bind(s.get_loops("B")[0], "threadIdx.x"),
                             lambda s: s.bind(s.get_loops("B")[1], "threadIdx.x"), BindLimitError,
                             r"bind: threadIdx.x is already bound by loop 'i'"),
    "bind/block-reduction": Case(P.reduce_sum, _none, lambda s: s.bind(s.get_loops("B")[1], "blockIdx.x"),
                                 IllegalDependenceError, r"bind: loop 'k0' carries a dependence"),
    "set_buffer/argument": Case(P.elementwise, _none, lambda s: s.set_buffer("B", "shared"), BufferError,
                                r"set_buffer: tensor 'B' lives in argument buffer"),
    "set_buffer/scope": Case(P.two_stage, _none, lambda s: s.set_buffer("B", "texture"), InvalidArgumentError,
                             r"set_buffer: memory_type must be"),
    "sync_threads/root": Case(P.elementwise, _none, lambda s: s.sync_threads(s.get_root_block()),
                              InvalidArgumentError,
                              r"sync_threads: cannot synchronise around the root block"),
    "get_block/missing": Case(P.elementwise, _none, lambda s: s.get_block("Z"), BlockNotFoundError,
                              r"get_block: no block named 'Z' \(blocks: B\)", marked=False),
    # The handle is split away first (in test_error), then used.
    "stale/loop": Case(P.elementwise, _none, lambda s: None, StaleHandleError,
                       r"unroll: handle to loop 'i' \(e\d+\) is stale: it was replaced or removed by split",
                       marked=False),
    "align_iter_space/loop-kind": Case(P.two_stage, lambda s: s.parallel(s.get_loops("C")[1]),
                                       lambda s: s.align_iter_space(),
                            LoopKindError, r"align_iter_space: loop 'j' must be serial"),
    "align_iter_space/extents": Case(lambda: seed_func(8), lambda s: s.split(s.get_loops("A")[2], [2, 4]),
                          lambda s: s.align_iter_space(), AlignError,
                          r"align_iter_space: below the spatial loops a nest may only hold"),
    "compute_inline/reduction": Case(lambda: seed_func(8), _none, lambda s: s.compute_inline("C"),
                                     InlineReductionError,
                                     r"compute_inline: block 'C' must not be a reduction"),
    "compute_inline/output": Case(P.two_stage, _none, lambda s: s.compute_inline("C"), InlineOutputError,
                                  r"compute_inline: "),
    "compute_at/reduction-without-init": Case(lambda: drop_reduce_init(seed_func(8)), _aligned,
                                              lambda s: s.compute_at("C", s.get_loops("D")[0]),
                                              ComputeAtBlockError,
                                              r"compute_at: block 'C' is a reduction; compute_at moves a "
                                              r"reduction "
                                              r"with its init block and reduce loops, which needs exactly "
                                              r"one init"),
    "compute_at/outside-reader": Case(lambda: seed_func(8), _aligned,
                                      lambda s: s.compute_at("D", s.get_loops("F")[0]), RegionError,
                                      r"compute_at: every reader of 'D' must be inside loop 'sp'"),
    "compute_at/encloses": Case(P.two_stage, _none, lambda s: s.compute_at("B", s.get_loops("B")[0]),
                                LoopNotFoundError, r"compute_at: loop 'i' must not enclose block 'B'"),
    "simple_compute_at/extent": Case(lambda: P.two_stage((4, 8)),
                                     lambda s: s.split(s.get_loops("C")[0], [2, 2]),
                                     lambda s: s.simple_compute_at("B", s.get_loops("C")[0]),
                                     LoopMismatchError,
                                     r"simple_compute_at: extent of loop 'i' should equal that of 'i': "
                                     r"expected 2, "
                                     r"got 4"),
    "simple_compute_at/dependence": Case(lambda: seed_func(8), _aligned,
                                         lambda s: s.simple_compute_at("C", s.get_loops("A")[0]),
                                         IllegalDependenceError,
                                         r"simple_compute_at: moving 'C' would reorder"),
    "rfactor/not-reduction": Case(P.elementwise, _none, lambda s: s.rfactor(s.get_loops("B")[1], 0),
                                  ReductionBlockError, r"rfactor: block 'B' must be a reduction update"),
    "rfactor/axis": Case(P.reduce_sum, _none, lambda s: s.rfactor(s.get_loops("B")[1], 3), RfAxisError,
                         r"rfactor: rf_axis must be in \[0, 1\] for tensor 'B', but is 3"),
}


QUERIES = {"get_block", "get_loops", "get_all_blocks", "get_child_blocks", "get_root_block"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_error(name: str) -> None:
    case = CASES[name]
    sch = IRSchedule(case.program())
    case.prepare(sch)
    if name == "stale/loop":
        i = sch.get_loops("B")[0]
        sch.split(i, [4, 8])
        case = Case(case.program, _none, lambda s: s.unroll(i), case.error, case.message, case.marked)
    before, steps = sch.func, sch.trace.to_json()
    recorded = len(sch.trace)
    with pytest.raises(case.error) as info:
        case.fail(sch)
    err = info.value
    primitive = name.split("/")[0].replace("stale", "unroll")
    assert err.message.startswith(f"{primitive}: "), err.message
    assert re.match(case.message, err.message), f"{err.message!r} does not match {case.message!r}"
    if case.marked:
        assert err.detail and "^^^" in err.detail, f"no marked IR excerpt:\n{err.detail}"
    assert sch.func is before, "the IR changed after the error"
    # The failing call's own handle queries are recorded; nothing else may be.
    assert [st.kind for st in sch.trace.steps[recorded:] if st.kind not in QUERIES] == [], "the trace changed"
    del sch.trace.steps[recorded:]
    assert sch.trace.to_json() == steps
