"""Layouts at the torch backend's partition boundaries (cinn_py/torch/layout.py): every tensor a
partition returns has eager's strides (a later `view` that depends on them works), strided inputs
are read in place, and the default exact math matches PyTorch's OpInfo gradient samples."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

from torch.fx.experimental.proxy_tensor import make_fx  # noqa: E402

from cinn_py.torch.graph import CompiledGraph, TensorSpec  # noqa: E402
from cinn_py.torch.layout import InputLayout, OutputLayout, input_layout, output_layout  # noqa: E402

STRICT = {"strict": True}
A = torch.ops.aten


def _issue_repro(x: Any) -> Any:
    y = x.transpose(1, 2) * 2              # eager keeps x's memory order: y.transpose(1, 2) is contiguous
    z = torch.erfinv(torch.tanh(y) * 0.5)  # the issue's op (converted since 17d5df2)
    return z.transpose(1, 2).view(2, -1)   # valid only with eager's strides


def _issue_repro_eager_op(x: Any) -> Any:
    """The issue's repro with an op that has no converter: it runs eagerly between two partitions
    and keeps its input's strides, as erfinv did when the issue was filed."""
    y = x.transpose(1, 2) * 2
    z = torch.special.erfcx(torch.tanh(y) * 0.5)
    return z.transpose(1, 2).view(2, -1)


def _same(got: Any, want: Any) -> None:
    torch.testing.assert_close(got, want)
    assert got.stride() == want.stride(), f"strides {got.stride()}, eager {want.stride()}"


@pytest.mark.parametrize("repro", [_issue_repro, _issue_repro_eager_op])
@pytest.mark.parametrize("dynamic", [False, True])
def test_issue_repro_gets_eager_strides(dynamic: bool, repro: Any) -> None:
    torch._dynamo.reset()
    fn = torch.compile(repro, backend="cinn_py", dynamic=dynamic, options=STRICT)
    for shape in ((2, 8, 4), (2, 6, 5)) if dynamic else ((2, 8, 4),):
        x = torch.randn(*shape, generator=torch.Generator().manual_seed(sum(shape)))
        _same(fn(x), repro(x))


def _graph(fn: Any, args: list[Any]) -> CompiledGraph:
    gm = make_fx(fn)(*args)
    return CompiledGraph.build(gm, [TensorSpec.of(a) for a in args], "strides")


def test_outputs_leave_in_eager_memory_order() -> None:
    """An elementwise result of a permuted input is computed in that memory order and returned as a
    permuted view (no copy); a size-1 dim gets eager's stride too; a slice at an output is a view
    of the computed value, as in eager."""
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(3, 5, 4, generator=gen).permute(2, 0, 1)
    c = torch.randn(4, 1, 3, generator=gen).transpose(0, 2)  # [3, 1, 4], strides (1, 3, 3)

    def fn(x: Any, c: Any) -> Any:
        y = A.exp.default(A.mul.Tensor(x, 2.0))
        return y, A.slice.Tensor(A.add.Tensor(y, 1.0), 1, 1, 3), A.neg.default(c)

    graph = _graph(fn, [x, c])
    got, want = graph(x, c), fn(x, c)
    for g, e in zip(got, want):
        _same(g, e)
    assert graph.layouts[0] == OutputLayout((1, 2, 0))
    assert got[0].permute(1, 2, 0).is_contiguous()


def test_output_layout_decisions() -> None:
    x = torch.randn(2, 3, 4)
    assert output_layout(x) is None and output_layout(x[:1]) is None
    assert output_layout(x.transpose(0, 2)) == OutputLayout((2, 1, 0))
    odd = output_layout(torch.randn(3, 1).t())  # a [1, 3] tensor with strides (1, 1): re-strided, a view
    assert odd == OutputLayout(None, (1, 1))
    gapped = output_layout(x[:, :, ::2])
    assert gapped is not None and gapped.copy and gapped.strides == (12, 4, 2)
    _same(gapped(x[:, :, ::2].contiguous()), x[:, :, ::2])


