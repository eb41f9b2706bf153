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
    t, b, l, r = attrs["pads"]
    return F.conv2d(F.pad(x, (l, r, t, b)), w, stride=attrs["strides"], dilation=attrs["dilations"],
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
    return grad(program), [xs, ws, dy], [dx.transpose(0, 2, 3, 1) if case.nhwc else dx, tw.grad.numpy()], attrs


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
