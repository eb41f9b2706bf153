"""Symbolic shapes through `torch.compile(backend="cinn_py")`: one compiled Program per graph serves
every batch/sequence size (forward and AOT-autograd backward match eager), ops that need a static
or scalar size fall back with their reason, and each call checks what the graph assumed about its
sizes (equal dims, products of dims, torch's 0/1 specialisation)."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import cinn_py.torch as ct  # noqa: E402
from cinn_py.frontend.ops.shapes import fmt_dim  # noqa: E402
from cinn_py.torch import graph as graph_module  # noqa: E402
from cinn_py.torch.backend import cinn_py_backend  # noqa: E402
from cinn_py.torch.converters import CONVERTERS  # noqa: E402
from cinn_py.torch.graph import CompiledGraph  # noqa: E402
from cinn_py.torch.support import input_spec  # noqa: E402
from cinn_py.torch.input_plan import SymIntInput, TensorInput  # noqa: E402
from cinn_py.torch.symbolic import SymbolicShapeError  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
STRICT = {"strict": True}


@pytest.fixture()
def builds(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[CompiledGraph]]:
    """The partitions cinn-py compiles during the test (one per CompiledGraph.build)."""
    graphs: list[CompiledGraph] = []
    build = CompiledGraph.build

    def counted(*args: Any, **kwargs: Any) -> CompiledGraph:
        graphs.append(build(*args, **kwargs))
        return graphs[-1]

    monkeypatch.setattr(CompiledGraph, "build", staticmethod(counted))
    torch._dynamo.reset()
    ct.reset_reports()
    yield graphs
    torch._dynamo.reset()


def _example() -> Any:
    spec = importlib.util.spec_from_file_location("train_bert_layer",
                                                  ROOT / "examples" / "train_bert_layer.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # Dynamo imports the module of the functions it traces
    spec.loader.exec_module(module)
    return module


def _check_sizes(fn: Callable[..., Any], make: Callable[[int, int], list[Any]], sizes: list[tuple[int, int]],
                 dynamic_dims: tuple[int, ...] = (), dynamic: bool | None = True) -> None:
    """`fn` compiled once, called at each size: output and every float input's gradient vs eager.
    `dynamic_dims` of the first input are marked dynamic (with `dynamic=None`)."""
    compiled = torch.compile(fn, backend=cinn_py_backend, dynamic=dynamic, options=STRICT)
    for b, s in sizes:
        inputs = make(b, s)
        mine = [t.detach().clone().requires_grad_(t.is_floating_point()) for t in inputs]
        ref = [t.detach().clone().requires_grad_(t.is_floating_point()) for t in inputs]
        for d in dynamic_dims:
            torch._dynamo.mark_dynamic(mine[0], d)
        out, expected = compiled(*mine), fn(*ref)
        torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-5,
                                   msg=lambda m, b=b, s=s: f"{b}x{s}: {m}")
        cot = torch.randn(expected.shape, generator=torch.Generator().manual_seed(b * 100 + s))
        (out * cot).sum().backward()
        (expected * cot).sum().backward()
        for k, (a, r) in enumerate(zip(mine, ref)):
            if r.grad is not None:
                torch.testing.assert_close(a.grad, r.grad, rtol=1e-4, atol=1e-5,
                                           msg=lambda m, k=k, b=b, s=s: f"{b}x{s} input {k}: {m}")


def _compiled_once(builds: list[CompiledGraph]) -> None:
    """One forward and one backward graph, each one compiled partition, nothing eager."""
    kinds = [r.name.split()[0] for r in ct.reports()]
    assert kinds == ["forward", "backward"], [r.name for r in ct.reports()]
    assert len(builds) == 2, [g.program.name for g in builds]
    for report in ct.reports():
        assert not report.fallback and not report.errors, str(report)


class _Mlp(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 12)
        self.norm = torch.nn.LayerNorm(12)
        self.fc2 = torch.nn.Linear(12, 6)

    def forward(self, x: Any) -> Any:
        h = self.norm(torch.nn.functional.gelu(self.fc1(x)))
        return torch.softmax(self.fc2(h), dim=-1)


def test_mlp_with_dynamic_batch_compiles_once_and_matches_eager(builds: list[CompiledGraph]) -> None:
    torch.manual_seed(0)
    model = _Mlp()
    gen = torch.Generator().manual_seed(1)
    _check_sizes(model, lambda b, _: [torch.randn(b, 8, generator=gen)], [(3, 0), (5, 0), (9, 0)])
    _compiled_once(builds)
    assert ct.reports()[1].compiled["aten.native_layer_norm_backward.default"] == 1
    assert len(ct.reports()[0].symbols) == 1 and "(symbolic sizes s" in str(ct.reports()[0])


def test_bert_layer_with_dynamic_batch_and_sequence_compiles_once(builds: list[CompiledGraph]) -> None:
    """The BERT-style layer (q/k/v projections, softmax attention, layer_norm, linear + bias +
    gelu) with batch and sequence length marked dynamic: its views flatten them into `s0*s1`
    rows and back, and the backward graph takes tensors of `s0*s1` rows."""
    example = _example()
    params = example.init_params()
    names = list(params)
    gen = torch.Generator().manual_seed(2)

    def layer(x: Any, *p: Any) -> Any:
        return example.eager_layer(x, dict(zip(names, p)))

    def make(b: int, s: int) -> list[Any]:
        return [torch.randn(b, s, example.H, generator=gen), *params.values()]

    _check_sizes(layer, make, [(2, 8), (3, 5), (4, 7)], dynamic_dims=(0, 1), dynamic=None)
    _compiled_once(builds)
    forward, backward = ct.reports()
    assert forward.compiled["aten._softmax.default"] == 1 and forward.compiled["aten.gelu.default"] == 1
    assert backward.compiled["aten.native_layer_norm_backward.default"] == 2
    factored = [e.name for e in builds[1].plan.inputs if isinstance(e, TensorInput) and e.is_factored]
    assert factored, "the backward graph takes the [s0*s1, F] matmul output: it enters split as [s0, s1, F]"


class _Pooler(torch.nn.Module):
    """Embedding, a fused qkv Linear split in three, attention, and rows picked by index along
    the symbolic sequence (`a[:, 0]`, the CLS row, and `select(1, 1)`)."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(11, 8, padding_idx=0)
        self.qkv = torch.nn.Linear(8, 24)

    def forward(self, ids: Any) -> Any:
        q, k, v = self.qkv(self.emb(ids)).split(8, dim=-1)
        a = torch.softmax(q @ k.transpose(-1, -2), -1) @ v
        return torch.tanh(a[:, 0]) + a.select(1, 1).clamp_min(0)


