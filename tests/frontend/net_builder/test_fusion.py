"""Fusion into groups by OpPatternKind, and end-to-end compile_program (x86) vs numpy."""

from __future__ import annotations

import numpy as np
import pytest

from cinn_py.frontend.fusion import plan
from cinn_py.lowering.group import lower_group
from cinn_py.pipeline import compile_program, run_interpreted
from cinn_py.frontend.fusion import can_fuse_kinds, fuse
from cinn_py.frontend.net_builder import NetBuilder
from cinn_py.frontend.ops import FrontendError
from cinn_py.frontend.ops import OpPatternKind as K
from cinn_py.ir.stmt import ScheduleBlock
from cinn_py.ir.visitor import walk

RNG = np.random.default_rng(1)


def _rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def seed_program():  # type: ignore[no-untyped-def]
    nb = NetBuilder("seed")
    x = nb.create_input("float32", ["S0", 64], "X")
    y = nb.add(nb.multiply(x, 2.0), 1.0)
    r = nb.multiply(nb.reduce_sum(y, [1], keep_dim=True), 2.0)
    nb.add(nb.broadcast_to(r, ["S0", 64]), 1.0)
    return nb.build()


def softmax_program():  # type: ignore[no-untyped-def]
    nb = NetBuilder("softmax")
    nb.softmax(nb.create_input("float32", ["S0", 32], "X"))
    return nb.build()


def rms_program():  # type: ignore[no-untyped-def]
    nb = NetBuilder("rms")
    nb.rms_norm(nb.create_input("float32", ["S0", 48], "X"), nb.create_input("float32", [48], "W"), 1e-6)
    return nb.build()


def layer_norm_program():  # type: ignore[no-untyped-def]
    nb = NetBuilder("ln")
    x = nb.create_input("float32", ["S0", 24], "X")
    nb.layer_norm(x, nb.create_input("float32", [24], "G"), nb.create_input("float32", [24], "B"))
    return nb.build()


def linear_program():  # type: ignore[no-untyped-def]
    nb = NetBuilder("linear")
    x = nb.create_input("float32", ["S0", 16], "X")
    w = nb.create_input("float32", [16, 8], "W")
    b = nb.create_input("float32", [8], "B")
    nb.relu(nb.add(nb.matmul(x, w), b))
    return nb.build()


def _block_names(func) -> list[str]:  # type: ignore[no-untyped-def]
    return [n.name for n in walk(func.body) if isinstance(n, ScheduleBlock) and n.name != "root"]


def test_seed_example_is_one_group_and_one_function() -> None:
    fusion = plan(seed_program())
    assert len(fusion.groups) == 1
    group = fusion.groups[0]
    assert group.kind is K.kReduction
    assert [v.name for v in group.inputs] == ["X"] and len(group.outputs) == 1
    func = lower_group(group)
    assert [a.name for a in func.args] == ["_X", f"_{group.outputs[0].name}", "S0"]
    # intermediates are temp buffers; the folded constants are inlined, not materialised
    assert {b.name for b in func.temp_bufs} == {f"_{o.output.name}" for o in group.ops
                                                if o.output is not group.outputs[0] and o.type
                                                != "fill_constant"}
    assert "fill_constant" not in str(func)


def test_softmax_is_one_group() -> None:
    fusion = plan(softmax_program())
    assert len(fusion.groups) == 1
    types = [o.type for o in fusion.groups[0].ops]
    assert types.count("reduce_max") == 1 and types.count("reduce_sum") == 1


@pytest.mark.parametrize("make", [rms_program, layer_norm_program])
def test_norms_are_one_group(make) -> None:  # type: ignore[no-untyped-def]
    fusion = plan(make())
    assert len(fusion.groups) == 1 and fusion.groups[0].kind is K.kReduction


def test_matmul_takes_its_bias_relu_epilogue() -> None:
    groups = plan(linear_program()).groups
    assert [[o.type for o in g.ops] for g in groups] == [["matmul", "broadcast_to", "add", "relu"]]
    assert groups[0].kind is K.kNonFusible and len(groups[0].outputs) == 1
    assert groups[0].outputs[0] is groups[0].ops[-1].output  # the matmul result is an intermediate


