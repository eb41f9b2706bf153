"""The x86 tactics (schedules/tactics/x86*.py): each path differentially tested against numpy on
odd, non-power-of-two and symbolic shapes, with the 16-lane (AVX-512) and 8-lane (AVX2) widths;
the shape of the chosen schedule pinned where it is the point (column reductions, transposes,
fused rows); the known failures as regressions."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

import cinn_py as cp
from cinn_py.ir import For, walk
from schedules.tactics import analyze_group, auto_schedule, build_schedule_config

from tests.tactics.conftest import colnorm, layernorm, reduce_all, rmsnorm, softmax


def _auto(func: Any, bits: int = 512) -> Any:
    cfg = replace(build_schedule_config(analyze_group(func)), vector_width_bits=bits)
    return auto_schedule(func, target="x86", config=cfg)


def _headers(sch: Any) -> list[str]:
    out = []
    for node in walk(sch.func.body):
        if isinstance(node, For):
            kind = node.for_type.value + (f"[{node.vectorize_factor}]" if node.vectorize_factor else "")
            out.append(f"{kind} {cp.print_ir(node.extent)}")
    return out


def _run(func: Any, sch: Any, arrays: list[np.ndarray]) -> list[np.ndarray]:
    got = cp.build(sch, target="x86")(*arrays)
    return list(got) if isinstance(got, (list, tuple)) else [got]


def _rand(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return (rng.random(shape, dtype=np.float32) + 0.5).astype(np.float32)


# -- groups: (builder, input shapes, numpy reference) ----------------------------------------------
def _elementwise(shape: tuple[Any, ...]) -> Any:
    X = cp.placeholder(shape, "float32", "X")
    Y = cp.compute(shape, lambda *i: cp.maximum(X[i] * 2.0 - 1.5, 0.0), "Y")
    return cp.lower("ew", [X, Y])


def _bias_exp(rows: Any, cols: int) -> Any:
    X = cp.placeholder((rows, cols), "float32", "X")
    B = cp.placeholder((cols,), "float32", "B")
    Y = cp.compute((rows, cols), lambda i, j: (X[i, j] + B[j]) / (cp.exp(X[i, j] * -1.5) + 1.0), "Y")
    return cp.lower("bias_exp", [X, B, Y])


def _transpose2(n: Any, m: Any) -> Any:
    X = cp.placeholder((n, m), "float32", "X")
    Y = cp.compute((m, n), lambda i, j: X[j, i] + 1.0, "Y")
    return cp.lower("t2", [X, Y])


def _transpose3(b: int, n: int, m: int) -> Any:
    X = cp.placeholder((b, n, m), "float32", "X")
    Y = cp.compute((b, m, n), lambda a, i, j: X[a, j, i], "Y")
    return cp.lower("t3", [X, Y])


def _rowsum3(a: int, b: int, c: Any) -> Any:
    X = cp.placeholder((a, b, c), "float32", "X")
    k = cp.reduce_axis(c, "k")
    R = cp.compute((a, b), lambda i, j: cp.reduce_sum(X[i, j, k], k), "R")
    return cp.lower("rowsum3", [X, R])


def _sum_last_two(a: int, b: int, c: int) -> Any:
    X = cp.placeholder((a, b, c), "float32", "X")
    k1, k2 = cp.reduce_axis(b, "k1"), cp.reduce_axis(c, "k2")
    R = cp.compute((a,), lambda i: cp.reduce_sum(X[i, k1, k2], [k1, k2]), "R")
    return cp.lower("sum2", [X, R])


def _colsum(rows: Any, cols: int) -> Any:
    X = cp.placeholder((rows, cols), "float32", "X")
    k = cp.reduce_axis(rows, "k")
    C = cp.compute((cols,), lambda j: cp.reduce_sum(X[k, j], k), "C")
    return cp.lower("colsum", [X, C])


def _int_compare(n: int, m: int) -> Any:
    X = cp.placeholder((n, m), "int32", "X")
    Y = cp.compute((n, m), lambda i, j: X[i, j] * 3 + 7, "Y")
    Z = cp.compute((n, m), lambda i, j: X[i, j] > 4, "Z")
    return cp.lower("ints", [X, Y, Z])


def _softmax_np(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _layernorm_np(x: np.ndarray) -> np.ndarray:
    d = x - x.mean(axis=1, keepdims=True)
    return d / np.sqrt((d * d).mean(axis=1, keepdims=True) + np.float32(1e-5))


def _rms_np(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    return x / np.sqrt((x * x).mean(axis=1, keepdims=True) + np.float32(1e-6)) * w


S0, S1, N = cp.sym("S0"), cp.sym("S1"), cp.sym("N")
Case = tuple[Callable[[], Any], list[tuple[int, ...]], Callable[..., Any]]
CASES: dict[str, Case] = {
    "elementwise_odd": (lambda: _elementwise((33, 70)), [(33, 70)], lambda x: np.maximum(x * 2 - 1.5, 0)),
    "elementwise_short_rows": (lambda: _elementwise((101, 5)), [(101, 5)],
                               lambda x: np.maximum(x * 2 - 1.5, 0)),
    "elementwise_flat": (lambda: _elementwise((3 * 16384 + 5,)), [(3 * 16384 + 5,)],
                         lambda x: np.maximum(x * 2 - 1.5, 0)),
    "elementwise_symbolic": (lambda: _elementwise((S0, S1)), [(5, 37)], lambda x: np.maximum(x * 2 - 1.5, 0)),
    "elementwise_7_S0_S1": (lambda: _elementwise((7, S0, S1)), [(7, 3, 21)],
                            lambda x: np.maximum(x * 2 - 1.5, 0)),
    "few_long_rows": (lambda: _elementwise((3, 40000)), [(3, 40000)], lambda x: np.maximum(x * 2 - 1.5, 0)),
    "bias_exp": (lambda: _bias_exp(9, 100), [(9, 100), (100,)],
                 lambda x, b: (x + b) / (np.exp(x * -1.5) + 1)),
    "bias_exp_symbolic": (lambda: _bias_exp(N, 37), [(6, 37), (37,)],
                          lambda x, b: (x + b) / (np.exp(x * -1.5) + 1)),
    "transpose_odd": (lambda: _transpose2(37, 53), [(37, 53)], lambda x: x.T + 1),
    "transpose_blocks": (lambda: _transpose2(240, 208), [(240, 208)], lambda x: x.T + 1),
    "transpose_symbolic": (lambda: _transpose2(S0, S1), [(19, 40)], lambda x: x.T + 1),
    "transpose_3d": (lambda: _transpose3(3, 40, 48), [(3, 40, 48)], lambda x: x.transpose(0, 2, 1)),
    "softmax_odd": (lambda: softmax(16, 100), [(16, 100)], _softmax_np),
    "softmax_10_cols": (lambda: softmax(9, 10), [(9, 10)], _softmax_np),
    "softmax_33_cols": (lambda: softmax(5, 33), [(5, 33)], _softmax_np),
    "softmax_symbolic_rows": (lambda: softmax(N, 70), [(11, 70)], _softmax_np),
    "softmax_symbolic_cols": (lambda: softmax(6, N), [(6, 91)], _softmax_np),
    "layernorm": (lambda: layernorm(6, 1000), [(6, 1000)], _layernorm_np),
    "rmsnorm": (lambda: rmsnorm(37, 300), [(37, 300), (300,)], _rms_np),
    "rowsum_3d_symbolic": (lambda: _rowsum3(3, 5, N), [(3, 5, 77)], lambda x: x.sum(axis=2)),
    "sum_last_two_axes": (lambda: _sum_last_two(4, 6, 50), [(4, 6, 50)], lambda x: x.sum(axis=(1, 2))),
    "colsum": (lambda: _colsum(100, 64), [(100, 64)], lambda x: x.sum(axis=0)),
    "colsum_odd": (lambda: _colsum(1001, 37), [(1001, 37)], lambda x: x.sum(axis=0)),
    "colsum_symbolic_rows": (lambda: _colsum(N, 40), [(203, 40)], lambda x: x.sum(axis=0)),
    "colsum_few_rows": (lambda: _colsum(3, 50), [(3, 50)], lambda x: x.sum(axis=0)),
    "colnorm": (lambda: colnorm(100, 70), [(100, 70)], lambda x: x / x.sum(axis=0)),
    "reduce_all": (lambda: reduce_all(300, zero_d=True), [(300,)], lambda x: np.float32((x * 2).sum())),
}


@pytest.mark.parametrize("bits", [512, 256], ids=["avx512", "avx2"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_x86_auto_matches_numpy(name: str, bits: int) -> None:
    build, shapes, reference = CASES[name]
    func = build()
    sch = _auto(func, bits)
    report = sch.auto_report
    arrays = [_rand(np.random.default_rng(7), *s) for s in shapes]
    [got] = _run(func, sch, arrays)
    np.testing.assert_allclose(got, reference(*arrays), rtol=2e-5, atol=1e-5)
    assert report.strategy == "x86-tuned", report.fallbacks


def test_x86_int_and_bool_outputs() -> None:
    func = _int_compare(9, 45)
    x = np.random.default_rng(1).integers(-10, 10, (9, 45)).astype(np.int32)
    y, z = _run(func, _auto(func), [x])
    np.testing.assert_array_equal(y, x * 3 + 7)
    np.testing.assert_array_equal(z, x > 4)


def test_elementwise_uses_native_lanes() -> None:
    """16 float32 lanes with 512-bit vectors (AVX-512), 8 with 256-bit ones; rows in parallel."""
    assert _headers(_auto(_elementwise((64, 300)), 512)) == ["parallel 64", "vectorize[16] 300"]
    assert _headers(_auto(_elementwise((64, 300)), 256)) == ["parallel 64", "vectorize[8] 300"]


def test_column_sum_reduces_outside_a_vector_strip() -> None:
    """rows split into 8 parallel slices; within a slice 4 rows per pass (unrolled) outside a
    16-column vector strip; the 8 partial rows summed at the end."""
    sch = _auto(_colsum(512, 256))
    assert _headers(sch) == ["serial 8", "vectorize[16] 256",        # rf_C init
                             "parallel 8", "serial 16", "serial 16", "unroll 4", "vectorize[16] 16",
                             "serial 256", "serial 8"]             # C = sum of the partial rows
    assert "column reduction" in sch.auto_report.nests["C"]


def _bias_grad(batch: int, seq: int, cols: int, keepdim: bool) -> Any:
    """A bias gradient: the column sum of a `[batch, seq, cols]` cotangent over its two leading
    axes (two reduce loops), `[cols]` or `[1, 1, cols]` (unit spatial loops)."""
    X = cp.placeholder((batch, seq, cols), "float32", "X")
    b, s = cp.reduce_axis(batch, "b"), cp.reduce_axis(seq, "s")
    if keepdim:
        C = cp.compute((1, 1, cols), lambda u, v, j: cp.reduce_sum(X[b, s, j], [b, s]), "C")
    else:
        C = cp.compute((cols,), lambda j: cp.reduce_sum(X[b, s, j], [b, s]), "C")
    return cp.lower("bias_grad", [X, C])


@pytest.mark.parametrize("batch, seq, cols, keepdim",
                         [(4, 64, 512, False), (4, 64, 512, True), (3, 7, 37, True),
                                                      (2, 5, 100, False)])
def test_column_sum_over_leading_axes_fuses_its_reduce_loops(batch: int, seq: int, cols: int,
                                                             keepdim: bool) -> None:
    """The reduce loops fused into one, split into parallel row slices; unit spatial loops
    (keepdim) stay outside; the columns vectorised (it was a serial sum per column, 5-10x slower)."""
    func = _bias_grad(batch, seq, cols, keepdim)
    sch = _auto(func)
    assert "column reduction" in sch.auto_report.nests["C"]
    assert any(h.startswith("parallel") for h in _headers(sch)) == (batch * seq * cols >= 4096)  # worth it
    assert any(h.startswith("vectorize[16]") for h in _headers(sch))
    x = _rand(np.random.default_rng(3), batch, seq, cols)
    want = x.sum((0, 1), keepdims=keepdim)
    np.testing.assert_allclose(_run(func, sch, [x])[0], want, rtol=1e-5)


def test_transpose_is_tiled() -> None:
    sch = _auto(_transpose2(512, 512))
    assert _headers(sch) == ["parallel 4", "serial 16", "serial 16", "unroll 16", "vectorize[16] 16"]
    assert "tiled transpose" in sch.auto_report.nests["Y"]


def test_softmax_is_one_row_loop_with_exp_computed_once() -> None:
    """max, exp (kept: two consumers), sum and scale in one parallel row loop; exp is stored in
    a local row buffer and appears once in the IR."""
    sch = _auto(softmax(64, 1024))
    headers = _headers(sch)
    assert headers[0] == "parallel 64" and headers.count("parallel 64") == 1
    assert sch.auto_report.inlined == []
    assert cp.print_ir(sch.func).count("exp(") == 1


@pytest.mark.parametrize("rows, cols, vectors",
                         [(6, 1024, 0), (cp.sym("R"), 96, 0), (6, 1024, 4), (5, 100, 2), (4, 33, 0)])
def test_softmax_exp_fused_into_its_partial_sums(rows: Any, cols: int, vectors: int) -> None:
    """Reduction strategy knobs: with `fuse_reduce_producers` the exp stage is computed inside
    the sum's partial-sum vector loop (by the rule one vector of partial sums, the value being a
    transcendental; the max keeps two), still once; `reduce_vectors` sets the partial sums of
    both reductions. Results match numpy."""
    func = softmax(rows, cols)
    cfg = replace(build_schedule_config(analyze_group(func)), vector_width_bits=512,
                  fuse_reduce_producers=True, reduce_vectors=vectors)
    sch = auto_schedule(func, target="x86", config=cfg)
    assert "E fused into the partial-sum loop" in sch.auto_report.nests["*"], sch.auto_report
    e_loops = [lp for lp in walk(sch.func.body) if isinstance(lp, For)
               and any(getattr(b, "name", "") == "E" for b in walk(lp.body))]
    innermost = e_loops[-1]
    sum_lanes, max_lanes = (16 * vectors, 16 * vectors) if vectors else (16, 32 if cols >= 64 else 16)
    assert innermost.vectorize_factor == sum_lanes, cp.print_ir(innermost)
    assert "rf_S" in cp.print_ir(innermost)                       # exp and its sum: one loop
    assert cp.print_ir(sch.func).count("exp(") == 1
    assert _headers(sch)[1].startswith(f"vectorize[{max_lanes}] {max_lanes}")  # the max's partial results
    x = _rand(np.random.default_rng(3), rows if isinstance(rows, int) else 6, cols) * 4
    (got,) = _run(func, sch, [x])
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_large_outputs_stream() -> None:
    from cinn_py.ir import NONTEMPORAL_ATTR

    small, large = _auto(_elementwise((64, 64))), _auto(_elementwise((4096, 1100)))
    assert NONTEMPORAL_ATTR not in cp.print_ir(small.func)
    assert NONTEMPORAL_ATTR in cp.print_ir(large.func)
    assert "streaming" in large.auto_report.nests["Y"]
    code = cp.codegen(large, target="x86")
    assert "!nontemporal" in code.llvm_ir


@pytest.mark.parametrize("l3, streams", [(32 << 20, False), (4 << 20, True)])
def test_streaming_threshold_is_half_the_last_level_cache(l3: int, streams: bool) -> None:
    """A 4 MB output streams past a 4 MB last-level cache, not past a 32 MB one (the target's
    caches, as the OS reports them)."""
    from cinn_py.ir import NONTEMPORAL_ATTR
    from cinn_py.target import CpuLimits, Target

    host = Target.x86()
    limits = CpuLimits(512, host.cpu.cores, (("L1d", 48 << 10), ("L2", 1 << 20), ("L3", l3)))
    target = replace(host, limits=limits)
    sch = auto_schedule(_elementwise((1024, 1024)), target=target)
    assert (NONTEMPORAL_ATTR in cp.print_ir(sch.func)) == streams, sch.auto_report.nests
    assert sch.auto_report.config.streaming_store_bytes == l3 // 2


def test_parallel_on_fused_symbolic_3d_nest() -> None:
    """Regression: `parallel` on the fused loop of a (7, S0, S1) nest raised
    IllegalDependenceError (the dependence check could not see that (f / (S0*S1), (f / S1) % S0,
    f % S1) determines f)."""
    sch = cp.IRSchedule(_elementwise((7, S0, S1)))
    fused = sch.fuse(sch.get_loops("Y"))
    sch.parallel(fused)
    x = _rand(np.random.default_rng(0), 7, 4, 9)
    [got] = _run(None, sch, [x])
    np.testing.assert_allclose(got, np.maximum(x * 2 - 1.5, 0), rtol=1e-6)


def test_fallback_is_reported() -> None:
    """A row group whose nests cannot share one row loop (the elementwise nest runs over 7 of
    the 8 rows' columns, a different loop extent) falls back to per-nest schedules and says why."""
    X = cp.placeholder((8, 300), "float32", "X")
    k = cp.reduce_axis(300, "k")
    C = cp.compute((8,), lambda i: cp.reduce_sum(X[i, k], k), "C")
    Z = cp.compute((7, 300), lambda i, j: X[i, j] * 2.0, "Z")
    func = cp.lower("g", [X, C, Z])
    sch = _auto(func)
    report = sch.auto_report
    assert report.strategy == "x86-tuned"
    assert report.fallbacks and report.fallbacks[0].startswith("fused rows:")
    x = _rand(np.random.default_rng(0), 8, 300)
    c, z = _run(func, sch, [x])
    np.testing.assert_allclose(c, x.sum(axis=1), rtol=1e-5)
    np.testing.assert_allclose(z, x[:7] * 2, rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float16", "float64", "int8", "int64", "uint8"])
@pytest.mark.parametrize("kind", ["elementwise", "row_sum", "column_max"])
def test_other_dtypes_match_the_interpreter(dtype: str, kind: str) -> None:
    """Lanes follow the dtype (32 float16, 8 float64, 64 int8 lanes at 512 bits)."""
    X = cp.placeholder((37, 70), dtype, "X")
    if kind == "elementwise":
        out = cp.compute((37, 70), lambda i, j: X[i, j] + X[i, j], "Y")
    elif kind == "row_sum":
        k = cp.reduce_axis(70, "k")
        out = cp.compute((37,), lambda i: cp.reduce_sum(X[i, k], k), "R")
    else:
        k = cp.reduce_axis(37, "k")
        out = cp.compute((70,), lambda j: cp.reduce_max(X[k, j], k), "C")
    func = cp.lower(f"{kind}_{dtype}", [X, out])
    sch = _auto(func)
    assert sch.auto_report.strategy == "x86-tuned", sch.auto_report.fallbacks
    x = (np.random.default_rng(2).random((37, 70)) * 4).astype(dtype)
    [got] = _run(func, sch, [x])
    [want] = cp.run_ir(func, {"X": x}).values()
    np.testing.assert_allclose(got.astype(np.float64), np.asarray(want, dtype=np.float64), rtol=1e-2)