def test_rows_selected_along_a_symbolic_sequence_compile(builds: list[CompiledGraph]) -> None:
    """select with a non-negative index along a symbolic dim is an index_select of that row, its
    backward a scatter_add into zeros: the pooler compiles whole for every (batch, sequence)."""
    torch.manual_seed(0)
    model, ref = _Pooler(), _Pooler()
    ref.load_state_dict(model.state_dict())
    compiled = torch.compile(model, backend=cinn_py_backend, dynamic=True, options=STRICT)
    gen = torch.Generator().manual_seed(12)
    for b, s in ((2, 5), (3, 7), (4, 4)):
        ids = torch.randint(0, 11, (b, s), generator=gen)
        out, expected = compiled(ids), ref(ids)
        torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-5)
        out.square().sum().backward()
        expected.square().sum().backward()
        for (name, p), q in zip(model.named_parameters(), ref.parameters()):
            torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5,
                                       msg=lambda m, n=name: f"{n}: {m}")
        model.zero_grad()
        ref.zero_grad()
    _compiled_once(builds)
    assert ct.reports()[0].compiled["aten.select.int"] == 2
    assert ct.reports()[1].compiled["aten.select_backward.default"] == 2


def test_a_size_used_as_a_number_enters_as_a_0d_input(builds: list[CompiledGraph]) -> None:
    """`x * x.shape[-1]` and `/ x.shape[0]`: arithmetic with a SymInt operand takes it as a 0-d
    int64 input of the Program holding its value, so it compiles for every size."""
    def fn(x: Any) -> Any:
        return torch.exp(torch.tanh(x) * x.shape[-1]) / x.shape[0] + 1

    gen = torch.Generator().manual_seed(3)
    _check_sizes(fn, lambda b, s: [torch.randn(b, s, generator=gen) * 0.1], [(2, 3), (4, 5), (3, 7)])
    _compiled_once(builds)
    scalars = [e for e in builds[0].plan.inputs if isinstance(e, SymIntInput) and e.scalar]
    assert len(scalars) == 2
    assert sum(1 for v in builds[0].program.inputs if v.shape == () and str(v.dtype) == "int64") == 2