def test_matmul_does_not_take_a_prologue_or_a_reduction() -> None:
    nb = NetBuilder("pro")
    x = nb.create_input("float32", [8, 8], "X")
    w = nb.create_input("float32", [8, 8], "W")
    m = nb.matmul(nb.exp(x), w)  # exp of X has the matmul's output shape but feeds it
    nb.reduce_sum(nb.relu(m), [1])
    groups = plan(nb.build()).groups
    assert [[o.type for o in g.ops] for g in groups] == [["exp"], ["matmul", "relu"], ["reduce_sum"]]


def test_reductions_with_different_attrs_are_separate_groups() -> None:
    nb = NetBuilder("two")
    x = nb.create_input("float32", [8, 16], "X")
    rows = nb.reduce_sum(nb.exp(x), [1])
    nb.reduce_max(nb.exp(x), [0])
    nb.reduce_max(rows)
    groups = plan(nb.build()).groups
    assert len(groups) == 3
    for g in groups:
        axes = {o.attrs["axes"] for o in g.ops if o.pattern is K.kReduction}
        assert len(axes) == 1


def test_injective_does_not_join_reduction_groups() -> None:
    nb = NetBuilder("inj")
    x = nb.create_input("float32", [8, 16], "X")
    e = nb.exp(x)
    s = nb.reduce_sum(e, [1])
    t = nb.transpose(e, [1, 0])
    nb.build([s, nb.relu(t)])
    groups = plan(nb.build([s, nb.relu(t)])).groups
    kinds = sorted(g.kind.name for g in groups)
    assert kinds == ["kInjective", "kReduction"]
    inj = next(g for g in groups if g.kind is K.kInjective)
    assert [o.type for o in inj.ops] == ["transpose", "relu"]


def test_fusion_never_creates_a_cycle() -> None:
    # a -> matmul -> c and a -> c: merging a and c would need the matmul both before and after
    nb = NetBuilder("cyc")
    x = nb.create_input("float32", [4, 4], "X")
    a = nb.exp(x)
    m = nb.matmul(a, x)
    nb.add(a, m)
    groups = plan(nb.build()).groups
    # (the add joins the matmul as its epilogue; the exp stays out of both)
    assert [[o.type for o in g.ops] for g in groups] == [["exp"], ["matmul", "add"]]


def test_kind_table() -> None:
    assert all(can_fuse_kinds(K.kElementWise, k) for k in (K.kElementWise, K.kBroadcast, K.kInjective,
                                                            K.kReduction, K.kOutFusible))
    assert not can_fuse_kinds(K.kBroadcast, K.kBroadcast)
    assert not can_fuse_kinds(K.kInjective, K.kReduction)
    assert not can_fuse_kinds(K.kReduction, K.kInjective)
    assert can_fuse_kinds(K.kOutFusible, K.kElementWise) and not can_fuse_kinds(K.kOutFusible, K.kBroadcast)
    assert (not any(can_fuse_kinds(K.kNonFusible, k) for k in K)
            and not can_fuse_kinds(K.kElementWise, K.kNonFusible))


def test_fuse_rejects_composite_ops() -> None:
    with pytest.raises(FrontendError, match="fuse: op 'softmax_0' .softmax. is composite; run decompose"):
        fuse(softmax_program())


# -- end to end -------------------------------------------------------------------------------------------
def _inputs(program, rows: int) -> list[np.ndarray]:  # type: ignore[no-untyped-def]
    return [_rand(*(rows if not isinstance(d, int) else d for d in v.shape)) for v in program.inputs]


@pytest.mark.parametrize("make",
                         [seed_program, softmax_program, rms_program, layer_norm_program, linear_program])
def test_compile_program_matches_numpy(make) -> None:  # type: ignore[no-untyped-def]
    program = make()
    compiled = compile_program(program, target="x86")
    for rows in (1, 3, 7):  # symbolic batch dim S0 bound to several values
        args = _inputs(program, rows)
        expected = program.run_numpy(*args)
        np.testing.assert_allclose(compiled(*args), expected, rtol=1e-5, atol=1e-4)
    args = _inputs(program, 2)
    np.testing.assert_allclose(run_interpreted(program, args), program.run_numpy(*args), rtol=1e-5, atol=1e-4)