def test_strided_inputs_are_read_in_place(monkeypatch: pytest.MonkeyPatch) -> None:
    """A transposed input enters as its memory, an expanded one with size 1 (broadcast by the
    Program), a slice of a dense block as that block (no copy); a call with another layout is
    copied into the traced one, or runs the graph eagerly where it cannot be (a broadcast dim
    that is not one)."""
    gen = torch.Generator().manual_seed(2)
    base = torch.randn(3, 4, 12, generator=gen)
    x = torch.randn(3, 4, 4, generator=gen).transpose(1, 2)
    b = torch.randn(4, 1, generator=gen).expand(4, 4)
    q = base[:, :, 4:8].transpose(1, 2)

    def fn(x: Any, b: Any, q: Any) -> Any:
        return A.add.Tensor(A.mul.Tensor(x, b), q)

    graph = _graph(fn, [x, b, q])
    assert [tuple(v.shape) for v in graph.program.inputs] == [(3, 4, 4), (4, 1), (3, 4, 12)]
    copies: list[Any] = []
    original = InputLayout._block_copy
    monkeypatch.setattr(InputLayout, "_block_copy", lambda self, v: copies.append(v) or original(self, v))
    _same(graph(x, b, q), fn(x, b, q))
    assert not copies
    other = base[:, :, 8:12].transpose(1, 2)  # the block around it would overrun the storage: copied
    _same(graph(x, b, other), fn(x, b, other))
    assert len(copies) == 1
    torch.testing.assert_close(graph(x.contiguous(), b.contiguous(), q.contiguous()), fn(x, b, q))


def test_sliced_and_expanded_input_layouts() -> None:
    x = torch.randn(2, 3, 8)
    chunk = input_layout(x[..., 2:5])
    assert chunk == InputLayout((0, 1, 2), (), (2, 3, 8), (0, 0, 2), (24, 8, 1))
    rows = input_layout(x[:, 1:])  # a slice of the middle dim: dense rows, gaps between matrices
    assert rows is not None and rows.block == (2, 3, 8) and rows.starts == (0, 1, 0)
    assert input_layout(x[..., ::2]) is None  # a step: copied (contiguous)
    expanded = input_layout(torch.randn(5, 1, 3).expand(5, 4, 3).transpose(0, 1))
    assert expanded == InputLayout((0, 1, 2), (0,))  # the broadcast dim stays in place: no transpose
    both = input_layout(torch.randn(3, 5).t().unsqueeze(0).expand(4, 5, 3))
    assert both == InputLayout((0, 2, 1), (0,))


def test_asin_opinfo_gradient_samples_match_with_default_tolerances() -> None:
    """PyTorch's OpInfo samples of asin, forward and gradient through the backend, pass
    `assert_close` with its default float32 tolerances: the backend's math is exact by default
    (fast math made them differ by up to 3e-6 relative)."""
    from torch.testing._internal.common_methods_invocations import op_db  # noqa: PLC0415

    op = next(o for o in op_db if o.name == "asin")
    samples = list(op.sample_inputs("cpu", torch.float32, requires_grad=True))
    assert samples
    gen = torch.Generator().manual_seed(5)
    for sample in samples:
        torch._dynamo.reset()
        fn = torch.compile(lambda x: torch.asin(x), backend="cinn_py", dynamic=False, options=STRICT)
        x = sample.input.detach().clone().requires_grad_(True)
        reference = sample.input.detach().clone().requires_grad_(True)
        out, want = fn(x), torch.asin(reference)
        cotangent = torch.randn(out.shape, generator=gen)
        torch.testing.assert_close(out, want)
        torch.testing.assert_close(torch.autograd.grad(out, x, cotangent)[0],
                                   torch.autograd.grad(want, reference, cotangent)[0])


@pytest.mark.parametrize("index", range(6))
def test_stride_fuzz_campaign(index: int) -> None:
    """A fixed-seed slice of `python -m cinn_py.tools.fuzz --torch-strides`: values, strides and
    views of every output as eager's."""
    from cinn_py.tools.fuzzing import torchgen  # noqa: PLC0415

    case = torchgen.generate(0, index)
    assert torchgen.check(case) is None, case.script()


