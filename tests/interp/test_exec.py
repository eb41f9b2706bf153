"""run_ir on whole programs: reductions, guards, vectors, lets, allocations, loop kinds, and the
vectorised evaluation agreeing with forced-serial evaluation."""

from __future__ import annotations

import numpy as np
import pytest

import cinn_py as cp
from cinn_py import ir
from cinn_py.interp import OutOfBoundsError, UnsupportedConstructError, run_ir
from cinn_py.interp import flat as interp_flat
from cinn_py.ir import ForType, Load, Store
from tests.interp.irb import func, loop, tensor, var


@pytest.fixture
def flat_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Records the size of every vectorised (flattened) evaluation."""
    calls: list[int] = []
    original = interp_flat._bind_flat

    def spy(sub, bounds, total, env):  # type: ignore[no-untyped-def]
        calls.append(total)
        return original(sub, bounds, total, env)

    monkeypatch.setattr(interp_flat, "_bind_flat", spy)
    return calls


def _both(f: ir.LoweredFunc, inputs: dict, **kw) -> dict:  # type: ignore[type-arg]
    fast = run_ir(f, inputs, vectorize=True, **kw)
    slow = run_ir(f, inputs, vectorize=False, **kw)
    for name in fast:
        np.testing.assert_array_equal(fast[name], slow[name], err_msg=f"vectorised != serial for {name}")
    return fast


# -- reductions through the compute DSL ----------------------------------------------------------
REDUCTIONS = [
    ("sum", cp.reduce_sum, lambda a: a.sum(axis=1, dtype=a.dtype),
     ["int8", "int32", "uint16", "int64", "float64"]),
    ("prod", cp.reduce_prod, lambda a: a.prod(axis=1, dtype=a.dtype), ["int32", "uint8", "float64"]),
    ("max", cp.reduce_max, lambda a: a.max(axis=1), ["int16", "uint32", "float32", "float16"]),
    ("min", cp.reduce_min, lambda a: a.min(axis=1), ["int64", "uint64", "float32", "bfloat16"]),
    ("all", cp.reduce_all, lambda a: a.all(axis=1), ["bool"]),
    ("any", cp.reduce_any, lambda a: a.any(axis=1), ["bool"]),
]


def _data(dtype: str, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    if dtype == "bool":
        return rng.random(shape) < 0.9
    if dtype == "bfloat16":
        return rng.integers(-50, 50, shape).astype(np.float32)
    np_dtype = np.dtype(dtype)
    if np_dtype.kind == "f":
        return rng.integers(-8, 9, shape).astype(np_dtype)  # exact sums: order does not matter
    info = np.iinfo(np_dtype)
    return rng.integers(info.min, info.max, shape, dtype=np_dtype, endpoint=True)


@pytest.mark.parametrize(("kind", "fn", "ref", "dtypes"), REDUCTIONS, ids=[r[0] for r in REDUCTIONS])
def test_reductions_match_numpy(kind: str, fn, ref, dtypes: list[str], flat_calls: list[int]) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(7)
    for dtype in dtypes:
        ir.reset_name_ids()
        A = cp.placeholder((6, 33), dtype, "A")
        k = cp.reduce_axis(33, "k")
        C = cp.compute((6,), lambda i: fn(A[i, k], [k]), "C")
        f = cp.lower("reduce", [A, C])
        a = _data(dtype, (6, 33), rng)
        out = _both(f, {"A": a})["C"]
        np.testing.assert_array_equal(out, ref(a), err_msg=f"{kind} {dtype}")
    assert flat_calls, "the reduction loop should run vectorised"


def test_max_reduction_with_nan_is_the_exact_serial_fold() -> None:
    A = cp.placeholder((4, 5), "float32", "A")
    k = cp.reduce_axis(5, "k")
    C = cp.compute((4,), lambda i: cp.reduce_max(A[i, k], [k]), "C")
    f = cp.lower("rmax", [A, C])
    nan = np.nan
    a = np.array([[1, nan, 3, 2, 0], [1, 2, 3, 4, nan], [nan, nan, nan, nan, nan], [0.0, -0.0, -1, -0.0, -5]],
                 dtype=np.float32)
    out = _both(f, {"A": a})["C"]
    # acc = acc > x ? acc : x: a NaN resets the fold, a trailing NaN wins, equal zeros: the later one.
    assert out[0] == 3 and np.isnan(out[1]) and np.isnan(out[2])
    assert out[3] == 0 and np.signbit(out[3])


def test_matmul_and_float_sum_tolerance() -> None:
    A = cp.placeholder((8, 16), "float32", "A")
    B = cp.placeholder((16, 5), "float32", "B")
    k = cp.reduce_axis(16, "k")
    C = cp.compute((8, 5), lambda i, j: cp.reduce_sum(A[i, k] * B[k, j], [k]), "C")
    f = cp.lower("matmul", [A, B, C])
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((8, 16), dtype=np.float32), rng.standard_normal((16, 5), dtype=np.float32)
    fast = run_ir(f, {"A": a, "B": b})["C"]
    slow = run_ir(f, {"A": a, "B": b}, vectorize=False)["C"]
    np.testing.assert_allclose(fast, a @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(fast, slow)  # the vectorised fold keeps the serial order


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_vectorised_float_sum_and_prod_are_bitwise_serial(dtype: str) -> None:
    A = cp.placeholder((3, 200), dtype, "A")
    k = cp.reduce_axis(200, "k")
    C = cp.compute((3,), lambda i: cp.reduce_sum(A[i, k], [k]), "C")
    k2 = cp.reduce_axis(200, "k2")
    P = cp.compute((3,), lambda i: cp.reduce_prod(A[i, k2], [k2]), "P")
    f = cp.lower("fsum", [A, C, P])
    a = (np.random.default_rng(5).random((3, 200)) * 0.2 + 0.95).astype(dtype)
    out = _both(f, {"A": a})
    acc = np.zeros(3, dtype)
    for col in a.T:
        acc = (acc + col).astype(dtype)
    np.testing.assert_array_equal(out["C"], acc)


def test_symbolic_elementwise_and_intrinsics_through_dsl() -> None:
    S = cp.sym("S")
    X = cp.placeholder((S, 3), "float32", "X")
    Y = cp.compute((S, 3), lambda i, j: cp.tanh(X[i, j]) + cp.erf(X[i, j]) * cp.exp(X[i, j] * 0.5), "Y")
    f = cp.lower("fused", [X, Y])
    x = np.linspace(-3, 3, 21, dtype=np.float32).reshape(7, 3)
    out = _both(f, {"X": x})["Y"]
    from math import erf
    ref = (np.tanh(x) + np.vectorize(erf)(x.astype(np.float64)).astype(np.float32)
           * np.exp(x * np.float32(0.5)))
    np.testing.assert_allclose(out, ref, rtol=2e-6, atol=1e-6)


# -- guards, selects, bounds ---------------------------------------------------------------------
def test_guarded_tail_and_out_of_bounds() -> None:
    # split-like loop: for (o, 0, 4) for (i, 0, 8) if (o*8 + i < 30) B[o*8+i] = A[o*8+i] * 2
    A, B = tensor("A", (30,)), tensor("B", (30,))
    o, i = var("o"), var("i")
    idx = o * 8 + i
    store = Store(B, Load(A, (idx,)) * ir.const(2.0), (idx,))
    guarded = func("tail", [A], [B], loop(o, 4, loop(i, 8, ir.IfThenElse(idx < 30, ir.Block((store,))))))
    a = np.arange(30, dtype=np.float32)
    np.testing.assert_array_equal(_both(guarded, {"A": a})["B"], a * 2)
    unguarded = func("tail", [A], [B],
                     loop(o, 4, loop(i, 8, Store(B, Load(A, (idx,)) * ir.const(2.0), (idx,)))))
    for vectorize in (True, False):
        with pytest.raises(OutOfBoundsError, match="out of bounds for dim 0 of 'A'"):
            run_ir(unguarded, {"A": a}, vectorize=vectorize)


def test_if_then_else_both_branches() -> None:
    A, B = tensor("A", (10,), "int32"), tensor("B", (10,), "int32")
    i = var("i")
    body = ir.IfThenElse(ir.eq(i % 3, 0), ir.Block((Store(B, Load(A, (i,)) + 100, (i,)),)),
                         ir.Block((Store(B, -Load(A, (i,)), (i,)),)))
    a = np.arange(10, dtype=np.int32)
    out = _both(func("ite", [A], [B], loop(i, 10, body)), {"A": a})["B"]
    np.testing.assert_array_equal(out, np.where(a % 3 == 0, a + 100, -a))


def test_select_evaluates_only_the_taken_branch() -> None:
    # B[i] = select(i > 0, A[i - 1], 0): A[-1] must never be read (it would wrap in numpy).
    A, B = tensor("A", (6,)), tensor("B", (6,))
    i = var("i")
    value = ir.Select(i > 0, Load(A, (i - 1,)), ir.const(0.0))
    a = np.arange(1, 7, dtype=np.float32)
    out = _both(func("pad", [A], [B], loop(i, 6, Store(B, value, (i,)))), {"A": a})["B"]
    np.testing.assert_array_equal(out, [0, 1, 2, 3, 4, 5])


# -- vector lanes, lets, allocations, loop kinds --------------------------------------------------
def test_ramp_broadcast_vector_loop() -> None:
    A, B = tensor("A", (16,)), tensor("B", (16,))
    i = var("i")
    ramp = ir.Ramp(i * 4, ir.const(1), 4)
    body = Store(B,
                 Load(A, (ramp,)) * ir.Broadcast(ir.const(3.0), 4) + ir.Broadcast(Load(A, (i,)), 4), (ramp,))
    f = func("vec", [A], [B], loop(i, 4, body, kind=ForType.VECTORIZED, factor=4))
    a = np.arange(16, dtype=np.float32)
    np.testing.assert_array_equal(_both(f, {"A": a})["B"], a * 3 + np.repeat(a[:4], 4))


def test_let_alloc_free_sync_and_all_loop_kinds() -> None:
    A, B = tensor("A", (4, 8)), tensor("B", (4, 8))
    tmp = tensor("T", (8,), scope="shared")
    bx, tx, u = var("bx"), var("tx"), var("u")
    t = ir.Var("t", ir.dtype.float32)
    body = loop(bx, 4,
                ir.Alloc(tmp.buffer, tmp.shape),
                loop(tx, 8, Store(tmp, Load(A, (bx, tx)) + ir.const(1.0), (tx,)),
                     kind=ForType.GPU_THREAD, bind=0),
                ir.Evaluate(ir.Call("__syncthreads", (), ir.dtype.int32, ir.CallType.INTRINSIC)),
                loop(tx, 8, ir.Let(t, Load(tmp, (ir.const(7) - tx,))),
                     loop(u, 1, Store(B, ir.Var("t", ir.dtype.float32) * ir.const(2.0), (bx, tx)),
                          kind=ForType.UNROLLED),
                     kind=ForType.GPU_THREAD, bind=0),
                ir.Free(tmp.buffer),
                kind=ForType.GPU_BLOCK, bind=0)
    f = func("gpu", [A], [B], body)
    a = np.arange(32, dtype=np.float32).reshape(4, 8)
    np.testing.assert_array_equal(_both(f, {"A": a})["B"], (a[:, ::-1] + 1) * 2)


def test_parallel_loop_and_int64_indices() -> None:
    A, B = tensor("A", (5, 3), "int64"), tensor("B", (3, 5), "int64")
    i, j = var("i", "int64"), var("j", "int64")
    f = func("transpose", [A], [B],
             loop(i, 5, loop(j, 3, Store(B, Load(A, (i, j)), (j, i))), kind=ForType.PARALLEL))
    a = np.arange(15, dtype=np.int64).reshape(5, 3)
    np.testing.assert_array_equal(_both(f, {"A": a})["B"], a.T)


# -- dependences: what may and may not be vectorised ---------------------------------------------
def test_carried_dependence_runs_serially(flat_calls: list[int]) -> None:
    # prefix sum in place: B[i] = B[i-1] + A[i]  (B[0] = A[0] first)
    A, B = tensor("A", (50,), "int32"), tensor("B", (50,), "int32")
    i = var("i")
    f = func("scan", [A], [B], Store(B, Load(A, (ir.const(0),)), (ir.const(0),)),
             loop(i, 49, Store(B, Load(B, (i,)) + Load(A, (i + 1,)), (i + 1,))))
    a = np.arange(50, dtype=np.int32)
    np.testing.assert_array_equal(run_ir(f, {"A": a})["B"], np.cumsum(a))
    assert flat_calls == []


def test_non_injective_store_keeps_last_write(flat_calls: list[int]) -> None:
    A, B = tensor("A", (10,), "int32"), tensor("B", (5,), "int32")
    i = var("i")
    f = func("halve", [A], [B], loop(i, 10, Store(B, Load(A, (i,)), (ir.Div(i, ir.const(2)),))))
    a = np.arange(10, dtype=np.int32) * 3
    np.testing.assert_array_equal(run_ir(f, {"A": a})["B"], a[1::2])
    assert flat_calls == []


def test_nest_flattening_with_tiled_and_symbolic_indices(flat_calls: list[int]) -> None:
    # B[(o*4 + k)*S + j] = A[o*4 + k, j]: injective through the mixed-radix rule with S bound at run time.
    S = ir.Var("S", ir.dtype.int64, lower_bound=ir.const(1, "int64"), is_symbolic_constant=True)
    A = tensor("A", (8, S), "float64")
    B = ir.make_tensor("B", (ir.const(8, "int64") * S,), ir.dtype.float64)
    o, k, j = var("o", "int64"), var("k", "int64"), var("j", "int64")
    row = o * 4 + k
    f = func("flat", [A], [B], loop(o, ir.const(2, "int64"), loop(k, ir.const(4, "int64"), loop(j, S,
             Store(B, Load(A, (row, j)), (row * S + j,))))), scalars=[S])
    a = np.random.default_rng(0).standard_normal((8, 6))
    np.testing.assert_array_equal(run_ir(f, {"A": a})["B"], a.ravel())
    assert flat_calls == [48]


def test_reduction_under_guard_and_dependent_load_in_same_body() -> None:
    # C[0] = sum over k < 37 (loop of 40 guarded), D[k] = A[k] * 2 (other buffer, same body)
    A, C = tensor("A", (40,), "int32"), tensor("C", (1,), "int32")
    k = var("k")
    zero = ir.const(0)
    upd = Store(C, Load(C, (zero,)) + Load(A, (k,)), (zero,))
    f = func("gsum", [A], [C], Store(C, ir.const(5), (zero,)),
             loop(k, 40, ir.IfThenElse(k < 37, ir.Block((upd,)))))
    a = np.arange(40, dtype=np.int32)
    assert _both(f, {"A": a})["C"].tolist() == [5 + int(a[:37].sum())]


def test_cross_thread_helper_is_unsupported() -> None:
    A, B = tensor("A", (4, 8)), tensor("B", (4,))
    i, j = var("i"), var("j")
    shm = ir.Buffer("shm32__fp32_reduce", (ir.const(32),), ir.dtype.float32, ir.MemoryType.GPU_SHARED)
    call = ir.Call("cinn_block_reduce_sum_fp32", (Load(A, (i, j)), ir.StringImm(shm.name), ir.const(False)),
                   ir.dtype.float32)
    f = func("xr", [A], [B], loop(i, 4, loop(j, 8, Store(B, call, (i,)))))
    with pytest.raises(UnsupportedConstructError, match="cinn_block_reduce_sum_fp32.*real GPU threads"):
        run_ir(f, {"A": np.zeros((4, 8), np.float32)})


def test_unbound_variable_and_reduce_node_are_errors() -> None:
    A, B = tensor("A", (4,)), tensor("B", (4,))
    i = var("i")
    f = func("bad", [A], [B], loop(i, 4, Store(B, Load(A, (var("threadIdx.x"),)), (i,))))
    with pytest.raises(cp.CinnError, match="threadIdx.x.*never bound"):
        run_ir(f, {"A": np.zeros(4, np.float32)})


def test_poisoned_outputs_show_unwritten_elements() -> None:
    A, B = tensor("A", (4,)), tensor("B", (4,))
    i = var("i")
    f = func("half", [A], [B], loop(i, 2, Store(B, Load(A, (i,)), (i,))))
    out = run_ir(f, {"A": np.ones(4, np.float32)})["B"]
    assert out[:2].tolist() == [1, 1] and np.isnan(out[2:]).all()
    assert run_ir(f, {"A": np.ones(4, np.float32)}, poison=False)["B"].tolist() == [1, 1, 0, 0]


def test_consecutive_vectorised_nests_with_guards() -> None:
    # A first nest leaves 24-long columns in the environment; the guarded second nest has 36.
    A, B, D = tensor("A", (24,)), tensor("B", (24,)), tensor("D", (36,))
    i, j = var("i"), var("j")
    first = loop(i, 24, Store(B, Load(A, (i,)) + ir.const(1.0), (i,)))
    second = loop(j, 36, ir.IfThenElse(j < 24, ir.Block((Store(D, Load(B, (j,)), (j,)),)),
                                       ir.Block((Store(D, ir.const(0.0), (j,)),))))
    a = np.arange(24, dtype=np.float32)
    out = _both(func("two", [A], [B, D], first, second), {"A": a})
    np.testing.assert_array_equal(out["D"], np.concatenate([a + 1, np.zeros(12, np.float32)]))


def test_reduction_nest_with_varying_target_is_one_ordered_scatter(flat_calls: list[int]) -> None:
    # for i { for k { C[i] = C[i] + A[i, k] } } (init hoisted): flattened over (i, k), folded in order.
    A, C = tensor("A", (7, 9)), tensor("C", (7,))
    i, k, z = var("i"), var("k"), var("z")
    init = loop(z, 7, Store(C, ir.const(0.5), (z,)))
    upd = loop(i, 7, loop(k, 9, Store(C, Load(C, (i,)) + Load(A, (i, k)), (i,))))
    a = np.random.default_rng(2).standard_normal((7, 9)).astype(np.float32)
    out = _both(func("rows", [A], [C], init, upd), {"A": a})["C"]
    acc = np.full(7, 0.5, np.float32)
    for col in a.T:
        acc = acc + col
    np.testing.assert_array_equal(out, acc)
    assert flat_calls == [7, 63]


def test_reduction_over_unit_axes_and_unit_nests() -> None:
    X = cp.placeholder((1, 3), "float32", "X")
    r = cp.reduce_axis(1, "r")
    Z = cp.compute((3,), lambda i: cp.reduce_max(X[r, i], [r]), "Z")
    x = np.arange(3, dtype=np.float32).reshape(1, 3)
    np.testing.assert_array_equal(_both(cp.lower("unit", [X, Z]), {"X": x})["Z"], x[0])
    A, B = tensor("A", (1, 1)), tensor("B", (1,))
    i, j = var("i"), var("j")
    f = func("one", [A], [B], loop(i, 1, loop(j, 1, Store(B, Load(A, (i, j)), (ir.const(0),)))))
    assert _both(f, {"A": np.full((1, 1), 4.0, np.float32)})["B"].tolist() == [4.0]
