"""The pattern-rewrite API (cinn_py.frontend.rewrite) and the rewrites of cinn_py.frontend.simplify:
each fires where it should, not where it should not, and keeps numerics and output names."""

from __future__ import annotations

import numpy as np
import pytest

from cinn_py.frontend import NetBuilder
from cinn_py.ir import dtype_of
from cinn_py.frontend.program import Program
from cinn_py.frontend.rewrite import Rewrite, RewriteError, apply_rewrites, match, op, var
from cinn_py.frontend.simplify import simplify

RNG = np.random.default_rng(0)


def _types(p: Program) -> list[str]:
    return [o.type for o in p.ops]


def _same_numerics(before: Program, after: Program, *shapes: tuple[int, ...]) -> None:
    args = [RNG.uniform(-3, 3, s).astype(np.float32) for s in shapes]
    want, got = before.run_numpy(*args), after.run_numpy(*args)
    for w, g in zip(want if isinstance(want, tuple) else (want,), got if isinstance(got, tuple) else (got,)):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)


def test_silu_fires_in_either_operand_order_and_keeps_the_name() -> None:
    for swap in (False, True):
        nb = NetBuilder("s")
        x = nb.create_input("float32", ["S0", 5], "X")
        s = nb.sigmoid(x)
        y = nb.multiply(s, x) if swap else nb.multiply(x, s)
        p = nb.build()
        q = simplify(p)
        assert _types(q) == ["silu"] and q.outputs[0].name == y.name
        _same_numerics(p, q, (3, 5))


def test_silu_needs_the_same_variable_and_a_single_use_sigmoid() -> None:
    nb = NetBuilder("s")
    x = nb.create_input("float32", [4], "X")
    z = nb.create_input("float32", [4], "Z")
    nb.multiply(x, nb.sigmoid(z))  # x * sigmoid(z): not silu
    p = nb.build()
    assert simplify(p) is p
    nb = NetBuilder("s")
    x = nb.create_input("float32", [4], "X")
    s = nb.sigmoid(x)
    y = nb.multiply(x, s)
    p = nb.build([y, s])  # the sigmoid is also an output: rewriting would compute it twice
    assert simplify(p) is p


def test_dropout_after_bias_add_is_a_scale_or_nothing() -> None:
    for impl, expect in (("downgrade_in_infer", ["broadcast_to", "add", "scale"]),
                         ("upscale_in_train", ["broadcast_to", "add", "identity"])):
        nb = NetBuilder("d")
        x = nb.create_input("float32", [3, 6], "X")
        b = nb.create_input("float32", [6], "B")
        y = nb.dropout_infer(nb.add(x, b), 0.25, impl)
        p = nb.build()
        q = simplify(p)
        # an output that disappears becomes an identity of its name: outputs are never removed
        assert _types(q) == expect and q.outputs[0].name == y.name
        _same_numerics(p, q, (3, 6), (6,))


@pytest.mark.parametrize("bias_first", [False, True])
def test_bias_dropout_moves_the_factor_into_the_preceding_scale_and_onto_the_bias(bias_first: bool) -> None:
    nb = NetBuilder("d")
    x = nb.create_input("float32", ["S0", 6], "X")
    w = nb.create_input("float32", [6, 6], "W")
    b = nb.create_input("float32", [6], "B")
    mm = nb.scale(nb.matmul(x, w), 0.5, 1.0, bias_after_scale=False)  # (x @ w + 1) * 0.5
    bias = nb.broadcast_to(b, ["S0", 6], [1])
    y = nb.dropout_infer(nb.add(bias, mm) if bias_first else nb.add(mm, bias), 0.25)
    p = nb.build()
    q = simplify(p)
    assert _types(q) == ["matmul", "scale", "scale", "broadcast_to", "add"] and q.outputs[0].name == y.name
    big, small = q.ops[1], q.ops[2]
    assert big.inputs[0] is q.ops[0].output and (big.attrs["scale"], big.attrs["bias"]) == (0.375, 0.375)
    assert small.inputs[0].name == "B" and small.output.shape == (6,) and small.attrs["scale"] == 0.75
    assert [v.name for v in q.ops[4].inputs] == ([q.ops[3].output.name, big.output.name] if bias_first
                                                 else [big.output.name, q.ops[3].output.name])
    _same_numerics(p, q, (4, 6), (6, 6), (6,))


def test_bias_dropout_needs_a_scaling_dropout_and_a_single_use_scale() -> None:
    nb = NetBuilder("d")
    x = nb.create_input("float32", [3, 6], "X")
    b = nb.create_input("float32", [6], "B")
    nb.dropout_infer(nb.add(nb.scale(x, 2.0), b), 0.25, "upscale_in_train")  # a factor of 1: dropout vanishes
    q = simplify(nb.build())
    assert _types(q) == ["scale", "broadcast_to", "add", "identity"]
    nb = NetBuilder("d")
    x = nb.create_input("float32", [3, 6], "X")
    b = nb.create_input("float32", [6], "B")
    s = nb.scale(x, 2.0)
    y = nb.dropout_infer(nb.add(s, b), 0.25)
    q = simplify(nb.build([y, s]))  # the scale is also an output: it is kept, dropout is a scale
    assert _types(q) == ["scale", "broadcast_to", "add", "scale"]


def test_removed_dropout_forwards_its_uses() -> None:
    nb = NetBuilder("d")
    x = nb.create_input("float32", [3, 6], "X")
    nb.exp(nb.dropout_infer(nb.relu(x), 0.5, "upscale_in_train"))
    p = nb.build()
    q = simplify(p)
    assert _types(q) == ["relu", "exp"] and q.ops[1].inputs[0] is q.ops[0].output
    _same_numerics(p, q, (3, 6))


