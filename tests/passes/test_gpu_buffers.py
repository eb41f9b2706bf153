"""gpu_buffers: per-iteration privatisation of local buffers and its liveness conditions."""

from __future__ import annotations

import pytest

import cinn_py as cp
from cinn_py.diagnostics import CompileError
from cinn_py.ir import Block, For, IfThenElse, Load, MemoryType, Store, Var, walk
from cinn_py.ir import dtype as dt
from cinn_py.ir import expr as E
from cinn_py.ir.buffer import make_tensor
from cinn_py.passes.gpu_bind import gpu_bind
from cinn_py.ir.func import CudaAxisInfo
from cinn_py.ir.text.printer import print_ir
from cinn_py.passes.gpu_buffers import collect_accesses, privatize_local_buffers, scope_buffers
from codegen.cuda import generate_cuda
from schedules import IRSchedule
from tests.codegen.cuda.nvrtc_helpers import every_generated_source_compiles, nvrtc_check

pytestmark = pytest.mark.usefixtures("every_generated_source_compiles")
__all__ = ["every_generated_source_compiles"]

I64 = dt.int64
S0 = Var("S0", I64, is_symbolic_constant=True)
T = make_tensor("T", (S0,), dt.float32, MemoryType.GPU_LOCAL)
OUT = make_tensor("O", (S0,), dt.float32)


def _loop(var: Var, *stmts: object) -> For:
    return For(var, E.IntImm(I64, 0), S0, Block(tuple(stmts)))


def _store(tensor, index: E.Expr, value: E.Expr) -> Store:
    return Store(tensor, value, (index,))


def _private(body) -> bool:
    _, chosen = privatize_local_buffers(body, {"S0"})
    return "_T" in chosen


def test_written_then_read_in_one_iteration_is_privatised() -> None:
    i = Var("i", I64)
    body = _loop(i, _store(T, i, E.FloatImm(dt.float32, 1.0)),
                 _store(OUT, i, Load(T, (i,)) * E.FloatImm(dt.float32, 2.0)))
    new, chosen = privatize_local_buffers(body, {"S0"})
    assert [str(d) for d in chosen["_T"].shape] == ["1"]
    indices = {n.indices for n in walk(new) if isinstance(n, (Load, Store)) and n.tensor.name == "T"}
    assert indices == {(E.IntImm(I64, 0),)}


def test_read_before_write_keeps_the_buffer() -> None:
    i = Var("i", I64)
    one = E.FloatImm(dt.float32, 1.0)
    body = _loop(i, _store(T, i, Load(T, (i,)) + one))
    assert [a.is_write for a in collect_accesses(body, ["_T"])["_T"]] == [False, True]
    assert not _private(body)


def test_index_from_a_loop_that_does_not_enclose_all_accesses_keeps_the_buffer() -> None:
    i, j = Var("i", I64), Var("j", I64)
    body = Block((_loop(i, _store(T, i, E.FloatImm(dt.float32, 1.0))),
                  _loop(j, _store(OUT, j, Load(T, (j,))))))
    assert not _private(body)


def test_store_under_a_different_guard_does_not_dominate() -> None:
    i = Var("i", I64)
    store = IfThenElse(E.LT(i, E.IntImm(I64, 4)), Block((_store(T, i, E.FloatImm(dt.float32, 1.0)),)))
    read = IfThenElse(E.LT(i, E.IntImm(I64, 8)), Block((_store(OUT, i, Load(T, (i,))),)))
    assert not _private(_loop(i, store, read))
    same = IfThenElse(E.LT(i, E.IntImm(I64, 4)), Block((_store(OUT, i, Load(T, (i,))),)))
    assert _private(_loop(i, store, same))
    other_branch = IfThenElse(E.LT(i, E.IntImm(I64, 4)), Block(()), Block((_store(OUT, i, Load(T, (i,))),)))
    assert not _private(_loop(i, store, other_branch))


def test_guard_reading_memory_does_not_dominate() -> None:
    i = Var("i", I64)
    flag = make_tensor("flag", (S0,), dt.int32)
    cond = E.GT(Load(flag, (i,)), E.IntImm(dt.int32, 0))
    store = IfThenElse(cond, Block((_store(T, i, E.FloatImm(dt.float32, 1.0)),)))
    read = IfThenElse(cond, Block((_store(OUT, i, Load(T, (i,))),)))
    assert not _private(_loop(i, store, read))


def test_store_in_a_possibly_empty_inner_loop_does_not_dominate() -> None:
    i, k = Var("i", I64), Var("k", I64)
    init = For(k, E.IntImm(I64, 0), S0, Block((_store(T, i, E.FloatImm(dt.float32, 0.0)),)))
    body = _loop(i, init, _store(OUT, i, Load(T, (i,))))
    assert not _private(body)
    once = For(k, E.IntImm(I64, 0), E.IntImm(I64, 2), Block((_store(T, i, E.FloatImm(dt.float32, 0.0)),)))
    assert _private(_loop(i, once, _store(OUT, i, Load(T, (i,)))))


def test_different_indices_keep_the_buffer() -> None:
    i = Var("i", I64)
    body = _loop(i, _store(T, i, E.FloatImm(dt.float32, 1.0)),
                 _store(OUT, i, Load(T, (i + E.IntImm(I64, 0),))))
    assert not _private(body)


def _symbolic_rows() -> IRSchedule:
    """B[i] = sum_k A[i, k] in a local buffer, C = B * 2, serial over the symbolic rows."""
    S = cp.sym("S")
    A = cp.placeholder((S, 32), "float32", "A")
    k = cp.reduce_axis(32, "k")
    B = cp.compute((S,), lambda i: cp.reduce_sum(A[i, k], k), "B")
    C = cp.compute((S,), lambda i: B[i] * 2.0, "C")
    s = IRSchedule(cp.lower("fn", [A, C]))
    s.simple_compute_at("C", s.get_loops("B")[0])
    s.bind(s.get_loops("B")[1], "threadIdx.x")
    s.set_buffer("B", "local")
    return s


