"""The `simplify` pass and the pass registry."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from cinn_py import ir
from cinn_py.frontend.compute import compute, placeholder
from cinn_py.interp import run_ir
from cinn_py.lowering import lower
from cinn_py.passes import available_passes, get_pass, register_pass, run_passes, simplify_func


def _split_by_hand() -> ir.LoweredFunc:
    """`B = A * 2` on [32, 64] with the loop `j` split by 8, indices left unsimplified."""
    a = placeholder([32, 64], "float32", "A")
    b = compute([32, 64], lambda i, j: a[i, j] * 2.0, "B")
    func = lower("fn", [a, b])
    root = func.body.stmts[0]
    outer = root.schedule_block.body
    inner = outer.body.stmts[0]
    realize = inner.body.stmts[0]
    j_o, j_i = ir.Var("j_o"), ir.Var("j_i")
    value = (j_o * 8 + j_i) + 0
    realize = dataclasses.replace(realize, iter_values=(realize.iter_values[0], value))
    block = realize.schedule_block
    i0, i1 = block.iter_vars
    store = block.body
    guarded = ir.IfThenElse(ir.LT(i1 / 8 * 8 + i1 % 8, ir.const(64)), ir.Block((store,)))
    realize = dataclasses.replace(realize, schedule_block=dataclasses.replace(block, body=guarded))
    loop_i = ir.For(j_i, ir.const(0), ir.const(8), ir.Block((realize,)))
    loop_o = ir.For(j_o, ir.const(0), ir.const(8), ir.Block((loop_i,)))
    outer = dataclasses.replace(outer, body=ir.Block((loop_o,)))
    root = dataclasses.replace(root, schedule_block=dataclasses.replace(root.schedule_block, body=outer))
    return dataclasses.replace(func, body=ir.Block((root,)))


def test_simplify_pass_uses_loop_and_iter_var_ranges() -> None:
    func = _split_by_hand()
    out = simplify_func(func)
    text = str(out)
    assert "axis.bind(i, ((j_o * 8) + j_i))" in text
    assert "if (" not in text  # i1 in [0, 64): the guard is always true and is removed
    assert "B[i0, i1] = (A[i0, i1] * 2.00000000f)" in text
    x = np.random.default_rng(0).standard_normal((32, 64)).astype("float32")
    np.testing.assert_allclose(run_ir(out, {"A": x})["B"], run_ir(func, {"A": x})["B"])


def test_simplify_pass_keeps_uids_and_identity_when_nothing_changes() -> None:
    a = placeholder([4, 4], "float32", "A")
    b = compute([4, 4], lambda i, j: a[i, j] + 1.0, "B")
    func = lower("fn", [a, b])
    assert simplify_func(func) is func
    hand = _split_by_hand()
    out = simplify_func(hand)
    assert out is not hand
    assert out.body.stmts[0].uid == hand.body.stmts[0].uid  # rebuilt, still "the same" root


def test_false_guard_keeps_else_branch_only() -> None:
    t = ir.make_tensor("T", (ir.const(4),), ir.dtype.float32)
    i = ir.Var("i")
    then = ir.Block((ir.Store(t, ir.const(1.0), (i,)),))
    other = ir.Block((ir.Store(t, ir.const(2.0), (i,)),))
    loop = ir.For(i, ir.const(0), ir.const(4), ir.Block((ir.IfThenElse(i >= 4, then, other),)))
    func = ir.LoweredFunc("f", (ir.Argument(ir.ArgIO.OUTPUT, tensor=t),), ir.Block((loop,)))
    out = simplify_func(func)
    assert str(out.body.stmts[0].body) == "{\n  T[i] = 2.00000000f\n}"


def test_registry() -> None:
    assert "simplify" in available_passes()
    assert get_pass("simplify") is simplify_func
    func = _split_by_hand()
    assert "if (" not in str(run_passes(func, "simplify"))
    with pytest.raises(ValueError, match="unknown pass 'nope'"):
        get_pass("nope")
    with pytest.raises(ValueError, match="already registered"):
        register_pass("simplify", simplify_func)
