"""Tests of the shared structural queries in `schedules.analysis.loops`."""

from __future__ import annotations

import pytest
from tests.schedules import sched_programs as P

from cinn_py.ir import For, ScheduleBlockRealize
from schedules.analysis import (
    StmtIndex, all_blocks, block_names, child_blocks, const_extent, find_block, find_block_or_none,
    first_store, is_ancestor, loop_chain_below, loops_between, root_block, stmt_children,
)


def test_all_blocks_preorder_excludes_root() -> None:
    fn = P.reduce_sum()
    assert [b.name for b in all_blocks(fn)] == ["B__reduce_init", "B"]
    assert block_names(fn) == ["B__reduce_init", "B"]
    assert root_block(fn).schedule_block.name == "root"


def test_find_block_and_errors() -> None:
    fn = P.two_stage()
    assert find_block(fn, "C").name == "C"
    assert find_block_or_none(fn, "Z") is None
    with pytest.raises(KeyError, match="blocks: B, C"):
        find_block(fn, "Z")


def test_index_parents_and_loops() -> None:
    fn = P.reduce_sum()
    index = StmtIndex(fn)
    b = find_block(fn, "B")
    loops = index.enclosing_loops(b)
    assert [lp.loop_var.name for lp in loops] == ["i", "k0"]
    assert index.by_uid[loops[0].uid] is loops[0]
    assert index.contains(b)
    assert loops_between(index, loops[0], loops[1]) == loops
    assert loops_between(index, loops[1], loops[0]) is None
    assert is_ancestor(loops[0], b) and not is_ancestor(loops[1], find_block(fn, "B__reduce_init"))
    assert index.enclosing_realize(loops[0]) is root_block(fn)
    assert [x.name for x in child_blocks(loops[0])] == ["B__reduce_init", "B"]


def test_loop_chain_and_store() -> None:
    fn = P.elementwise()
    outer = StmtIndex(fn).enclosing_loops(find_block(fn, "B"))[0]
    chain = loop_chain_below(outer)
    assert [lp.loop_var.name for lp in chain] == ["i", "j"]
    assert const_extent(chain[1]) == 64
    assert const_extent(P.elementwise((P.sym("S0"), 4)).body.stmts[0].schedule_block.body) is None
    store = first_store(find_block(fn, "B"))
    assert store is not None and store.tensor.name == "B"
    assert isinstance(stmt_children(outer)[0].stmts[0], For)
    assert all(isinstance(b, ScheduleBlockRealize) for b in all_blocks(outer))


def test_index_of_is_shared_per_root_object() -> None:
    from schedules.analysis.loops import index_of

    func = P.elementwise()
    index = index_of(func)
    assert index_of(func) is index and index.root is func
    other = P.elementwise()
    assert index_of(other) is not index and index_of(other).root is other
