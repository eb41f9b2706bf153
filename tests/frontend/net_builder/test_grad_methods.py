"""CINN's public gradient methods of NetBuilder (issue 23 item 9): relu_grad, elementwise_add_grad,
conv2d_grad and batch_norm_grad, with CINN's argument names and output lists, against torch
autograd (float64 math, compiled for x86 through build_and_get_output)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import cinn_py as cp
from cinn_py.frontend.ops.base import FrontendError

RNG = np.random.default_rng(7)


def _run(builder: cp.NetBuilder, feeds: list, arrays: list, fetch: list) -> list[np.ndarray]:
    return cp.build_and_get_output(builder.build(), cp.DefaultHostTarget(), feeds, arrays, fetch)


def test_relu_grad_is_dout_where_x_is_positive() -> None:
    builder = cp.NetBuilder("relu_grad")
    dout = builder.create_input("float32", [4, 5], "dout")
    x = builder.create_input("float32", [4, 5], "x")
    D, X = RNG.standard_normal((2, 4, 5)).astype("float32")
    X[0, :3] = [0.0, np.nan, -0.0]
    (got,) = _run(builder, [dout, x], [D, X], [builder.relu_grad(dout=dout, x=x)])
    np.testing.assert_array_equal(got, np.where(X > 0, D, 0))


@pytest.mark.parametrize(("x_shape", "y_shape", "axis"), [([3, 4], [3, 4], -1), ([2, 3, 4], [4], -1),
                                                          ([2, 3, 4], [3], 1), ([2, 1, 4], [2, 3, 1], -1)])
def test_elementwise_add_grad_sums_dout_to_each_operand(x_shape: list, y_shape: list, axis: int) -> None:
    builder = cp.NetBuilder("add_grad")
    x = builder.create_input("float32", x_shape, "x")
    y = builder.create_input("float32", y_shape, "y")
    out = builder.add(x, y, axis=axis)
    dout = builder.create_input("float32", list(out.shape), "dout")
    dx, dy = builder.elementwise_add_grad(dout, x, y, axis=axis)
    X, Y = RNG.standard_normal(x_shape).astype("float32"), RNG.standard_normal(y_shape).astype("float32")
    D = RNG.standard_normal(out.shape).astype("float32")
    got_dx, got_dy = _run(builder, [x, y, dout], [X, Y, D], [dx, dy])
    tx, ty = torch.tensor(X, requires_grad=True), torch.tensor(Y, requires_grad=True)
    ty_view = ty if axis == -1 else ty.reshape(y_shape + [1] * (len(x_shape) - axis - len(y_shape)))
    (tx + ty_view).backward(torch.tensor(D))
    np.testing.assert_allclose(got_dx, tx.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_dy, ty.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_conv2d_grad_returns_data_and_filter_gradients() -> None:
    builder = cp.NetBuilder("conv2d_grad")
    x = builder.create_input("float32", [2, 3, 7, 6], "x")
    w = builder.create_input("float32", [4, 3, 3, 3], "w")
    y = builder.conv2d(x, w, strides=[2, 1], paddings=[1, 0])
    dy = builder.create_input("float32", list(y.shape), "dy")
    dx, dw = builder.conv2d_grad(dy, x, w, strides=[2, 1], paddings=[1, 0])
    X, W, D = (RNG.standard_normal(s).astype("float32") for s in ([2, 3, 7, 6], [4, 3, 3, 3], y.shape))
    got_dx, got_dw = _run(builder, [x, w, dy], [X, W, D], [dx, dw])
    tx, tw = torch.tensor(X, requires_grad=True), torch.tensor(W, requires_grad=True)
    torch.nn.functional.conv2d(tx, tw, stride=(2, 1), padding=(1, 0)).backward(torch.tensor(D))
    np.testing.assert_allclose(got_dx, tx.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got_dw, tw.grad.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_batch_norm_grad_matches_torch_training_batch_norm(layout: str) -> None:
    shape = [4, 3, 5, 2] if layout == "NCHW" else [4, 5, 2, 3]
    builder = cp.NetBuilder("batch_norm_grad")
    names = ("dy", "x", "scale", "save_mean", "save_variance")
    dy, x, scale, mean, var = (builder.create_input("float64", shape if k < 2 else [3], n)
                               for k, n in enumerate(names))
    outs = builder.batch_norm_grad(dy, x, scale, mean, var, epsilon=1e-3, data_layout=layout)
    X, D = RNG.standard_normal((2, *shape))
    S = RNG.uniform(0.5, 1.5, 3)
    to_nchw = (lambda a: a) if layout == "NCHW" else (lambda a: np.moveaxis(a, -1, 1))
    axes = (0, 2, 3)
    M, V = to_nchw(X).mean(axis=axes), to_nchw(X).var(axis=axes)
    got = _run(builder, [dy, x, scale, mean, var], [D, X, S, M, V], outs)
    tx, ts = torch.tensor(to_nchw(X), requires_grad=True), torch.tensor(S, requires_grad=True)
    tb = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    out = torch.nn.functional.batch_norm(tx, None, None, ts, tb, training=True, eps=1e-3)
    out.backward(torch.tensor(to_nchw(D)))
    want_dx = tx.grad.numpy() if layout == "NCHW" else np.moveaxis(tx.grad.numpy(), 1, -1)
    for g, w in zip(got, [want_dx, ts.grad.numpy(), tb.grad.numpy()]):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-10)


def test_grad_methods_name_the_bad_argument() -> None:
    builder = cp.NetBuilder("bad")
    a = builder.create_input("float32", [3], "a")
    b = builder.create_input("float32", [4], "b")
    with pytest.raises(FrontendError, match="relu_grad: arguments 'dout' and 'x'"):
        builder.relu_grad(a, b)
    with pytest.raises(FrontendError, match="elementwise_add_grad: shapes"):
        builder.elementwise_add_grad(a, a, b)
    with pytest.raises(FrontendError, match="conv2d_grad: arguments 'x' and 'w' must be 4-d"):
        builder.conv2d_grad(a, a, a)
