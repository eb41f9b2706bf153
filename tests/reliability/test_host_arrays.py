"""Host arguments a kernel cannot read faithfully are refused with an error naming the argument
(issue 23 item 10): a torch tensor that requires grad, one on the meta device, a numpy masked
array (its mask was silently dropped); a torch bfloat16 tensor is read as its bits."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import cinn_py as cp

BAD = [
    (lambda: torch.ones(4, requires_grad=True), TypeError, "requires grad.*x.detach"),
    (lambda: torch.ones(4, device="meta"), ValueError, "'meta' device"),
    (lambda: np.ma.masked_array(np.ones(4, np.float32), mask=[0, 1, 0, 0]), TypeError, "masked array"),
]


@pytest.fixture(scope="module")
def kernel() -> object:
    a = cp.placeholder((4,), "float32", "A")
    return cp.build(cp.lower("double", [a, cp.compute((4,), lambda i: a[i] * 2.0, "B")]), "x86")


@pytest.mark.parametrize(("make", "exc", "message"), BAD)
def test_kernel_call_refuses_with_the_argument_named(kernel: object, make: object, exc: type,
                                                     message: str) -> None:
    with pytest.raises(exc, match=rf"kernel 'double': input 0 \('A'\): .*{message}"):
        kernel(make())  # type: ignore[operator]


@pytest.mark.parametrize(("make", "exc", "message"), BAD)
def test_program_inputs_refuse_with_the_argument_named(make: object, exc: type, message: str) -> None:
    builder = cp.NetBuilder("p")
    x = builder.create_input("float32", [4], "x")
    out = builder.exp(x)
    with pytest.raises(exc, match=rf"program 'p': input 'x': .*{message}"):
        cp.build_and_get_output(builder.build(), cp.DefaultHostTarget(), [x], [make()], [out])  # type: ignore[operator]


def test_torch_bfloat16_tensor_is_read_as_its_bits() -> None:
    a = cp.placeholder((4,), "bfloat16", "A")
    kernel = cp.build(cp.lower("twice", [a, cp.compute((4,), lambda i: a[i] * 2.0, "B")]), "x86")
    got = kernel(torch.tensor([1.0, -2.0, 3.5, 0.25], dtype=torch.bfloat16))
    want = torch.tensor([2.0, -4.0, 7.0, 0.5], dtype=torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    np.testing.assert_array_equal(np.asarray(got), want)


def test_detached_and_plain_tensors_still_work(kernel: object) -> None:
    x = torch.arange(4, dtype=torch.float32, requires_grad=True)
    np.testing.assert_array_equal(kernel(x.detach()), [0, 2, 4, 6])  # type: ignore[operator]