def test_attention_scaled_by_its_symbolic_head_size_compiles_whole(builds: list[CompiledGraph]) -> None:
    """`dynamic=True` makes the hidden size symbolic too: the attention scale `h ** -0.5` is
    computed in the graph (scalar_tensor of the SymInt, a float64 pow, casts) and compiles with
    the rest, one partition per graph."""
    def attention(q: Any, k: Any) -> Any:
        return torch.softmax((q @ k.transpose(-1, -2)) * q.shape[-1] ** -0.5, dim=-1)

    gen = torch.Generator().manual_seed(11)
    _check_sizes(attention, lambda b, s: [torch.randn(b, s, 4 + s, generator=gen) for _ in range(2)],
                 [(2, 3), (3, 5), (2, 6)])
    _compiled_once(builds)
    assert ct.reports()[0].compiled["aten.pow.Tensor_Tensor"] == 1 and ct.reports()[0].partitions == 1


def test_a_size_used_as_a_number_elsewhere_falls_back_with_its_reason(builds: list[CompiledGraph]) -> None:
    """Only arithmetic, comparisons and `full` take a SymInt operand: `clamp(x, max=s)` runs
    eagerly, the ops around it are compiled."""
    def fn(x: Any) -> Any:
        return torch.exp(torch.clamp(torch.tanh(x) * 4, max=x.shape[-1] - 1))

    gen = torch.Generator().manual_seed(3)
    _check_sizes(fn, lambda b, s: [torch.randn(b, s, generator=gen)], [(2, 3), (4, 5)])
    forward = ct.reports()[0]
    assert forward.fallback == {"aten.clamp.default": 1}, str(forward)
    assert forward.reasons["aten.clamp.default"].endswith("is symbolic (only sizes may be)")
    assert forward.compiled["aten.tanh.default"] == 1 and forward.compiled["aten.exp.default"] == 1


def test_a_size_only_a_symint_gives_enters_as_a_shape_carrier(builds: list[CompiledGraph]) -> None:
    """`ones(y.shape[0])`: y's size reaches the partition as a SymInt argument only; the Program
    binds it from a shape-carrier input of that length."""
    def fn(x: Any, y: Any) -> Any:
        return torch.tanh(x).sum(0, keepdim=True).T * torch.ones(y.shape[0])

    gen = torch.Generator().manual_seed(4)
    _check_sizes(fn, lambda b, s: [torch.randn(b, 3, generator=gen), torch.randn(s, generator=gen)],
                 [(2, 5), (4, 3), (3, 6)])
    assert not ct.reports()[0].fallback and len(builds) == 2
    carriers = [v.name for v in builds[0].program.inputs if v.name.startswith("carrier_")]
    assert len(carriers) == 1 and builds[0].plan.carriers[0].name in carriers[0]


