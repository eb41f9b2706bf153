"""Backward programs go through the compiler like any program: a BERT-style block (matmul + bias,
gelu, layer_norm, softmax over attention scores) differentiated, compiled for x86 (auto schedule)
and compared with the numpy reference of the same backward program, which test_grad_ops checks
op by op against finite differences; then against PyTorch's autograd when torch is installed."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from cinn_py.autodiff import AutodiffError, grad
from cinn_py.frontend import NetBuilder
from cinn_py.frontend.ops.base import REGISTRY
from cinn_py.frontend.program import Program
from cinn_py.pipeline import compile_program

B, S, H = 2, 4, 8


def _block(dtype: str = "float32") -> Program:
    nb = NetBuilder("block")
    x = nb.create_input(dtype, [B, S, H], "X")
    w = nb.create_input(dtype, [H, H], "W")
    b = nb.create_input(dtype, [H], "Bias")
    g = nb.create_input(dtype, [H], "Gamma")
    beta = nb.create_input(dtype, [H], "Beta")
    h = nb.gelu(nb.add(nb.matmul(x, w), b))
    scores = nb.matmul(h, h, transpose_y=True)
    p = nb.softmax(nb.scale(scores, H ** -0.5), [-1])
    ctx = nb.matmul(p, h)
    y = nb.layer_norm(nb.add(ctx, x), g, beta, eps=1e-5, begin_norm_axis=2)
    return nb.build([y])


def _inputs(dtype: str = "float32") -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    shapes = [(B, S, H), (H, H), (H,), (H,), (H,)]
    return [rng.uniform(-1, 1, s).astype(dtype) for s in shapes]


def test_backward_program_compiles_and_matches_reference() -> None:
    program = _block()
    backward = grad(program)
    assert ([v.name for v in backward.inputs]
            == ["X", "W", "Bias", "Gamma", "Beta", f"{program.outputs[0].name}_grad"])
    args = _inputs() + [np.random.default_rng(1).uniform(-1, 1, (B, S, H)).astype(np.float32)]
    want = backward.run_numpy(*args)
    got = compile_program(backward, "x86", schedule="auto")(*args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-4, atol=2e-5)


def test_backward_matches_torch_autograd() -> None:
    torch = pytest.importorskip("torch")
    program = _block("float64")
    arrays = _inputs("float64")
    dy = np.random.default_rng(1).uniform(-1, 1, (B, S, H))
    got = grad(program).run_numpy(*arrays, dy)
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    x, w, b, g, beta = ts
    h = torch.nn.functional.gelu(x @ w + b)
    p = torch.softmax((h @ h.transpose(-1, -2)) * H ** -0.5, -1)
    y = torch.nn.functional.layer_norm(p @ h + x, (H,), g, beta, eps=1e-5)
    y.backward(torch.tensor(dy))
    for mine, t in zip(got, ts):
        np.testing.assert_allclose(mine, t.grad.numpy(), rtol=1e-9, atol=1e-10)


def test_fan_out_gradients_are_summed_and_wrt_subsets() -> None:
    nb = NetBuilder("fan")
    x = nb.create_input("float64", [3], "X")
    k = nb.create_input("int32", [3], "K")
    y = nb.add(nb.multiply(x, x), nb.exp(x))  # x read three times
    program = nb.build([y, nb.cast(k, "float64")])
    backward = grad(program, outputs=[y], wrt=[x])
    xs = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(backward.run_numpy(xs, np.zeros(3, np.int32), np.ones(3)), 2 * xs + np.exp(xs))


def test_unreached_wrt_gets_zeros_and_errors_name_the_problem() -> None:
    nb = NetBuilder("z")
    x = nb.create_input("float32", [2], "X")
    u = nb.create_input("float32", [2], "U")
    program = nb.build([nb.relu(x)])
    dx, du = grad(program, wrt=[x, u]).run_numpy(np.array([1, -1], np.float32), np.ones(2, np.float32),
                                                  np.ones(2, np.float32))
    np.testing.assert_array_equal(dx, [1, 0])
    np.testing.assert_array_equal(du, [0, 0])
    with pytest.raises(AutodiffError, match="floating-point"):
        nb2 = NetBuilder("i")
        i = nb2.create_input("int32", [2], "I")
        grad(nb2.build([nb2.relu(i)]))
    nb3 = NetBuilder("p")
    xi = nb3.create_input("float32", [2, 3, 3], "X")
    with pytest.raises(AutodiffError, match="op 'conv2d_grad_data' .* has no gradient rule"):
        w = nb3.create_input("float32", [2, 2, 1, 1], "W")
        program = nb3.build([nb3.conv2d_grad_data(nb3.reshape(xi, [1, 2, 3, 3]), w, input_size=[3, 3])])
        ruleless = dataclasses.replace(REGISTRY["conv2d_grad_data"], grad=None)  # every op has a rule
        with pytest.MonkeyPatch.context() as patch:
            patch.setitem(REGISTRY, "conv2d_grad_data", ruleless)
            grad(program, wrt=[w])


def test_reverse_slice_to_index_zero_matches_compiled() -> None:
    nb = NetBuilder("rev")
    x = nb.create_input("float64", [3, 4], "X")
    program = nb.build([nb.slice(x, [1], [-1], [-5], strides=[-1])])
    a = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(program.run_numpy(a), a[:, ::-1])
    np.testing.assert_array_equal(compile_program(program)(a), a[:, ::-1])
