"""No RecursionError on realistic programs (issue 12): 1,000-op chains through NetBuilder and the
DSL, 1,000-deep expression trees, and the IR's equality/hash/print/parse of deep trees.

How the compiler stays inside Python's recursion limit whatever the program's size:
- fusion caps a group at `MAX_GROUP_OPS` ops (TVM's `max_depth`), so a long chain is several kernels;
- `compute()` splits a body deeper than `MAX_EXPR_DEPTH` into temporaries of the same shape, and
  `compute_inline` refuses an inlining that would make an expression deeper than that bound;
- `Expr.__eq__`/`__hash__` finish deep trees with explicit stacks (`cinn_py.ir.structural`).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import cinn_py as cp
from cinn_py.frontend import NetBuilder
from cinn_py.frontend.fusion import MAX_GROUP_OPS
from cinn_py.ir import MAX_EXPR_DEPTH, Add, FloatImm, expr_depth, float32, walk
from cinn_py.ir.structural import expr_hash_iterative
from schedules.primitives.compute_inline import InlineDepthError

CHAIN = 1000


def _net_chain(n: int) -> tuple[object, np.ndarray]:
    nb = NetBuilder("chain")
    x = nb.create_input("float32", [4, 8], "x")
    y = x
    for i in range(n):
        y = nb.add(nb.scale(y, 0.5), x) if i % 2 else nb.relu(y)
    return nb.build([y]), np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)


def test_netbuilder_chain_of_1000_ops_compiles_auto_and_matches_numpy() -> None:
    program, x = _net_chain(CHAIN)
    exe = cp.compile(program, "x86")
    groups = exe.compiled.groups
    assert len(groups) > 1 and all(len(g.ops) <= MAX_GROUP_OPS for g in groups)
    np.testing.assert_allclose(exe(x), program.run_numpy(x), rtol=1e-5, atol=1e-5)


def test_dsl_expression_1000_levels_deep_is_split_into_bounded_parts() -> None:
    X = cp.placeholder((4, 8), "float32", "X")

    def body(i: object, j: object) -> object:
        e = X[i, j]
        for _ in range(CHAIN):
            e = e * 0.5 + 1.0
        return e

    Y = cp.compute((4, 8), body, "Y")
    func = cp.lower("deep_expr", [X, Y])
    assert max(expr_depth(n.value) for n in walk(func.body) if type(n).__name__ == "Store") <= MAX_EXPR_DEPTH
    assert cp.parse_ir(cp.print_ir(func)) is not None  # the text round trip of the split function
    xs = np.random.default_rng(1).standard_normal((4, 8)).astype(np.float32)
    want = xs.copy()
    for _ in range(CHAIN):
        want = want * np.float32(0.5) + np.float32(1.0)
    np.testing.assert_allclose(cp.run_ir(func, {"X": xs})["Y"], want, rtol=1e-5)
    np.testing.assert_allclose(cp.build(func, "x86", schedule="auto")(xs), want, rtol=1e-5)


@pytest.mark.slow  # 5-7 CPU-s; the 1000-deep NetBuilder and DSL tests above stay in the default run
def test_dsl_chain_of_stages_auto_schedules_with_bounded_inlining() -> None:
    X = cp.placeholder((4, 8), "float32", "X")
    t = X
    for k in range(200):
        t = (lambda prev: cp.compute((4, 8), lambda a, b: prev[a, b] * 0.5 + 1.0, f"T{k}"))(t)
    func = cp.lower("chain200", [X, t])
    sch = cp.auto_schedule(func, "x86")
    stores = [n for n in walk(sch.func.body) if type(n).__name__ == "Store"]
    assert 1 < len(stores) < 200 and max(expr_depth(s.value) for s in stores) <= MAX_EXPR_DEPTH
    xs = np.random.default_rng(2).standard_normal((4, 8)).astype(np.float32)
    want = xs.copy()
    for _ in range(200):
        want = want * np.float32(0.5) + np.float32(1.0)
    np.testing.assert_allclose(cp.build(sch, "x86")(xs), want, rtol=1e-5)


def test_compute_inline_refuses_to_exceed_the_depth_bound() -> None:
    X = cp.placeholder((8,), "float32", "X")
    t = X
    for k in range(MAX_EXPR_DEPTH // 2 + 1):
        t = (lambda prev: cp.compute((8,), lambda a: prev[a] * 0.5 + 1.0, f"A{k}"))(t)
    from schedules import IRSchedule

    sch = IRSchedule(cp.lower("bound", [X, t]))
    for k in range(MAX_EXPR_DEPTH // 2 - 1, 0, -1):  # A{k} into A{k+1}: depth grows by two each time
        try:
            sch.compute_inline(f"A{k}")
        except InlineDepthError as err:
            assert "MAX_EXPR_DEPTH" in str(err) and f"A{k}" in str(err)
            return
    pytest.fail("inlining never hit MAX_EXPR_DEPTH")


def test_equality_and_hash_of_a_10000_deep_tree() -> None:
    a = b = FloatImm(float32, 0.0)
    for k in range(10_000):
        a = Add(a, FloatImm(float32, float(k % 7)))
        b = Add(b, FloatImm(float32, float(k % 7)))
    assert a == b and hash(a) == hash(b) == expr_hash_iterative(a)
    assert a != Add(b, FloatImm(float32, 1.0))


def test_reduction_body_deeper_than_the_bound_is_a_clear_error() -> None:
    # A reduce body cannot be split into same-shape temporaries (they would need the reduce axis):
    # compute() names the tensor and the bound instead of recursing through it later.
    X = cp.placeholder((4, 8), "float32", "X")
    k = cp.reduce_axis(8, "k")

    def deep(i: object) -> object:
        e = X[i, k]
        for _ in range(MAX_EXPR_DEPTH):
            e = e * 0.5 + X[i, k]
        return cp.reduce_sum(e, k)

    with pytest.raises(cp.LoweringError,
                       match="compute 'R': the reduction body is .* more than MAX_EXPR_DEPTH"):
        cp.compute((4,), deep, "R")


@pytest.mark.slow  # 5-7 CPU-s; the 1000-deep NetBuilder and DSL tests above stay in the default run
def test_a_deep_body_keeps_one_loop_per_part_so_compile_time_stays_linear() -> None:
    """Issue 23 item 10: a 2000-level body (one loop per part of it, ~100 loops of 64 elements)
    was fully unrolled by LLVM into one straight-line block, and LLVM's passes are superlinear in a
    block's size (500 levels: 7.9 s, 2000: 64.5 s). Its loops now keep `llvm.loop.unroll.disable`
    (codegen/llvm/loop_md.py): the optimized function keeps a block per loop, values unchanged."""
    from codegen.llvm import generate_x86

    a = cp.placeholder((64,), "float32", "A")

    def body(i: object) -> object:
        x = a[i]
        for k in range(2000):
            x = x * 0.5 + 0.25 if k % 2 else x + a[i] * 0.125
        return x

    func = cp.lower("deep2000", [a, cp.compute((64,), body, "B")])
    code = generate_x86(func)
    blocks = re.findall(r"(?m)^[\w.\"$-]+:", code.llvm_ir)
    assert len(blocks) > 50, f"the optimized kernel has {len(blocks)} blocks: its loops were fully unrolled"
    x = np.linspace(-1, 1, 64, dtype=np.float32)
    want = x.copy()
    for k in range(2000):
        want = (want * np.float32(0.5) + np.float32(0.25)) if k % 2 else want + x * np.float32(0.125)
    np.testing.assert_allclose(cp.build(func, "x86")(x), want, rtol=1e-5, atol=1e-6)
