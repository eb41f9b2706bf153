"""conv2d's gradients against PyTorch autograd (float32 and float64) over the attributes conv2d
takes: strides, symmetric and asymmetric paddings, SAME, dilations, groups (depthwise too), NCHW
and NHWC, sizes whose last rows no window reaches. The backward program runs through its numpy
reference and compiled for x86 (auto schedule)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from cinn_py.autodiff import grad
from cinn_py.frontend import NetBuilder
from cinn_py.pipeline import compile_program

torch = pytest.importorskip("torch")
F = torch.nn.functional


@dataclass(frozen=True)
class Conv:
    x: tuple[int, int, int, int]  # N, C, H, W
    w: tuple[int, int, int, int]
    kw: dict[str, Any] = field(default_factory=dict)

    @property
    def nhwc(self) -> bool:
        return self.kw.get("data_format") == "NHWC"


CONVS = [
    Conv((2, 3, 7, 7), (4, 3, 3, 3), {"paddings": [1, 1]}),
    Conv((2, 2, 8, 7), (3, 2, 3, 2), {"strides": [2, 3]}),                        # rows 7, col 6 unreached
    Conv((1, 4, 6, 7), (6, 2, 3, 3), {"groups": 2, "dilations": [2, 1], "paddings": [1, 2, 0, 1]}),
    Conv((2, 4, 9, 9), (8, 1, 3, 3), {"groups": 4, "strides": [2, 2], "paddings": [1, 1]}),  # depthwise x2
    Conv((1, 6, 7, 5), (4, 3, 2, 3), {"groups": 2, "strides": [2, 1], "dilations": [1, 2],
                                      "data_format": "NHWC", "paddings": [0, 1, 1, 0]}),
    Conv((2, 3, 6, 6), (2, 3, 3, 3), {"strides": [2, 2], "padding_algorithm": "SAME", "data_format": "NHWC"}),
]


def _torch_conv(case: Conv, x: Any, w: Any, attrs: dict[str, Any]) -> Any:
    t, b, left, right = attrs["pads"]
    return F.conv2d(F.pad(x, (left, right, t, b)), w, stride=attrs["strides"], dilation=attrs["dilations"],
                    groups=attrs["groups"])


def _run(case: Conv, dtype: str) -> tuple[Any, list[np.ndarray], list[np.ndarray], dict[str, Any]]:
    """(backward program, its arguments, PyTorch's [dx, dw], the forward's attrs)."""
    n, c, h, wd = case.x
    nb = NetBuilder("conv")
    x = nb.create_input(dtype, [n, h, wd, c] if case.nhwc else [n, c, h, wd], "X")
    w = nb.create_input(dtype, list(case.w), "W")
    y = nb.conv2d(x, w, **case.kw)
    program = nb.build([y])
    attrs = dict(program.ops[-1].attrs)
    rng = np.random.default_rng(3)
    xs = rng.uniform(-1, 1, x.shape).astype(dtype)
    ws = rng.uniform(-1, 1, w.shape).astype(dtype)
    dy = rng.uniform(-1, 1, y.shape).astype(dtype)
    tx = torch.tensor(xs.transpose(0, 3, 1, 2).copy() if case.nhwc else xs, requires_grad=True)
    tw = torch.tensor(ws, requires_grad=True)
    tdy = torch.tensor(dy.transpose(0, 3, 1, 2).copy() if case.nhwc else dy)
    _torch_conv(case, tx, tw, attrs).backward(tdy)
    dx = tx.grad.numpy()
    return grad(program), [xs, ws, dy], [dx.transpose(0, 2, 3, 1) if case.nhwc else dx,
                                         tw.grad.numpy()], attrs


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", CONVS, ids=[f"conv{k}" for k in range(len(CONVS))])
def test_conv2d_grads_match_torch(case: Conv, dtype: str) -> None:
    backward, args, want, _ = _run(case, dtype)
    tol = 1e-12 if dtype == "float64" else 1e-5
    for got, ref, name in zip(backward.run_numpy(*args), want, ("dx", "dw")):
        np.testing.assert_allclose(got, ref, rtol=tol, atol=tol, err_msg=name)


@pytest.mark.parametrize("case", CONVS, ids=[f"conv{k}" for k in range(len(CONVS))])
def test_conv2d_backward_compiled_x86_matches_torch(case: Conv) -> None:
    backward, args, want, _ = _run(case, "float32")
    got = compile_program(backward, "x86", schedule="auto")(*args)
    for g, ref, name in zip(got, want, ("dx", "dw")):
        np.testing.assert_allclose(g, ref, rtol=1e-4, atol=1e-5, err_msg=name)


def test_unreached_rows_get_zero_gradient() -> None:
    """H=8, 3x3, stride 2, no padding: windows start at rows 0, 2, 4 and end at row 6; row 7 of x
    takes no part in the output, so its gradient is exactly 0 (columns likewise)."""
    backward, args, want, attrs = _run(CONVS[1], "float64")
    assert attrs["out_hw"] == (3, 2)
    dx = backward.run_numpy(*args)[0]
    assert not dx[:, :, 7, :].any() and not dx[:, :, :, 6].any()
    assert dx[:, :, 6, :].any()
    np.testing.assert_allclose(dx, want[0], rtol=1e-12, atol=1e-12)


@dataclass(frozen=True)
class Pool:
    x: tuple[int, int, int, int]  # N, C, H, W
    kind: str
    kernel: tuple[int, int]
    stride: tuple[int, int]
    padding: tuple[int, int] = (0, 0)
    ceil_mode: bool = False
    exclusive: bool = True
    nhwc: bool = False


POOLS = [
    Pool((2, 3, 7, 7), "max", (3, 3), (2, 2), (1, 1)),
    Pool((1, 2, 8, 7), "max", (3, 2), (2, 3)),                   # row 7 and column 6: no window
    Pool((1, 2, 6, 6), "max", (2, 2), (2, 2), nhwc=True),
    Pool((1, 2, 7, 6), "max", (3, 3), (2, 2), (1, 1), ceil_mode=True),
    Pool((2, 3, 7, 7), "avg", (3, 3), (2, 2), (1, 1)),
    Pool((2, 3, 7, 7), "avg", (3, 3), (2, 2), (1, 1), exclusive=False),
    Pool((1, 2, 6, 6), "avg", (2, 3), (2, 2), (1, 1), ceil_mode=True, nhwc=True),
    Pool((1, 2, 6, 6), "avg", (3, 3), (3, 3), exclusive=False, nhwc=True),
]


def _pool_run(case: Pool, dtype: str,
              values: np.ndarray | None = None) -> tuple[Any, list[np.ndarray], np.ndarray]:
    """(backward program, its arguments, PyTorch's dx) for one pooling."""
    n, c, h, w = case.x
    nb = NetBuilder("pool")
    x = nb.create_input(dtype, [n, h, w, c] if case.nhwc else [n, c, h, w], "X")
    y = nb.pool2d(x, case.kind, list(case.kernel), stride=list(case.stride), padding=list(case.padding),
                  ceil_mode=case.ceil_mode, exclusive=case.exclusive,
                  data_format="NHWC" if case.nhwc else "NCHW")
    rng = np.random.default_rng(5)
    xs = (rng.uniform(-1, 1, x.shape) if values is None else values.reshape(x.shape)).astype(dtype)
    dy = rng.uniform(-1, 1, y.shape).astype(dtype)

    def nchw(a: np.ndarray) -> Any:
        return torch.tensor(a.transpose(0, 3, 1, 2).copy() if case.nhwc else a)

    tx = nchw(xs).requires_grad_()
    if case.kind == "max":
        out = F.max_pool2d(tx, case.kernel, case.stride, case.padding, ceil_mode=case.ceil_mode)
    else:
        out = F.avg_pool2d(tx, case.kernel, case.stride, case.padding, ceil_mode=case.ceil_mode,
                           count_include_pad=not case.exclusive)
    assert tuple(out.shape) == tuple(nchw(dy).shape), "the case must have PyTorch's output size"
    out.backward(nchw(dy))
    dx = tx.grad.numpy()
    return grad(nb.build([y])), [xs, dy], dx.transpose(0, 2, 3, 1) if case.nhwc else dx


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", POOLS, ids=[f"pool{k}-{p.kind}" for k, p in enumerate(POOLS)])
def test_pool2d_grad_matches_torch(case: Pool, dtype: str) -> None:
    backward, args, want = _pool_run(case, dtype)
    tol = 1e-12 if dtype == "float64" else 1e-6
    np.testing.assert_allclose(backward.run_numpy(*args), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("case", POOLS, ids=[f"pool{k}-{p.kind}" for k, p in enumerate(POOLS)])
def test_pool2d_backward_compiled_x86_matches_torch(case: Pool) -> None:
    backward, args, want = _pool_run(case, "float32")
    np.testing.assert_allclose(compile_program(backward, "x86", schedule="auto")(*args), want,
                               rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("case", [p for p in POOLS if p.kind == "max"], ids=lambda p: f"{p.x}-{p.kernel}")
def test_max_pool_ties_route_to_the_first_maximum_as_torch(case: Pool) -> None:
    """Values in {-1, 0, 1}: most windows hold several maxima; PyTorch gives the whole cotangent
    to the first in row-major window order, and so do the numpy reference and the kernels."""
    values = np.random.default_rng(9).integers(-1, 2, size=int(np.prod(case.x))).astype(np.float64)
    backward, args, want = _pool_run(case, "float32", values)
    np.testing.assert_array_equal(backward.run_numpy(*args), want)
    np.testing.assert_array_equal(compile_program(backward, "x86", schedule="auto")(*args), want)


def test_pool2d_argmax_is_torch_max_pool_indices() -> None:
    values = np.random.default_rng(2).integers(-1, 2, size=2 * 3 * 9 * 8)
    values = values.reshape(2, 3, 9, 8).astype(np.float32)
    nb = NetBuilder("argmax")
    x = nb.create_input("float32", [2, 3, 9, 8], "X")
    program = nb.build([nb.pool2d_argmax(x, [3, 3], stride=[2, 2], padding=[1, 1], ceil_mode=True)])
    _, want = F.max_pool2d(torch.tensor(values), 3, 2, 1, ceil_mode=True, return_indices=True)
    np.testing.assert_array_equal(program.run_numpy(values), want.numpy())
    np.testing.assert_array_equal(compile_program(program, "x86", schedule="auto")(values), want.numpy())


@pytest.mark.parametrize("case", [CONVS[2], CONVS[4]], ids=["groups-dilation", "nhwc"])
def test_conv2d_second_order_matches_torch(case: Conv) -> None:
    """A gradient penalty: the gradient of <dx, v> with respect to w and to the cotangent dy, where
    dx is conv2d's input gradient (the rules of conv2d_grad_data: conv2d and conv2d_grad_filter)."""
    backward, (xs, ws, dy), _, attrs = _run(case, "float64")
    v = np.random.default_rng(8).uniform(-1, 1, xs.shape)
    second = grad(backward, outputs=[backward.outputs[0]], wrt=[backward.inputs[1], backward.inputs[2]])
    dw, ddy = second.run_numpy(xs, ws, dy, v)

    def nchw(a: np.ndarray) -> Any:
        return torch.tensor(a.transpose(0, 3, 1, 2).copy() if case.nhwc else a)

    tx, tw, tdy = nchw(xs).requires_grad_(), torch.tensor(ws, requires_grad=True), nchw(dy).requires_grad_()
    (gx,) = torch.autograd.grad(_torch_conv(case, tx, tw, attrs), tx, tdy, create_graph=True)
    (gx * nchw(v)).sum().backward()
    want_dy = tdy.grad.numpy()
    np.testing.assert_allclose(dw, tw.grad.numpy(), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(ddy, want_dy.transpose(0, 2, 3, 1) if case.nhwc else want_dy,
                               rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("case", [POOLS[0], POOLS[2], POOLS[6]], ids=["max", "max-nhwc", "avg-ceil-nhwc"])
def test_pool2d_second_order_matches_torch(case: Pool) -> None:
    """The gradient of <dx, v> with respect to the cotangent dy (pool2d_grad's rule: g at the
    windows' first maxima, or g average-pooled) and to x (none: zeros, as PyTorch)."""
    values = np.random.default_rng(9).integers(-1, 2, size=int(np.prod(case.x))).astype(np.float64)
    backward, (xs, dy), _ = _pool_run(case, "float64", values)
    v = np.random.default_rng(8).uniform(-1, 1, xs.shape)
    second = grad(backward, outputs=[backward.outputs[0]], wrt=list(backward.inputs))
    dx, ddy = second.run_numpy(xs, dy, v)
    for got, ref in zip(compile_program(second, "x86", schedule="auto")(xs, dy, v), (dx, ddy)):
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)

    def nchw(a: np.ndarray) -> Any:
        return torch.tensor(a.transpose(0, 3, 1, 2).copy() if case.nhwc else a)

    tx, tdy = nchw(xs).requires_grad_(), nchw(dy).requires_grad_()
    if case.kind == "max":
        out = F.max_pool2d(tx, case.kernel, case.stride, case.padding, ceil_mode=case.ceil_mode)
    else:
        out = F.avg_pool2d(tx, case.kernel, case.stride, case.padding, ceil_mode=case.ceil_mode,
                           count_include_pad=not case.exclusive)
    (gx,) = torch.autograd.grad(out, tx, tdy, create_graph=True)
    (gx * nchw(v)).sum().backward()
    want = tdy.grad.numpy()
    np.testing.assert_allclose(ddy, want.transpose(0, 2, 3, 1) if case.nhwc else want, rtol=1e-12, atol=1e-12)
    assert not dx.any()


def test_backward_op_errors_name_the_op_and_the_expected_shape() -> None:
    from cinn_py.frontend.ops.base import FrontendError

    nb = NetBuilder("errors")
    dy, w = nb.create_input("float32", [1, 4, 5, 5], "DY"), nb.create_input("float32", [4, 3, 3, 3], "W")
    x = nb.create_input("float32", [1, 3, 7, 7], "X")
    with pytest.raises(FrontendError, match=r"conv2d_grad_data: argument 'input_size' must be \[H, W\]"):
        nb.conv2d_grad_data(dy, w, [7])
    with pytest.raises(FrontendError,
                       match=r"conv2d_grad_data: dy \[1, 4, 5, 5\] .* spatial dims \[4, 4\] .* got \[5, 5\]"):
        nb.conv2d_grad_data(dy, w, [6, 6])
    with pytest.raises(FrontendError, match=r"conv2d_grad_filter: .* divisible by groups=2"):
        nb.conv2d_grad_filter(x, dy, [3, 3], groups=2)
    with pytest.raises(FrontendError,
                       match=r"pool2d_grad: dy must be the forward output's type float32\[1, 3, 5, 5\]"):
        nb.pool2d_grad(x, dy, "max", [3, 3])
