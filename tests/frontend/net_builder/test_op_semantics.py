"""CINN semantics of NetBuilder ops beyond the harness's differential cases: argument names and
defaults, axis broadcasting, float32 accumulation of 16-bit floats, errors."""

from __future__ import annotations

import numpy as np
import pytest

from cinn_py.frontend import NetBuilder
from cinn_py.pipeline import compile_program
from cinn_py.frontend.ops.base import FrontendError, UnknownOpError


def _run(nb: NetBuilder, outs: list, *arrays: np.ndarray) -> list[np.ndarray]:
    program = nb.build(outs)
    got = compile_program(program, "x86")(*arrays)
    return list(got) if isinstance(got, tuple) else [got]


def test_float16_sum_and_matmul_accumulate_in_float32() -> None:
    nb = NetBuilder("acc")
    x = nb.create_input("float16", [4096], "X")
    a = nb.create_input("float16", [1, 4096], "A")
    b = nb.create_input("float16", [4096, 1], "B")
    ones = np.ones(4096, np.float16)
    s, m = _run(nb, [nb.reduce_sum(x), nb.matmul(a, b)], ones, ones.reshape(1, -1), ones.reshape(-1, 1))
    # float16 accumulation stalls at 2048 (2048 + 1 rounds back to 2048)
    assert s.dtype == np.float16 and float(s) == 4096.0
    assert m.dtype == np.float16 and float(m[0, 0]) == 4096.0


def test_binary_axis_aligns_lower_rank_operand() -> None:
    nb = NetBuilder("bcast")
    x = nb.create_input("float32", [2, 3, 4], "X")
    y = nb.create_input("float32", [3], "Y")
    out = nb.add(x, y, axis=1)
    assert out.shape == (2, 3, 4)
    xs, ys = np.random.default_rng(0).random((2, 3, 4), np.float32), np.arange(3, dtype=np.float32)
    (got,) = _run(nb, [out], xs, ys)
    np.testing.assert_allclose(got, xs + ys[None, :, None])
    with pytest.raises(FrontendError, match=r"add: argument 'axis' must be -1 or in \[0, 2\]"):
        nb.add(x, y, axis=3)
    with pytest.raises(FrontendError, match=r"not broadcastable with axis=2: 4 vs 3"):
        nb.add(x, y, axis=2)


def test_reduce_empty_dim_means_all_axes_and_keep_dim() -> None:
    nb = NetBuilder("red")
    x = nb.create_input("float32", ["S0", 3], "X")
    assert nb.reduce_sum(x).shape == ()
    assert nb.reduce_sum(x, [], keep_dim=True).shape == (1, 1)
    assert nb.reduce_max(x, dim=[-1]).shape[0].name == "S0"


