"""Decomposition (vs the composite ops' numpy semantics), constant folding, CSE and DCE."""

from __future__ import annotations

import numpy as np
import pytest

from cinn_py.frontend.decompose import decompose
from cinn_py.frontend.graph_passes import (
    eliminate_common_subexpressions, eliminate_dead_code, fold_constants, optimize,
)
from cinn_py.frontend.net_builder import NetBuilder
from cinn_py.frontend.ops import get_op

RNG = np.random.default_rng(0)


def _rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _composite_program(op: str, **attrs):  # type: ignore[no-untyped-def]
    nb = NetBuilder(op)
    x = nb.create_input("float32", ["S0", 16], "X")
    w = nb.create_input("float32", [16], "W")
    b = nb.create_input("float32", [16], "B")
    if op == "softmax":
        nb.softmax(x, **attrs)
    elif op == "rms_norm":
        nb.rms_norm(x, w, eps=1e-5)
    elif op == "layer_norm":
        nb.layer_norm(x, w, b, eps=1e-5)
    else:
        nb.gelu(x, **attrs)
    return nb.build()


@pytest.mark.parametrize("op, attrs", [("softmax", {}), ("softmax", {"axes": [0]}), ("rms_norm", {}),
                                       ("layer_norm", {}), ("gelu", {}), ("gelu", {"approximate": True})])
@pytest.mark.parametrize("rows", [1, 5])
def test_decomposition_matches_numpy(op: str, attrs: dict, rows: int) -> None:
    p = _composite_program(op, **attrs)
    d = decompose(p)
    assert not any(get_op(o.type).composite for o in d.ops)
    assert [v.name for v in d.outputs] == [v.name for v in p.outputs]
    args = (_rand(rows, 16), _rand(16), _rand(16))
    np.testing.assert_allclose(d.run_numpy(*args), p.run_numpy(*args), rtol=2e-6, atol=2e-6)


def test_softmax_decomposition_ops() -> None:
    d = decompose(_composite_program("softmax"))
    assert [o.type for o in d.ops] == ["reduce_max", "broadcast_to", "subtract", "exp", "reduce_sum",
                                       "broadcast_to", "divide"]
    assert d.ops[-1].output.name == "softmax_0"


def test_softmax_decomposition_is_stable_for_large_inputs() -> None:
    d = decompose(_composite_program("softmax"))
    x = np.full((2, 16), 1000.0, np.float32)
    np.testing.assert_allclose(d.run_numpy(x, _rand(16), _rand(16)), np.full((2, 16), 1 / 16), rtol=1e-6)


def test_constant_folding_folds_fill_constant_subgraphs() -> None:
    nb = NetBuilder("fold")
    x = nb.create_input("float32", ["S0", 4], "X")
    c = nb.fill_constant([1], 3.0)
    c2 = nb.scale(nb.exp(nb.multiply(c, c)), 0.5, 1.0)          # exp(9) * 0.5 + 1
    s = nb.reduce_sum(nb.broadcast_to(c, [5, 1]))                  # 15
    y = nb.add(nb.multiply(x, c2), s)
    p = nb.build([y])
    f = eliminate_dead_code(fold_constants(p))
    fills = [o for o in f.ops if o.type == "fill_constant"]
    values = sorted(o.attrs["value"] for o in fills)
    assert values[0] == 15.0
    assert values[-1] == pytest.approx(float(np.exp(np.float32(9.0)) * np.float32(0.5) + np.float32(1.0)))
    assert {o.type for o in f.ops} == {"fill_constant", "multiply", "add"}
    xs = _rand(3, 4)
    np.testing.assert_allclose(f.run_numpy(xs), p.run_numpy(xs), rtol=1e-6)


def test_constant_folding_keeps_non_uniform_and_symbolic_counts() -> None:
    nb = NetBuilder("keep")
    x = nb.create_input("float32", ["S0"], "X")
    a, b = nb.fill_constant([2], 1.0), nb.fill_constant([2], 2.0)
    cat = nb.concat([a, b])                                                   # not uniform
    s = nb.reduce_sum(nb.broadcast_to(nb.fill_constant([1], 1.0), ["S0"]))    # symbolic count
    m = nb.reduce_max(nb.broadcast_to(nb.fill_constant([1], 4.0), ["S0"]))    # uniform whatever the count
    p = fold_constants(nb.build([cat, s, m, x]))
    kinds = {o.output.name: o.type for o in p.ops}
    assert kinds[cat.name] == "concat" and kinds[s.name] == "reduce_sum" and kinds[m.name] == "fill_constant"


def test_cse_merges_identical_ops_only() -> None:
    nb = NetBuilder("cse")
    x = nb.create_input("float32", [4], "X")
    a1, a2 = nb.exp(x), nb.exp(x)
    s1, s2, s3 = nb.scale(x, 0.0), nb.scale(x, -0.0), nb.scale(x, 0.0)
    y = nb.add(nb.add(a1, a2), nb.add(nb.add(s1, s2), s3))
    p = eliminate_common_subexpressions(nb.build([y]))
    assert [o.type for o in p.ops].count("exp") == 1
    assert [o.type for o in p.ops].count("scale") == 2          # 0.0 and -0.0 differ
    xs = _rand(4)
    np.testing.assert_allclose(p.run_numpy(xs), nb.build([y]).run_numpy(xs))


def test_dce_removes_unused_ops() -> None:
    nb = NetBuilder("dce")
    x = nb.create_input("float32", [4], "X")
    nb.exp(x)
    y = nb.relu(x)
    p = eliminate_dead_code(nb.build([y]))
    assert [o.type for o in p.ops] == ["relu"]


def test_optimize_runs_every_pass() -> None:
    nb = NetBuilder("opt")
    x = nb.create_input("float32", ["S0", 8], "X")
    y = nb.add(nb.softmax(x), nb.softmax(x))
    p = optimize(nb.build([y]))
    assert [o.type for o in p.ops].count("reduce_max") == 1
    xs = _rand(3, 8)
    np.testing.assert_allclose(p.run_numpy(xs), nb.build([y]).run_numpy(xs), rtol=1e-6)
