"""The fused attention ops (`flash_attention`, `flash_attention_grad`): x86 kernels against the
float64 references for what the harness cases leave out (float masks, partial tiles on both
axes, gradients through `cinn_py.autodiff`), and their argument errors."""

from __future__ import annotations

import numpy as np
import pytest

from cinn_py import compile_program
from cinn_py.autodiff import grad
from cinn_py.frontend import NetBuilder
from cinn_py.frontend.ops import FrontendError
from cinn_py.frontend.ops.attention import attention_outputs, reference_attention, reference_attention_grad

RNG = np.random.default_rng(0)


def _inputs(b: int, hq: int, hk: int, l: int, s: int, e: int, ev: int) -> list[np.ndarray]:
    return ([RNG.standard_normal(shape).astype(np.float32) for shape
             in ((b, hq, l, e), (b, hk, s, e), (b, hk, s, ev))])


def _program(arrays: list[np.ndarray], mask: np.ndarray | None, causal: bool,
             scale: float | None = None) -> tuple:
    nb = NetBuilder("attention")
    q, k, v = (nb.create_input("float32", list(a.shape), n) for a, n in zip(arrays, "QKV"))
    m = nb.create_input(str(mask.dtype), list(mask.shape), "M") if mask is not None else None
    packed = nb.flash_attention(q, k, v, m, scale=scale, causal=causal)
    out, lse = attention_outputs(nb, packed, q, v)
    return nb.build([out, lse]), [*arrays, *([mask] if mask is not None else [])]


@pytest.mark.parametrize(("dims", "mask_shape", "causal"), [
    ((1, 2, 2, 70, 150, 16, 8), (70, 150), False),        # partial query and key tiles, a float mask
    ((2, 4, 2, 9, 40, 8, 8), (2, 1, 9, 40), True),         # grouped-query heads, per-batch mask, causal
])
def test_float_mask_forward_and_gradients(dims: tuple[int, ...], mask_shape: tuple[int, ...],
                                          causal: bool) -> None:
    arrays = _inputs(*dims)
    mask = RNG.standard_normal(mask_shape).astype(np.float32)
    mask[..., 3] = -np.inf  # a key masked out by -inf
    program, ins = _program(arrays, mask, causal, scale=0.3)
    out, lse = compile_program(program, "x86", schedule="auto")(*ins)
    want_out, want_lse = reference_attention(*arrays, mask, 0.3, causal)
    np.testing.assert_allclose(out, want_out, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(lse, want_lse, rtol=1e-4, atol=1e-5)

    backward = grad(program, wrt=list(program.inputs[:3]))
    dout = RNG.standard_normal(out.shape).astype(np.float32)
    dlse = RNG.standard_normal(lse.shape).astype(np.float32)
    got = compile_program(backward, "x86", schedule="auto")(*ins, dout, dlse)
    want = reference_attention_grad(*arrays, dout, dlse, mask, 0.3, causal)
    for g, w, name in zip(got, want, ("dq", "dk", "dv")):
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-4, err_msg=name)


def test_fully_masked_row_gives_zeros_as_torch() -> None:
    arrays = _inputs(1, 1, 1, 4, 5, 8, 8)
    mask = np.ones((4, 5), bool)
    mask[2] = False
    program, ins = _program(arrays, mask, False)
    out, lse = compile_program(program, "x86", schedule="auto")(*ins)
    assert not out[0, 0, 2].any() and lse[0, 0, 2] == 0.0
    np.testing.assert_allclose(out, reference_attention(*arrays, mask)[0], rtol=1e-4, atol=1e-5)


def test_argument_errors() -> None:
    nb = NetBuilder("bad")
    q = nb.create_input("float32", [1, 3, 4, 8], "Q")
    k = nb.create_input("float32", [1, 2, 5, 8], "K")
    v = nb.create_input("float32", [1, 2, 5, 8], "V")
    with pytest.raises(FrontendError, match="q's heads must be a multiple of k's"):
        nb.flash_attention(q, k, v)
    k1 = nb.create_input("float32", [1, 1, 5, 8], "K1")
    v1 = nb.create_input("float32", [1, 1, 5, 8], "V1")
    with pytest.raises(FrontendError,
                       match=r"mask \[4, 4\] must broadcast to \[B, Hq, L, S\] = \[1, 3, 4, 5\]"):
        nb.flash_attention(q, k1, v1, nb.create_input("bool", [4, 4], "M"))
    big = [nb.create_input("float32", [64, 32, 8192, 64], n) for n in ("BQ", "BK", "BV")]
    with pytest.raises(FrontendError, match="exceed the kernels' 32-bit indexing"):
        nb.flash_attention(*big)
    with pytest.raises(FrontendError, match="must all be float32 or all float64"):
        nb.flash_attention(nb.create_input("float16", [1, 1, 4, 8], "H"), k1, v1)
