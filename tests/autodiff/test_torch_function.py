"""cinn_py.torch.compile_function: a compiled program as a differentiable torch function, forward
and gradients vs eager PyTorch on a BERT-style block, zero-copy inputs and outputs."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from cinn_py.frontend import NetBuilder  # noqa: E402
from cinn_py.torch import compile_function, to_numpy, to_torch  # noqa: E402

B, S, H = 2, 4, 8


def _program():  # noqa: ANN202
    nb = NetBuilder("blk")
    x = nb.create_input("float32", [B, S, H], "X")
    w = nb.create_input("float32", [H, H], "W")
    b = nb.create_input("float32", [H], "Bias")
    g = nb.create_input("float32", [H], "Gamma")
    beta = nb.create_input("float32", [H], "Beta")
    h = nb.gelu(nb.add(nb.matmul(x, w), b))
    p = nb.softmax(nb.scale(nb.matmul(h, h, transpose_y=True), H ** -0.5), [-1])
    return nb.build([nb.layer_norm(nb.add(nb.matmul(p, h), x), g, beta, eps=1e-5, begin_norm_axis=2)])


def _eager(x, w, b, g, beta):  # noqa: ANN001, ANN202
    h = torch.nn.functional.gelu(x @ w + b)
    p = torch.softmax((h @ h.transpose(-1, -2)) * H ** -0.5, -1)
    return torch.nn.functional.layer_norm(p @ h + x, (H,), g, beta, eps=1e-5)


def test_forward_and_gradients_match_eager() -> None:
    gen = torch.Generator().manual_seed(0)
    shapes = [(B, S, H), (H, H), (H,), (H,), (H,)]
    mine = [(torch.rand(s, generator=gen) * 2 - 1).requires_grad_() for s in shapes]
    ref = [t.detach().clone().requires_grad_() for t in mine]
    fn = compile_function(_program())
    y = fn(*mine)
    want = _eager(*ref)
    assert isinstance(y, torch.Tensor) and y.dtype == torch.float32 and y.requires_grad
    torch.testing.assert_close(y, want, rtol=1e-4, atol=1e-5)
    dy = torch.rand(want.shape, generator=gen)
    (y * dy).sum().backward()
    (want * dy).sum().backward()
    for a, r in zip(mine, ref):
        torch.testing.assert_close(a.grad, r.grad, rtol=1e-4, atol=1e-5)


def test_views_share_memory() -> None:
    t = torch.arange(6, dtype=torch.float32).requires_grad_()  # a requires_grad tensor: no BufferError
    a = to_numpy(t)
    assert a.ctypes.data == t.data_ptr()
    back = to_torch(a)
    assert back.data_ptr() == t.data_ptr()
    np.testing.assert_array_equal(back.numpy(), np.arange(6, dtype=np.float32))