def test_a_product_no_input_gives_apart_enters_as_one_symbol(builds: list[CompiledGraph],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """After the eager erfinv, the partition `* 2` sees only `[s0*s1, 4]` tensors and no SymInt:
    `s0*s1` cannot be split into factors it could bind, so it is one symbol `s0_s1` there."""
    monkeypatch.delitem(CONVERTERS, "aten.erfinv.default")  # an op without a converter
    torch._dynamo.reset()
    def fn(x: Any) -> Any:
        return torch.erfinv(torch.tanh(x.view(-1, 4)) * 0.5) * 2

    gen = torch.Generator().manual_seed(9)
    _check_sizes(fn, lambda b, s: [torch.randn(b, s, 4, generator=gen)], [(2, 3), (3, 5), (4, 2)])
    assert ct.reports()[0].fallback == {"aten.erfinv.default": 1} and len(ct.reports()) == 2
    after = builds[1].program.inputs[0]  # the forward graph's second partition
    assert len(after.shape) == 2 and "_" in str(after.shape[0]) and after.shape[1] == 4, after


def test_an_input_dim_of_another_form_enters_as_one_symbol_checked_against_its_definition(
        builds: list[CompiledGraph]) -> None:
    """`x[:, 1:]` (a slice along a symbolic dim: eager) makes `s1 - 1` columns; the partition
    after it takes them as one symbol `s1_minus_1`, which each call checks is `y`'s `s1` minus 1."""
    def fn(x: Any, y: Any) -> Any:
        return torch.tanh(x[:, 1:]).sum(-1) * y.sum(-1)

    gen = torch.Generator().manual_seed(10)
    _check_sizes(fn, lambda b, s: [torch.randn(b, s, generator=gen), torch.randn(b, s, generator=gen)],
                 [(2, 3), (3, 5), (4, 4)])
    assert ct.reports()[0].fallback == {"aten.slice.Tensor": 1}, str(ct.reports()[0])
    graph = next(g for g in builds if g.plan.definitions)
    (atom, definition), = graph.plan.definitions
    assert atom.name.endswith("_minus_1") and fmt_dim(definition).endswith(" - 1"), fmt_dim(definition)
    sliced = [isinstance(e, TensorInput) and atom in e.dims for e in graph.plan.inputs]
    args = [torch.randn(3, 4 if s else 6) for s in sliced]  # the slice has 4 columns, not 6 - 1
    with pytest.raises(SymbolicShapeError, match=rf"symbolic dim '{atom.name}' \(from input '\w+' dim 1\) is "
                                                  r"4, but the graph was traced with it equal to s\d+ - 1 = "
                                                  r"5"):
        graph(*args)


def test_size_one_is_specialised_by_torch_into_a_graph_of_its_own(builds: list[CompiledGraph]) -> None:
    """Torch assumes symbolic sizes are >= 2 and guards on it: batch 1 gets its own graph (batch
    static 1, the rest symbolic), compiled and correct; the symbolic graph serves the others."""
    def fn(x: Any) -> Any:
        return torch.tanh(x).sum(0) * 2

    gen = torch.Generator().manual_seed(5)
    _check_sizes(fn, lambda b, s: [torch.randn(b, s, 4, generator=gen)], [(3, 5), (1, 4), (2, 6)])
    assert [r.name.split()[0] for r in ct.reports()] == ["forward", "backward"] * 2
    assert all(not r.fallback for r in ct.reports())


def test_view_dividing_a_symbolic_dim_compiles_with_the_division_made_exact(
        builds: list[CompiledGraph]) -> None:
    """`view(b, -1, 2)` makes `s1//2`; torch guarantees `s1` even (its guards check it), so
    `s1` becomes `2*s1_div2` in the Program and the division cancels."""
    def fn(x: Any) -> Any:
        return torch.tanh(x.view(x.shape[0], -1, 2)).sum(-1)

    gen = torch.Generator().manual_seed(6)
    _check_sizes(fn, lambda b, s: [torch.randn(b, 2 * s, generator=gen)], [(2, 3), (3, 5), (4, 2)])
    _compiled_once(builds)
    # the sizes the backward needs (s1//2, 2) are computed from x's, not read off an output view
    assert len(builds[0].program.outputs) == 2, [v.name for v in builds[0].program.outputs]


def test_a_division_torch_does_not_guarantee_for_one_symbol_falls_back(builds: list[CompiledGraph]) -> None:
    """`reshape(-1, 2)` of `[s0, s1]` makes `(s0*s1)//2`: torch knows the product is even, not
    which factor is; the ops on it run eagerly, reported with the dim."""
    def fn(x: Any) -> Any:
        return torch.tanh(x.reshape(-1, 2)).sum(-1) + 1

    gen = torch.Generator().manual_seed(7)
    _check_sizes(fn, lambda b, s: [torch.randn(b, 2 * s, generator=gen)], [(2, 3), (3, 5)])
    reason = ct.reports()[0].reasons["aten.tanh.default"]
    assert reason.startswith("symbolic dim ((s") and "has no cinn-py dim form" in reason, reason
    assert "only where torch guarantees one symbol divisible" in reason


def test_automatic_dynamic_shapes_compile_the_second_graph_once(builds: list[CompiledGraph]) -> None:
    """Without `dynamic=`, Dynamo compiles the first shape statically, and after a call with
    another batch size a graph with a symbolic batch, which serves every later size."""
    def fn(x: Any) -> Any:
        return torch.nn.functional.gelu(x @ x.T).sum(0)

    gen = torch.Generator().manual_seed(8)
    _check_sizes(fn, lambda b, _: [torch.randn(b, 4, generator=gen)], [(2, 0), (3, 0), (5, 0), (6, 0)],
                 dynamic=None)
    assert [r.name.split()[0] for r in ct.reports()] == ["forward", "backward"] * 2
    assert len(builds) == 4 and all(not r.fallback for r in ct.reports())
    assert [len(r.symbols) for r in ct.reports()] == [0, 0, 1, 1]  # static, then the batch symbolic


# -- call-time checks of a compiled symbolic graph -----------------------------------------------------------
def _traced(fn: Callable[..., Any], *examples: Any) -> CompiledGraph:
    from torch.fx.experimental.proxy_tensor import make_fx

    gm = make_fx(fn, tracing_mode="symbolic")(*examples)
    specs = [input_spec(n.meta["val"]) for n in gm.graph.nodes if n.op == "placeholder"]
    return CompiledGraph.build(gm, specs, "g")


def test_a_product_of_dims_is_checked_at_each_call() -> None:
    """`y` has `s0*s1` rows (torch's replacement after the add): it enters split into [s0, s1],
    and a call whose `y` has another row count is an error naming the dim and the symbols."""
    def fn(x: Any, y: Any) -> Any:
        return torch.tanh(x.reshape(-1, 4)) + y

    g = _traced(fn, torch.randn(2, 3, 4), torch.randn(6, 4))
    x_in, y_in = ([str(d) for d in v.shape] for v in g.program.inputs)
    assert y_in == x_in and x_in[2] == "4"  # y: [s0*s1, 4] viewed as [s0, s1, 4]
    x, y = torch.randn(3, 5, 4), torch.randn(15, 4)
    torch.testing.assert_close(g(x, y), fn(x, y))
    with pytest.raises(SymbolicShapeError, match=r"input 'y_1' dim 0 is 14, but the graph was traced with it "
                                                  r"equal to s\d+\*s\d+ = 15 with s\d+=3 \(from input 'x_1' "
                                                  r"dim 0\)"):
        g(x, torch.randn(14, 4))


def test_dims_torch_proved_equal_must_stay_equal() -> None:
    def fn(x: Any, y: Any) -> Any:
        return torch.tanh(x) * y

    g = _traced(fn, torch.randn(2, 3), torch.randn(2, 3))
    assert len({str(d) for v in g.program.inputs for d in v.shape}) == 2  # y's dims are x's symbols
    x = torch.randn(4, 5)
    torch.testing.assert_close(g(x, x), fn(x, x))
    with pytest.raises(SymbolicShapeError, match=r"input 'y_1' dim 1 is 6, but symbolic dim 's\d+' is 5 from "
                                                  r"input 'x_1' dim 1; the graph was traced with them equal"):
        g(x, torch.randn(4, 6))


def test_a_size_a_view_divides_must_be_a_multiple() -> None:
    """`view(-1, 2)` of `[s0]`: the Program takes `[s0_div2, 2]`, and an odd size is refused
    (through torch.compile, torch's divisibility guard refuses it first)."""
    g = _traced(lambda x: torch.tanh(x.view(-1, 2)), torch.randn(6))
    assert [str(d) for d in g.program.inputs[0].shape][1] == "2"
    x = torch.randn(10)
    torch.testing.assert_close(g(x), torch.tanh(x.view(-1, 2)))
    with pytest.raises(SymbolicShapeError,
                       match=r"input 'x_1' dim 0 is 7, but the graph was traced with it equal "
                                                  r"to 2\*s\d+_div2, a multiple of 2 \(a view divides it by "
                                                  r"2\)"):
        g(torch.randn(7))


def test_a_size_torch_specialises_is_refused_by_the_symbolic_graph() -> None:
    g = _traced(lambda x: torch.exp(x).sum(-1), torch.randn(3, 4))
    with pytest.raises(SymbolicShapeError,
                       match=r"input 'x_1' dim 0 is 1, below the lower bound 2 of symbolic "
                                                  r"dim 's\d+' \(torch specialises sizes 0 and 1"):
        g(torch.randn(1, 4))


def test_static_graphs_are_unchanged() -> None:
    from torch.fx.experimental.proxy_tensor import make_fx

    gm = make_fx(torch.tanh)(torch.randn(2, 3))
    compiled = CompiledGraph.build(gm, [graph_module.TensorSpec("float32", (2, 3), "cpu")], "g")
    assert compiled.plan.is_static and [v.shape for v in compiled.program.inputs] == [(2, 3)]
    x = torch.randn(2, 3)
    torch.testing.assert_close(compiled(x), torch.tanh(x))


def test_cnn_with_dynamic_batch_compiles_once(builds: list[CompiledGraph]) -> None:
    """conv2d/pool2d and their backward ops take a symbolic batch (the spatial dims stay static):
    one compile serves every batch size; the gradients of x and of the weights match eager."""
    gen = torch.Generator().manual_seed(6)
    w1, b1, w2 = torch.randn(6, 3, 3, 3, generator=gen), torch.randn(6,
                                                                     generator=gen), torch.randn(4, 3, 3, 3,
                                                                                                    generator=gen)
    F = torch.nn.functional

    def cnn(x: Any, w1: Any, b1: Any, w2: Any) -> Any:
        h = F.max_pool2d(torch.relu(F.conv2d(x, w1, b1, padding=1)), 2)
        return F.avg_pool2d(F.conv2d(h, w2, stride=2, groups=2), 2, ceil_mode=True)

    _check_sizes(cnn, lambda b, _: [torch.randn(b, 3, 10, 10, generator=gen), w1, b1, w2],
                 [(2, 0), (3, 0), (5, 0)],
                 dynamic_dims=(0,), dynamic=None)
    _compiled_once(builds)