def test_scale_chains_fold_into_one() -> None:
    nb = NetBuilder("c")
    x = nb.create_input("float32", [7], "X")
    y = nb.scale(nb.dropout_infer(nb.scale(x, 2.0, 1.0, bias_after_scale=False), 0.5), 3.0, -1.0)
    p = nb.build()
    q = simplify(p)
    assert _types(q) == ["scale"] and q.outputs[0].name == y.name
    assert q.ops[0].attrs["scale"] == pytest.approx(3.0) and q.ops[0].attrs["bias"] == pytest.approx(2.0)
    _same_numerics(p, q, (7,))


def test_integer_scales_are_not_reassociated() -> None:
    nb = NetBuilder("c")
    x = nb.create_input("int32", [7], "X")
    nb.scale(nb.scale(x, 2, 1), 3, 1)
    p = nb.build()
    assert simplify(p) is p


@pytest.mark.parametrize(("p1", "p2", "expect"),
                         [([1, 2, 0], [2, 0, 1], []), ([1, 0, 2], [0, 2, 1], ["transpose"])])
def test_transpose_chains(p1: list[int], p2: list[int], expect: list[str]) -> None:
    nb = NetBuilder("t")
    x = nb.create_input("float32", [2, 3, 4], "X")
    nb.exp(nb.transpose(nb.transpose(x, p1), p2))
    p = nb.build()
    q = simplify(p)
    assert _types(q) == [*expect, "exp"]
    _same_numerics(p, q, (2, 3, 4))


def test_multi_use_transpose_is_kept() -> None:
    nb = NetBuilder("t")
    x = nb.create_input("float32", [2, 3], "X")
    t = nb.transpose(x, [1, 0])
    nb.add(nb.transpose(t, [1, 0]), nb.transpose(nb.exp(t), [1, 0]))
    p = nb.build()
    assert simplify(p) is p


def test_reshape_chains() -> None:
    nb = NetBuilder("r")
    x = nb.create_input("float32", ["S0", 6], "X")
    a = nb.exp(nb.reshape(nb.reshape(x, [-1]), [-1, 2, 3]))
    nb.add(nb.reshape(nb.reshape(a, [-1, 6]), [-1, 2, 3]), a)
    p = nb.build()
    q = simplify(p)
    assert _types(q) == ["reshape", "exp", "add"]  # the second chain is the identity on a
    _same_numerics(p, q, (4, 6))


def test_decompose_is_a_rewrite_to_fixpoint() -> None:
    nb = NetBuilder("n")
    x = nb.create_input("float32", [3, 8], "X")
    y = nb.softmax(nb.gelu(x))
    p = nb.build()
    from cinn_py.frontend.decompose import decompose

    q = decompose(p)
    assert "softmax" not in _types(q) and "gelu" not in _types(q) and q.outputs[0].name == y.name
    _same_numerics(p, q, (3, 8))


def test_match_captures_and_attribute_predicates() -> None:
    nb = NetBuilder("m")
    x = nb.create_input("float32", [4], "X")
    y = nb.scale(nb.exp(x), 2.0)
    p = nb.build()
    pat = op("scale", op("exp", var("x"), name="e"), where=lambda o: o.attrs["scale"] == 2.0)
    m = match(pat, p.ops[1], p)
    assert m is not None and m["x"] is x and m.op("e") is p.ops[0] and m.name == y.name
    assert (match(op("scale", op("exp", var("x")), where=lambda o: o.attrs["scale"] == 3.0), p.ops[1], p)
            is None)
    assert match(op("scale", op("sigmoid", var("x"))), p.ops[1], p) is None


def test_rule_contract_errors() -> None:
    nb = NetBuilder("e")
    x = nb.create_input("float32", [4], "X")
    nb.exp(x)
    p = nb.build()
    renamed = Rewrite("bad_name", op("exp", var("x")), lambda b, m: b.emit("log", [m["x"]]))
    with pytest.raises(RewriteError, match="bad_name.*keep the root's name"):
        apply_rewrites(p, [renamed])
    retyped = Rewrite("bad_type", op("exp", var("x")),
                      lambda b, m: b.emit("cast", [m["x"]], {"dtype": dtype_of("float16")},
                                          name=m.name))
    with pytest.raises(RewriteError, match="bad_type.*float16\\[4\\].*expected float32\\[4\\]"):
        apply_rewrites(p, [retyped])
    loop = Rewrite("loop", op("exp", var("x")), lambda b, m: b.emit("exp", [m["x"]], name=m.name))
    with pytest.raises(RewriteError, match="fixpoint"):
        apply_rewrites(p, [loop], max_sweeps=3)
    with pytest.raises(RewriteError, match="commutative"):
        op("add", var("x"), commutative=True)


def test_rewrites_compose_within_a_sweep() -> None:
    nb = NetBuilder("k")
    x = nb.create_input("float32", [2, 3], "X")
    t = x
    for _ in range(5):
        t = nb.transpose(t, [1, 0])
    p = nb.build()
    q = simplify(p)
    # t2(t1) and t4(t3) cancel; t5(t4(t3(t2(t1)))) is t1's value, so the output is an identity
    # of t1 under t5's name (a program output is never renamed)
    assert _types(q) == ["transpose", "identity"] and q.outputs[0].name == t.name
    _same_numerics(p, q, (2, 3))
