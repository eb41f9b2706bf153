"""Sizes torch's guards pin without pinning their symbols (`torch.compile(dynamic=True)`).

A literal size next to a symbolic one makes torch guard a relation it cannot turn into a
replacement of one symbol: `flat.expand(20)` of a `[s0*s1]` tensor guards `Eq(s0*s1, 20)`,
`view(16, 3)` of `[s0, s0, 3]` guards `Eq(s0**2, 16)`. The graph then holds `[s0*s1]`, `[s0, s1]`
and `[20]` side by side; cinn-py must use the same facts (the pinned value as the dim, the
equality in its shape checks) or it cannot convert the graph (found by the stride fuzzer).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from cinn_py.frontend.compute import sym  # noqa: E402
from cinn_py.frontend.ops.shapes import assumed_dims, dims_equal  # noqa: E402

STRICT = {"strict": True}


def _same(fn: Callable[..., Any], *calls: tuple[Any, ...]) -> None:
    """One compiled `fn` (dynamic) for every call in `calls`, each matching eager."""
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="cinn_py", dynamic=True, options=STRICT)
    for args in calls:
        for g, w in zip(compiled(*args), fn(*args)):
            torch.testing.assert_close(g, w)
            long_dims = [s for n, s in zip(g.shape, g.stride()) if n != 1]
            assert long_dims == [s for n, s in zip(w.shape, w.stride()) if n != 1], \
                f"strides {g.stride()}, eager {w.stride()}"


def _expand_flat_to_20(a: Any) -> Any:
    flat = a.flatten(0)         # [s0*s1]
    wide = flat.expand([20])    # guards s0*s1 == 20; the reshape of [s0, s1] to [20] relies on it
    return torch.sigmoid(wide), wide


def test_product_pinned_by_expand() -> None:
    """Torch's guard lets every factorisation of 20 through: one Program serves them."""
    gen = torch.Generator().manual_seed(0)
    _same(_expand_flat_to_20, (torch.randn(5, 1, generator=gen).expand(5, 4),),
          (torch.randn(4, 1, generator=gen).expand(4, 5),), (torch.randn(2, 10, generator=gen),))


def _view_square(a: Any) -> Any:
    v = torch.tanh(a.view([16, 3]))  # of [s0, s0, 3]: guards s0**2 == 16
    return v.expand([3, 16, 3]).reshape([-1]), v


def test_power_pinned_by_view() -> None:
    _same(_view_square, (torch.randn(4, 4, 3, generator=torch.Generator().manual_seed(1)),))


def _reshape_factors(a: Any) -> Any:
    flat = a.flatten(0)               # [s0*s1] of an expanded [s0, s1, 1]
    grid = flat.reshape([3, 5])       # guards s0*s1 == 15
    return grid.unsqueeze(-2) - grid, torch.sigmoid(grid), flat


def test_product_pinned_by_reshape() -> None:
    gen = torch.Generator().manual_seed(2)
    _same(_reshape_factors, (torch.randn(3, 1, 1, generator=gen).expand(3, 5, 1),))


def test_assumed_dims_decide_only_within_the_block() -> None:
    s0, s1 = sym("s0"), sym("s1")
    assert not dims_equal(s0 * s1, 20)
    with assumed_dims([(s0 * s1, 20)]):
        assert dims_equal(s0 * s1, 20)
        assert dims_equal(s0 * s1 * 3, 60)
        assert not dims_equal(s0 * s1, 21)
        assert not dims_equal(s0, 20)
    assert not dims_equal(s0 * s1, 20)


def _views_of_a_slice(a: Any) -> Any:
    v = a * a + a
    part = v[:, 1:2]
    return part.permute([1, 2, 0]), part.select(1, 0), v.reshape([-1])


def test_views_of_symbolic_strided_inputs_are_views() -> None:
    """The slice runs between partitions; the select and permute of it are views with eager's
    symbolic strides ([s0, 1, 1] of stride (s1, 1, 1)), not kernels writing row-major copies."""
    gen = torch.Generator().manual_seed(3)
    _same(_views_of_a_slice, (torch.randn(1, 2, 1, generator=gen).expand(3, 2, 1),))