def test_local_accumulator_over_symbolic_rows_is_one_register() -> None:
    code = generate_cuda(_symbolic_rows().func)
    assert "  float B_temp_buffer[1];\n" in code.source
    assert "B_temp_buffer[0ll] = cinn_warp_reduce_sum_fp32(" in code.source
    nvrtc_check(code.source)


def test_symbolic_local_buffer_error_explains_why() -> None:
    S = cp.sym("S")
    A = cp.placeholder((S,), "float32", "A")
    B = cp.compute((S,), lambda i: A[i] * 2.0, "B")
    C = cp.compute((S,), lambda i: B[i] + 1.0, "C")
    s = IRSchedule(cp.lower("fn", [A, C]))
    s.set_buffer("B", "local")
    assert ([str(d) for d in next(b for b in gpu_bind(s.func).temp_bufs if b.name == "_B_temp_buffer").shape]
            == ["S"])
    with pytest.raises(CompileError,
                       match="local buffer '_B_temp_buffer' has symbolic size S.*does not enclose"):
        generate_cuda(s.func)


# ---------------------------------------------------------------------------------------------
# Sound removal of bound variables; shared privatisation
# ---------------------------------------------------------------------------------------------
I32 = dt.int32
TX = Var("threadIdx.x", I32)
ONE_BLOCK_64 = CudaAxisInfo((E.IntImm(I32, 1),) * 3, (E.IntImm(I32, 64), E.IntImm(I32, 1), E.IntImm(I32, 1)))


def _c(v: int) -> E.IntImm:
    return E.IntImm(I32, v)


def _write_then_read(tensor, index_of) -> Block:
    """for i < 4: T[index(i)] = i;  for j < 4: O[tx * 4 + j] = T[index(j)]  (two loops: no privatising)."""
    i, j = Var("i", I32), Var("j", I32)
    out = make_tensor("O", (_c(256),), dt.float32)
    write = For(i, _c(0), _c(4), Block((Store(tensor, E.Cast(dt.float32, i), (index_of(i),)),)))
    read = For(j, _c(0), _c(4), Block((Store(out, Load(tensor, (index_of(j),)), (TX * _c(4) + j,)),)))
    return Block((write, read))


def _indices_of(body, name: str) -> set[str]:
    return ({print_ir(n.indices[0]) for n in walk(body) if isinstance(n, (Load, Store))
             and n.tensor.name == name})


def test_non_separable_local_index_keeps_the_thread_variable() -> None:
    """`(threadIdx.x + i) / 2`: zeroing threadIdx.x (the older rule) gives `i / 2`, which for
    thread 1 merges elements (1+0)/2=0 and (1+1)/2=1 into one register and reads back
    [1, 1, 3, 3] instead of [0, 2, 2, 3]. The index must stay whole."""
    T = make_tensor("T", (_c(34),), dt.float32, MemoryType.GPU_LOCAL)
    body, resized = scope_buffers(_write_then_read(T, lambda i: (TX + i) / _c(2)), ONE_BLOCK_64, set())
    assert _indices_of(body, "T") == {"((threadIdx.x + i) / 2)", "((threadIdx.x + j) / 2)"}
    assert "_T" not in resized or [print_ir(d) for d in resized["_T"].shape] == ["34"]


def test_separable_local_index_drops_the_thread_variable() -> None:
    T = make_tensor("T", (_c(256),), dt.float32, MemoryType.GPU_LOCAL)
    body, resized = scope_buffers(_write_then_read(T, lambda i: TX * _c(4) + i), ONE_BLOCK_64, set())
    assert _indices_of(body, "T") == {"i", "j"}
    assert [print_ir(d) for d in resized["_T"].shape] == ["4"]


def test_local_buffer_read_at_another_threads_offset_is_an_error() -> None:
    """`T[tx]` written, `T[63 - tx]` read: a register of another thread; no storage can do that."""
    T = make_tensor("T", (_c(64),), dt.float32, MemoryType.GPU_LOCAL)
    out = make_tensor("O", (_c(64),), dt.float32)
    body = Block((Store(T, E.FloatImm(dt.float32, 1.0), (TX,)), Store(out, Load(T, (_c(63) - TX,)), (TX,))))
    with pytest.raises(CompileError, match=r"local buffer '_T' is accessed with different thread offsets"):
        scope_buffers(body, ONE_BLOCK_64, set())


def _shared_seed_source() -> str:
    from tests.codegen.cuda.test_seed_cuda import scheduled_seed  # noqa: PLC0415

    return generate_cuda(scheduled_seed("shared")).source


def test_shared_buffer_is_privatised_per_block_iteration() -> None:
    """The seed with C_rf in shared memory: one element per thread of the block per iteration of
    the serial loop (was: a dynamic `S1 * S2 * 32` floats, one slice per iteration)."""
    source = _shared_seed_source()
    assert "__shared__ float C_rf_temp_buffer[1024];" in source
    assert "C_rf_temp_buffer[(((int)threadIdx.y * 32ll) + (int)threadIdx.x)] = 0.00000000f;" in source


def test_shared_buffer_not_owned_by_one_thread_is_not_privatised() -> None:
    """C of the seed is written by all 32 threads of a row (index without threadIdx.x): dropping
    the loop variable would let a fast thread overwrite a value a slow one still reads."""
    assert "C_temp_buffer[((sp_5 * 512ll) + (int)threadIdx.y)]" in _shared_seed_source()