@pytest.mark.parametrize("op", ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"])
def test_reduce_of_a_0d_tensor_is_its_element(op: str) -> None:
    """A 0-d operand has no axis to reduce: the result is its one element (torch's x.sum() of a
    0-d tensor; the compute had no reduce axis and raised)."""
    nb = NetBuilder("red0")
    x = nb.create_input("float32", [], "X")
    out, kept = getattr(nb, op)(x), getattr(nb, op)(x, [], keep_dim=True)
    assert out.shape == () and kept.shape == ()
    got = _run(nb, [nb.scale(out, 2.0), kept], np.array(1.5, np.float32))
    assert [g.shape for g in got] == [(), ()] and [float(g) for g in got] == [3.0, 1.5]
    assert float(nb.build([out]).run_numpy(np.array(-4.0, np.float32))) == -4.0  # the numpy reference


def test_reduce_all_any_of_a_0d_bool() -> None:
    nb = NetBuilder("red0b")
    x = nb.create_input("bool", [], "X")
    got = _run(nb, [nb.reduce_all(x), nb.reduce_any(x)], np.array(True))
    assert [bool(g) for g in got] == [True, True]


def test_mod_remainder_floor_divide_signs() -> None:
    nb = NetBuilder("mod")
    x = nb.create_input("int32", [4], "X")
    y = nb.create_input("int32", [4], "Y")
    xs, ys = np.array([7, -7, 7, -7], np.int32), np.array([3, 3, -3, -3], np.int32)
    outs = [nb.mod(x, y), nb.remainder(x, y), nb.fmod(x, y), nb.floor_divide(x, y)]
    mod, rem, fm, fdiv = _run(nb, outs, xs, ys)
    assert mod.tolist() == [1, 2, -2, -1]          # sign of the divisor (Python %)
    assert rem.tolist() == [1, 2, -2, -1]          # CINN's remainder is its mod (issue 23 item 9)
    assert fm.tolist() == [1, -1, 1, -1]           # sign of the dividend (C %)
    assert fdiv.tolist() == [2, -3, -3, 2]


def test_matmul_rank1_and_transpose() -> None:
    nb = NetBuilder("mm")
    v = nb.create_input("float32", [5], "V")
    m = nb.create_input("float32", [5, 3], "M")
    assert nb.matmul(v, m).shape == (3,)
    assert nb.matmul(v, v).shape == ()
    assert nb.matmul(m, v, transpose_x=True).shape == (3,)
    with pytest.raises(FrontendError, match="matmul: contracting dims differ"):
        nb.matmul(m, v)


def test_argument_errors_name_method_argument_expected_and_actual() -> None:
    nb = NetBuilder("err")
    x = nb.create_input("float32", [3, 4], "X")
    with pytest.raises(FrontendError, match=r"reduce_sum: argument 'keep_dim' must be a bool, got 1 \(int\)"):
        nb.reduce_sum(x, [0], 1)
    with pytest.raises(FrontendError, match=r"softmax: got an unexpected keyword argument 'axis'; expected "
                                            r"softmax\(x, axes=\(-1,\), mode='fast', "
                                            r"data_format='AnyLayout'\)"):
        nb.softmax(x, axis=0)
    with pytest.raises(FrontendError, match="scale: missing a required argument: 'x'"):
        nb.scale()
    with pytest.raises(FrontendError,
                       match=r"relu: argument 'x' must be a Variable of this NetBuilder, got list"):
        nb.relu([1, 2])
    with pytest.raises(FrontendError,
                       match=r"softmax: argument 'mode' must be one of 'fast', 'accurate', got 'slow'"):
        nb.softmax(x, mode="slow")
    with pytest.raises(UnknownOpError, match="NetBuilder has no op 'reduce_summ'; did you mean 'reduce_sum'"):
        nb.reduce_summ(x)
    assert not hasattr(nb, "no_such_op")


def test_slice_decrease_axis_and_fill_constant_dtype_from_value() -> None:
    nb = NetBuilder("sl")
    x = nb.create_input("float32", [3, 5], "X")
    assert nb.slice(x, [0], [1], [2], decrease_axis=[0]).shape == (5,)
    assert nb.slice(x, [0, 1], [1, 2], [2, 3], decrease_axis=[0, 1]).shape == (1,)
    with pytest.raises(FrontendError,
                       match="decrease_axis names axis 1, whose sliced extent is 5, expected 1"):
        nb.slice(x, [0], [1], [2], decrease_axis=[1])
    assert str(nb.fill_constant([2], 1).dtype) == "int32"
    assert str(nb.fill_constant([2], 1.5).dtype) == "float32"
    assert nb.fill_constant([2], 1.5, "named", "float64").name == "named"


def test_logical_not_of_int_tensor() -> None:
    nb = NetBuilder("ln")
    x = nb.create_input("int32", [4], "X")
    out = nb.logical_not(x)
    assert str(out.dtype) == "bool"
    (got,) = _run(nb, [out], np.array([0, 1, -2, 0], np.int32))
    assert got.tolist() == [True, False, False, True]


def test_random_ops_are_seeded_and_have_the_right_distribution() -> None:
    nb = NetBuilder("rnd")
    u = nb.uniform_random([100, 100], min=-2.0, max=3.0, seed=7)
    u_again = nb.uniform_random([100, 100], min=-2.0, max=3.0, seed=7)
    u_other = nb.uniform_random([100, 100], min=-2.0, max=3.0, seed=8)
    g = nb.gaussian_random([100, 100], mean=1.0, std=2.0, seed=3)
    a, b, c, n = _run(nb, [u, u_again, u_other, g])
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    assert (a.min() >= -2.0 and a.max() < 3.0 and abs(a.mean() - 0.5) < 0.05
            and abs(a.std() - 5 / 12**0.5) < 0.05)
    assert abs(n.mean() - 1.0) < 0.06 and abs(n.std() - 2.0) < 0.06
    # neighbours are not correlated (a linear congruential counter would be)
    assert abs(np.corrcoef(a.reshape(-1)[:-1], a.reshape(-1)[1:])[0, 1]) < 0.03


def test_batchnorm_returns_a_list_and_nn_argument_errors() -> None:
    nb = NetBuilder("bn")
    x = nb.create_input("float32", [2, 3, 4, 4], "X")
    p = [nb.create_input("float32", [3], n) for n in ("S", "B", "M", "V")]
    (y,) = nb.batchnorm(x, *p)
    assert y.shape == (2, 3, 4, 4)
    with pytest.raises(FrontendError, match=r"batchnorm: argument 'scale' must be float32\[4\]"):
        nb.batchnorm(x, *p, data_layout="NHWC")
    with pytest.raises(FrontendError, match="pool2d: argument 'adaptive' = True is not supported"):
        nb.pool2d(x, "avg", [2, 2], adaptive=True)
    with pytest.raises(FrontendError, match="conv2d: x .* has 3 channels; with groups=2"):
        nb.conv2d(x, nb.create_input("float32", [4, 3, 3, 3], "W"), groups=2)
    with pytest.raises(FrontendError,
                       match=r"pool2d: argument 'pooling_type' must be one of 'max', 'avg', got 'min'"):
        nb.pool2d(x, "min", [2, 2])


def test_remainder_follows_paddles_floor_rule_for_floats_too() -> None:
    nb = NetBuilder("remainder")
    x = nb.create_input("float32", [4], "x")
    y = nb.create_input("float32", [4], "y")
    xs, ys = np.array([7.5, -7.5, 7.5, -7.5], np.float32), np.array([2, 2, -2, -2], np.float32)
    rem, fm = _run(nb, [nb.remainder(x, y), nb.fmod(x, y)], xs, ys)
    assert rem.tolist() == [1.5, 0.5, -0.5, -1.5]   # np.mod / paddle.remainder
    assert fm.tolist() == [1.5, -1.5, 1.5, -1.5]    # np.fmod / torch.fmod