def test_stride_fuzz_catches_row_major_outputs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fuzzer's check fails where partitions return row-major outputs (this case's sigmoid of
    a transposed input: eager keeps its memory order)."""
    import cinn_py.torch.graph as graph  # noqa: PLC0415
    from cinn_py.tools.fuzzing import torchgen  # noqa: PLC0415

    monkeypatch.setattr(graph, "output_layout", lambda fake: None)
    detail = torchgen.check(torchgen.generate(1, 6))
    assert detail is not None and "strides (5, 1), eager (1, 5)" in detail


def test_stride_fuzz_allows_eagers_own_rounding_not_more() -> None:
    """`exp` near 27 turns a 1-ulp difference of its input (another valid summation order of the
    matmul before it) into a 2e-6 relative difference, over `assert_close`'s float32 rtol: the
    fuzzer then compares both with a float64 reference and allows twice eager's own error. A
    wrong element, or a finite value where eager overflowed, still fails."""
    from cinn_py.tools.fuzzing.torchgen import as_accurate_as_eager  # noqa: PLC0415

    exact = torch.linspace(20.0, 27.0, 45, dtype=torch.float64)
    rounded = exact.float()
    other_order = torch.nextafter(rounded, torch.full_like(rounded, float("inf")))
    eager, got, reference = torch.exp(rounded), torch.exp(other_order), torch.exp(exact)
    with pytest.raises(AssertionError):
        torch.testing.assert_close(got, eager)
    assert as_accurate_as_eager(got, eager, reference) is None
    wrong = got.clone()
    wrong[3] *= 1 + 1e-4
    assert "1 element(s) beyond" in str(as_accurate_as_eager(wrong, eager, reference))
    huge = torch.tensor([100.0], dtype=torch.float64)
    assert as_accurate_as_eager(torch.tensor([3e38]), torch.exp(huge.float()), torch.exp(huge)) is not None


@pytest.mark.slow
@pytest.mark.parametrize("index", [178, 635, 686, 773, 826])
def test_stride_fuzz_seed_2026_failures(index: int) -> None:
    """The cases of the first 1,000-case campaign (seed 2026) that failed: products of symbols
    torch's guards pinned (178, 635, 686), views of a symbolically strided input (773), eager's
    own rounding amplified by exp (826)."""
    from cinn_py.tools.fuzzing import torchgen  # noqa: PLC0415

    case = torchgen.generate(2026, index)
    assert torchgen.check(case) is None, case.script()


def _flatten_expanded(a: Any) -> Any:
    v = a.flatten(2)  # a view of the expanded input: under dynamic shapes its sizes are SymInt nodes
    return torch.tanh(v), v[:, 1::2], v


def test_dynamic_view_of_an_input_is_taken_of_the_input() -> None:
    """An output that aliases an input gets its real strides (here 0: an expanded input) though its
    view's sizes are nodes: AOT autograd rebuilds it with `as_strided` of the input from them, and
    a row-major copy's strides made it read past the input's storage (stride campaign seed 2027
    case 421: `setStorage ... out of bounds`)."""
    torch._dynamo.reset()
    a = torch.randn(1, 1, 1, 1, generator=torch.Generator().manual_seed(4)).expand(2, 2, 2, 4)
    got = torch.compile(_flatten_expanded, backend="cinn_py", dynamic=True, options=STRICT)(a)
    for g, w in zip(got, _flatten_expanded(a)):
        _same(g, w)


def test_dynamic_view_of_an_offset_input_keeps_its_offset() -> None:
    """Found by `fuzz --torch-values` (seed 2311, case 23): with dynamic=True a flatten of a
    narrowed input (storage offset 48) had SymInt sizes, so the Program copied it and AOT autograd,
    which rebuilds an output aliasing an input from its size, strides and offset, read the input's
    storage from its start. Views with graph-argument sizes are now replayed on the input."""
    x = torch.randn([5, 4, 2, 2], generator=torch.Generator().manual_seed(1)).narrow(0, 3, 2)

    def f(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return a.flatten(1).unsqueeze(-1), torch.relu(a)

    torch._dynamo.reset()
    got = torch.compile(f, backend="cinn_py", dynamic=True, options={"strict": True})(x)
    for g, w in zip(got, f(x)):
        torch.testing.assert_close(g, w)
        assert g.stride() == w.stride() and g.storage_offset() == w.storage_offset()


@pytest.mark.slow
@pytest.mark.parametrize("index", [718, 832])
def test_stride_fuzz_seed_2029_views_are_not_compared_twice(index: int) -> None:
    """exp of exp / of a matmul: the values pass against the float64 reference (eager's own error
    is larger than assert_close's rtol); the `view` check then compared the viewed values again
    with default tolerances and failed. It now checks that the view gives the output's elements."""
    from cinn_py.tools.fuzzing import torchgen  # noqa: PLC0415

    case = torchgen.generate(2029, index)
    assert torchgen.check(case) is None, case.script()