def test_data_movement_end_to_end() -> None:
    nb = NetBuilder("move")
    x = nb.create_input("float32", ["S0", 6, 4], "X")
    y = nb.create_input("float32", ["S0", 2, 4], "Y")
    r = nb.reshape(nb.transpose(x, [0, 2, 1]), [0, -1])               # [S0, 24]
    s = nb.slice(x, [1, 2], [1, 0], [5, 4], strides=[2, 1])                   # [S0, 2, 4]
    c = nb.concat([x, y, s], axis=1)                                   # [S0, 10, 4]
    t = nb.slice(c, [0], [-1], [2**31 - 1])                            # last row
    out = [r, c, t, nb.reduce_mean(c, [1, 2])]
    program = nb.build(out)
    compiled = compile_program(program)
    for rows in (1, 4):
        args = [_rand(rows, 6, 4), _rand(rows, 2, 4)]
        for got, want in zip(compiled(*args), program.run_numpy(*args)):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_constant_outputs_and_shape_only_inputs() -> None:
    nb = NetBuilder("consts")
    x = nb.create_input("float32", ["S0", 3], "X")
    k = nb.fill_constant(["S0", 3], 2.5)                 # needs S0 from X although it reads nothing
    v = nb.create_input("float32", [3], "V")
    y = nb.add(v, nb.fill_constant(["S0", 1], 1.0))      # [S0, 3] from a static input
    program = nb.build([k, y, x])
    compiled = compile_program(program)
    args = [_rand(4, 3), _rand(3)]
    for got, want in zip(compiled(*args), program.run_numpy(*args)):
        np.testing.assert_array_equal(got, want)
    assert any(g.shape_inputs for g in compiled.groups)


def test_integer_and_bool_ops_end_to_end() -> None:
    nb = NetBuilder("ints")
    a = nb.create_input("int32", [8], "A")
    b = nb.create_input("int32", [8], "B")
    q = nb.divide(a, b)
    m = nb.select(nb.greater_than(a, b), nb.maximum(a, b), nb.negative(nb.abs(a)))
    anyneg = nb.reduce_any(nb.less_than(a, 0))
    program = nb.build([q, m, anyneg, nb.cast(nb.reduce_prod(nb.scale(b, 1, 0)), "float32")])
    compiled = compile_program(program)
    args = [np.array([7, -7, 9, -9, 0, 5, -3, 2], np.int32), np.array([2, 2, -4, -4, 1, 5, 7, -1], np.int32)]
    for got, want in zip(compiled(*args), program.run_numpy(*args)):
        np.testing.assert_array_equal(got, want)


def test_gelu_matmul_chain_end_to_end() -> None:
    nb = NetBuilder("mlp")
    x = nb.create_input("float32", ["S0", 8], "X")
    w = nb.create_input("float32", [8, 8], "W")
    h = nb.gelu(nb.matmul(x, w))
    nb.add(nb.gelu(h, approximate=True), nb.sigmoid(nb.tanh(h)))
    program = nb.build()
    compiled = compile_program(program)
    assert len(compiled.groups) == 1  # the gelus, tanh, sigmoid and add are the matmul's epilogue
    for rows in (2, 5):
        args = _inputs(program, rows)
        np.testing.assert_allclose(compiled(*args), program.run_numpy(*args), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("make", [seed_program, softmax_program, layer_norm_program, linear_program])
def test_compile_program_with_auto_schedule(make) -> None:  # type: ignore[no-untyped-def]
    program = make()
    compiled = compile_program(program, target="x86", schedule="auto")
    for rows in (1, 6):
        args = _inputs(program, rows)
        np.testing.assert_allclose(compiled(*args), program.run_numpy(*args), rtol=1e-5, atol=1e-4)


def test_compile_program_rejects_unknown_schedule() -> None:
    with pytest.raises(ValueError, match="schedule must be None"):
        compile_program(seed_program(), schedule="fast")
