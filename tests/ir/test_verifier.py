"""The IR verifier: one test per rule, plus lowered functions that must pass."""

from __future__ import annotations

import dataclasses

import pytest

from cinn_py import ir
from cinn_py.diagnostics import VerifyError
from cinn_py.frontend.compute import compute, placeholder, reduce_axis, reduce_sum, sym
from cinn_py.ir.verifier import verify
from cinn_py.lowering import lower


def _func() -> ir.LoweredFunc:
    a = placeholder([8, 4], "float32", "A")
    k = reduce_axis(4, "k")
    b = compute([8], lambda i: reduce_sum(a[i, k], [k]), "B")
    c = compute([8], lambda i: b[i] * 2.0, "C")
    return lower("fn", [a, b, c])


def _nodes(func: ir.LoweredFunc, cls: type) -> list:
    return [n for n in ir.walk(func.body) if isinstance(n, cls)]


def _replace(func: ir.LoweredFunc, old: ir.Stmt, new: ir.Stmt) -> ir.LoweredFunc:
    return dataclasses.replace(func, body=ir.replace_stmt(func.body, old, new))


def _fails(func: ir.LoweredFunc, rule: str, match: str, **kw) -> VerifyError:
    with pytest.raises(VerifyError, match=match) as info:
        verify(func, **kw)
    assert f"verifier [{rule}]" in info.value.message
    assert "^" in (info.value.detail or "")  # the excerpt marks the offending node
    return info.value


def test_lowered_functions_verify() -> None:
    verify(_func())
    s0 = sym("S0")
    x = placeholder([s0, 8], "float32", "X")
    verify(lower("dyn", [x, compute([s0, 8], lambda i, j: x[i, j] + 1.0, "Y")]))


def test_unbound_var() -> None:
    func = _func()
    store = _nodes(func, ir.Store)[-1]
    bad = dataclasses.replace(store, indices=(ir.Var("q"),))
    _fails(_replace(func, store, bad), "unbound-var", "var 'q' is used but not bound")
    sym_dim = ir.Var("S9", ir.dtype.int32, is_symbolic_constant=True)
    loop = _nodes(func, ir.For)[0]
    _fails(_replace(func, loop, dataclasses.replace(loop, extent=sym_dim)), "unbound-var",
           "symbolic dim 'S9'")


def test_let_binds_following_statements() -> None:
    t = ir.make_tensor("T", (ir.const(4),), ir.dtype.int32)
    x = ir.Var("x")
    body = ir.Block((ir.Let(x, ir.const(1)), ir.Store(t, x, (ir.const(0),))))
    root = ir.ScheduleBlockRealize((), ir.ScheduleBlock("root", (), body))
    func = ir.LoweredFunc("f", (ir.Argument(ir.ArgIO.OUTPUT, tensor=t),), ir.Block((root,)))
    verify(func)
    swapped = ir.Block((ir.Store(t, x, (ir.const(0),)), ir.Let(x, ir.const(1))))
    _fails(_replace(func, body, swapped), "unbound-var", "var 'x'")


def test_iter_arity() -> None:
    func = _func()
    realize = _nodes(func, ir.ScheduleBlockRealize)[-1]
    bad = dataclasses.replace(realize, iter_values=realize.iter_values * 2)
    _fails(_replace(func, realize, bad), "iter-arity", "1 iter vars but 2 iter values")


def test_duplicate_block() -> None:
    func = _func()
    realizes = _nodes(func, ir.ScheduleBlockRealize)
    last = realizes[-1]
    renamed = dataclasses.replace(last, schedule_block=dataclasses.replace(last.schedule_block, name="B"))
    _fails(_replace(func, last, renamed), "duplicate-block", "block name 'B' is used twice")


def test_access_rank() -> None:
    func = _func()
    store = _nodes(func, ir.Store)[-1]
    _fails(_replace(func, store, dataclasses.replace(store, indices=store.indices * 2)), "access-rank",
           "tensor 'C' has rank 1 but is indexed with 2 indices")


def test_index_dtype() -> None:
    func = _func()
    store = _nodes(func, ir.Store)[-1]
    bad = dataclasses.replace(store, indices=(ir.const(1.0),))
    _fails(_replace(func, store, bad), "index-dtype", "index of 'C' must be an integer, got float32")


def test_loop_dtype() -> None:
    func = _func()
    loop = _nodes(func, ir.For)[0]
    bad = dataclasses.replace(loop, extent=ir.const(8, ir.dtype.int64))
    _fails(_replace(func, loop, bad), "loop-dtype", "int32 var but its extent is int64")


def test_loop_body() -> None:
    func = _func()
    loop = _nodes(func, ir.For)[-1]
    bad = dataclasses.replace(loop, body=loop.body.stmts[0])
    _fails(_replace(func, loop, bad), "loop-body", "body must be a Block, got ScheduleBlockRealize")


def test_bind_info() -> None:
    func = _func()
    loop = _nodes(func, ir.For)[-1]
    shifted = dataclasses.replace(loop, min=ir.const(1), extent=ir.const(7), for_type=ir.ForType.GPU_THREAD,
                                  bind_offset=0)
    _fails(_replace(func, loop, shifted), "bind-info", r"bound to threadIdx.x must start at 0")
    stray = dataclasses.replace(loop, bind_offset=1)
    _fails(_replace(func, loop, stray), "bind-info", "serial loop 'i' has bind offset 1")
    outer, inner = _nodes(func, ir.For)[:2]
    twice = ir.replace_stmt(outer, inner,
                            dataclasses.replace(inner, for_type=ir.ForType.GPU_THREAD, bind_offset=0))
    twice = dataclasses.replace(twice, for_type=ir.ForType.GPU_THREAD, bind_offset=0)
    _fails(_replace(func, outer, twice), "bind-info", "inside another loop bound to the same axis")


def test_root_block() -> None:
    func = _func()
    root = func.body.stmts[0]
    _fails(dataclasses.replace(func, body=root.schedule_block.body), "root-block", "expected the body")
    renamed = dataclasses.replace(root, schedule_block=dataclasses.replace(root.schedule_block, name="top"))
    _fails(_replace(func, root, renamed), "root-block", "named 'root'")
    verify(dataclasses.replace(func, body=ir.Block((root.schedule_block.body,))), require_root=False)


def test_unknown_buffer() -> None:
    func = _func()
    store = _nodes(func, ir.Store)[-1]
    ghost = ir.make_tensor("G", (ir.const(8),), ir.dtype.float32)
    bad = dataclasses.replace(store, value=ir.Load(ghost, store.indices))
    _fails(_replace(func, store, bad), "unknown-buffer", "tensor 'G' reads buffer '_G'")
    # A temp buffer written in the function (schedule-created) is fine.
    temp_write = ir.Store(ghost, ir.const(0.0), store.indices)
    verify(_replace(func, store, ir.Block((temp_write, bad))))
    # One buffer name, two meanings.
    clash = ir.make_tensor("A2", (ir.const(8),), ir.dtype.float32, buffer_name="_A")
    mixed = dataclasses.replace(store, value=ir.Load(clash, store.indices))
    _fails(_replace(func, store, mixed), "unknown-buffer", "buffer '_A' is float32 rank 2")


def test_bad_argument() -> None:
    with pytest.raises(TypeError, match="expected a LoweredFunc"):
        verify(ir.Block(()))  # type: ignore[arg-type]
