"""`torch.compile(backend="cinn_py")`: the BERT-style layer's forward and gradients vs eager,
ops without a converter left to eager and reported, and the backend's
registration through the `torch_dynamo_backends` entry point of pyproject.toml."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import sys
import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import cinn_py.torch as ct  # noqa: E402
from cinn_py.torch.backend import cinn_py_backend  # noqa: E402
from cinn_py.torch.converters import CONVERTERS  # noqa: E402
from cinn_py.frontend.ops.base import SUPPORTED_DTYPES  # noqa: E402
from cinn_py.ir import bfloat16  # noqa: E402
from cinn_py.torch.graph import CompiledGraph, ConversionError, TensorSpec  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
STRICT = {"strict": True}  # a partition that fails to compile fails the test instead of running eagerly


def _example() -> Any:
    spec = importlib.util.spec_from_file_location("train_bert_layer",
                                                  ROOT / "examples" / "train_bert_layer.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # Dynamo imports the module of the functions it traces
    spec.loader.exec_module(module)
    return module


def _compare(fn: Any, inputs: list[Any], options: dict[str, Any] | None = None, rtol: float = 1e-4,
             atol: float = 1e-5) -> None:
    """`fn` compiled by the backend vs eager: outputs and the gradients of every input."""
    torch._dynamo.reset()
    mine = [t.detach().clone().requires_grad_(t.is_floating_point()) for t in inputs]
    ref = [t.detach().clone().requires_grad_(t.is_floating_point()) for t in inputs]
    out = torch.compile(fn, backend=cinn_py_backend, dynamic=False, options=options or STRICT)(*mine)
    expected = fn(*ref)
    torch.testing.assert_close(out, expected, rtol=rtol, atol=atol)
    cot = torch.randn(expected.shape, generator=torch.Generator().manual_seed(7))
    (out * cot).sum().backward()
    (expected * cot).sum().backward()
    for k, (a, b) in enumerate(zip(mine, ref)):
        if b.grad is not None:
            torch.testing.assert_close(a.grad, b.grad, rtol=rtol, atol=atol,
                                       msg=lambda m, k=k: f"input {k}: {m}")


def test_bert_layer_forward_and_grads_match_eager() -> None:
    example = _example()
    params = example.init_params()
    x = torch.randn(example.B, example.S, example.H, generator=torch.Generator().manual_seed(1))
    names = list(params)
    ct.reset_reports()
    _compare(lambda x, *p: example.eager_layer(x, dict(zip(names, p))), [x, *params.values()])
    forward, backward = ct.reports()
    assert (forward.name, backward.name) == (forward.name, backward.name.replace("forward", "backward"))
    for report in (forward, backward):
        assert not report.fallback and not report.errors, str(report)
        assert report.partitions == 1 and report.kernels > 1
    assert forward.compiled["aten.native_layer_norm.default"] == 2
    assert forward.compiled["aten._softmax.default"] == 1 and forward.compiled["aten.gelu.default"] == 1
    assert backward.compiled["aten.native_layer_norm_backward.default"] == 2
    assert backward.compiled["aten._softmax_backward_data.default"] == 1
    assert backward.compiled["aten.gelu_backward.default"] == 1


def test_bert_layer_bfloat16_as_close_to_float32_as_eager() -> None:
    """bfloat16 inputs and weights: the backend's output and gradients are as close to the float32
    results as eager PyTorch's bfloat16 ones (both round every op's result to bfloat16; cinn-py's
    reductions accumulate in float32)."""
    if "bfloat16" not in {d.scalar_name() for d in SUPPORTED_DTYPES}:
        pytest.skip("NetBuilder takes no bfloat16 inputs yet")
    example = _example()
    params = example.init_params()
    x = torch.randn(example.B, example.S, example.H, generator=torch.Generator().manual_seed(1))
    names = list(params)
    cot = torch.randn(x.shape, generator=torch.Generator().manual_seed(2))

    def layer(x: Any, *p: Any) -> Any:
        return example.eager_layer(x, dict(zip(names, p)))

    def run(fn: Any, dtype: Any) -> tuple[Any, list[Any]]:
        inputs = [t.detach().to(dtype).requires_grad_() for t in (x, *params.values())]
        out = fn(*inputs)
        (out.float() * cot).sum().backward()  # (a sum of squares of a layer_norm output is constant)
        return out.float(), [t.grad.float() for t in inputs]

    ct.reset_reports()
    torch._dynamo.reset()
    ref_out, ref_grads = run(layer, torch.float32)
    eager_out, eager_grads = run(layer, torch.bfloat16)
    mine_out, mine_grads = run(torch.compile(layer, backend=cinn_py_backend, dynamic=False, options=STRICT),
                               torch.bfloat16)
    assert all(not r.fallback for r in ct.reports()), "\n".join(map(str, ct.reports()))
    for k, (mine, eager, ref) in enumerate(zip([mine_out, *mine_grads], [eager_out, *eager_grads],
                                               [ref_out, *ref_grads])):
        scale = ref.abs().max().item() + 1e-6
        mine_err = (mine - ref).abs().max().item() / scale
        eager_err = (eager - ref).abs().max().item() / scale
        assert mine_err <= 2 * eager_err + 0.01, (f"value {k}: cinn-py error {mine_err:.4f}, "
                                                  f"eager {eager_err:.4f}")


class _Mlp(torch.nn.Module):
    """addmm (nn.Linear), tanh-gelu, relu (threshold_backward), sigmoid, where, log_softmax, mean, amax,
    cat, slice, cumsum, flip."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 12)
        self.fc2 = torch.nn.Linear(12, 6)

    def forward(self, x: Any) -> Any:
        h = torch.nn.functional.gelu(self.fc1(x), approximate="tanh")
        r = torch.relu(h) - torch.sigmoid(h) / 2
        g = torch.where(h > 0.1, r, h * h)
        y = self.fc2(g)
        z = torch.cat([torch.log_softmax(y, -1), y.mean(-1, keepdim=True) - y.amax(-1, keepdim=True)], -1)
        return torch.tanh(torch.cumsum(z[:, 1:], 1).flip(0))


def test_linear_activation_ops_match_eager() -> None:
    torch.manual_seed(0)
    model = _Mlp()
    x = torch.randn(5, 8)
    ref = _Mlp()
    ref.load_state_dict(model.state_dict())
    _compiled_matches_eager(model, ref, x)


def _compiled_matches_eager(model: Any, ref: Any, x: Any) -> None:
    """`model` through the backend (strict: nothing may fall back) vs its copy `ref` in eager:
    output and every parameter's gradient of the squared-sum loss."""
    torch._dynamo.reset()
    ct.reset_reports()
    out = torch.compile(model, backend=cinn_py_backend, dynamic=False, options=STRICT)(x)
    expected = ref(x)
    torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-5)
    out.square().sum().backward()
    expected.square().sum().backward()
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5, msg=lambda m, n=name: f"{n}: {m}")
    assert all(not r.fallback for r in ct.reports()), "\n".join(map(str, ct.reports()))


class _Attention(torch.nn.Module):
    """embedding (padding_idx) and its dense backward, a fused qkv Linear split in three, the
    CLS row (select) and its backward, clamp/clamp_min, zeros_like, and the logical_and of clamp's
    backward."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(11, 8, padding_idx=0)
        self.qkv = torch.nn.Linear(8, 24)

    def forward(self, ids: Any) -> Any:
        q, k, v = self.qkv(self.emb(ids)).split(8, dim=-1)
        a = torch.softmax(q @ k.transpose(-1, -2), -1) @ v
        cls = a[:, 0]
        return torch.clamp(cls, -0.5, 0.5) + torch.zeros_like(cls) + a.select(1, 2).clamp_min(0)


def test_embedding_split_select_clamp_match_eager() -> None:
    torch.manual_seed(0)
    model, ref = _Attention(), _Attention()
    ref.load_state_dict(model.state_dict())
    ids = torch.randint(0, 11, (3, 5), generator=torch.Generator().manual_seed(2))
    ids[0, 1] = 0  # a padding row: no gradient
    _compiled_matches_eager(model, ref, ids)
    assert ct.reports()[1].compiled["aten.embedding_dense_backward.default"] == 1


class _Cnn(torch.nn.Module):
    """convolution (bias, stride, groups, depthwise with dilation) and convolution_backward,
    max_pool2d_with_indices (ceil_mode) and its backward, avg_pool2d (count_include_pad=False) and
    its backward, relu, flatten, addmm."""

    def __init__(self) -> None:
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.c2 = torch.nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=2, bias=False)
        self.c3 = torch.nn.Conv2d(8, 16, 3, padding=2, dilation=2, groups=8)
        self.fc = torch.nn.Linear(16 * 2 * 2, 5)

    def forward(self, x: Any) -> Any:
        h = torch.nn.functional.max_pool2d(torch.relu(self.c1(x)), 3, 2, ceil_mode=True)
        h = torch.relu(self.c3(torch.relu(self.c2(h))))
        h = torch.nn.functional.avg_pool2d(h, 3, 2, padding=1, count_include_pad=False)
        return self.fc(h.flatten(1))


def test_cnn_forward_and_backward_compile_without_fallback() -> None:
    torch.manual_seed(0)
    model, ref = _Cnn(), _Cnn()
    ref.load_state_dict(model.state_dict())
    _compiled_matches_eager(model, ref, torch.randn(2, 3, 16, 16, generator=torch.Generator().manual_seed(4)))
    forward, backward = ct.reports()
    assert forward.compiled["aten.convolution.default"] == 3
    assert forward.compiled["aten.max_pool2d_with_indices.default"] == 1
    assert forward.compiled["aten.avg_pool2d.default"] == 1
    assert backward.compiled["aten.convolution_backward.default"] == 3
    assert backward.compiled["aten.max_pool2d_with_indices_backward.default"] == 1
    assert backward.compiled["aten.avg_pool2d_backward.default"] == 1


def test_pooling_torch_computes_otherwise_runs_eagerly_with_its_reason() -> None:
    """PyTorch drops a ceil_mode window that starts in the padding (5 -> 3 rows, pool2d gives 4)
    and divides an inclusive average's overhanging window by its clipped size: both stay eager."""
    def fn(x: Any) -> Any:
        a = torch.nn.functional.max_pool2d(x, 2, 2, padding=1, ceil_mode=True)
        b = torch.nn.functional.avg_pool2d(x, 2, 2, ceil_mode=True)
        return a[..., :3, :3] + b[..., :3, :3]

    ct.reset_reports()
    _compare(fn, [torch.randn(1, 2, 5, 5, generator=torch.Generator().manual_seed(5))])
    forward = ct.reports()[0]
    assert "starting in the padding" in forward.reasons["aten.max_pool2d_with_indices.default"]
    assert "divisor differs" in forward.reasons["aten.avg_pool2d.default"]


class _EmbedGather(torch.nn.Module):
    """embedding (padding_idx), torch.gather of per-token channels (duplicates), index_select of
    table rows, x[i] / x[i, j] / x[-1] indexing and a slice assignment: the forward's gathers and
    the backward's scatters (scatter_add, index_add, index_put with accumulate, slice_scatter,
    embedding_dense_backward)."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(13, 6, padding_idx=1)
        self.proj = torch.nn.Linear(6, 6)
        gen = torch.Generator().manual_seed(4)
        self.register_buffer("pick", torch.randint(0, 6, (3, 5, 4), generator=gen))
        self.register_buffer("rows", torch.tensor([12, 0, 12, 5]))
        self.register_buffer("tokens", torch.tensor([4, 0, -1, 4]))
        self.register_buffer("batch", torch.tensor([2, -3, 2]))

    def forward(self, ids: Any) -> Any:
        h = torch.tanh(self.proj(self.emb(ids)))                      # [3, 5, 6]
        g = torch.gather(h, 2, self.pick)                             # [3, 5, 4]
        y = g.clone()
        y[:, 1:4:2] = 0.5 * g[:, 1:4:2]                                # slice_scatter
        s = torch.index_select(self.emb.weight, 0, self.rows)        # [4, 6]
        picked = h[:, self.tokens].sum(-1) + h[self.batch, self.tokens[1:]].sum(-1, keepdim=True)  # [3, 4]
        return y.sum(-1)[:, :4] + s.sum(-1) + picked[:, :4] + h[-1].mean()


def test_embedding_gather_scatter_forward_and_backward_compile() -> None:
    torch.manual_seed(0)
    model, ref = _EmbedGather(), _EmbedGather()
    ref.load_state_dict(model.state_dict())
    ids = torch.randint(0, 13, (3, 5), generator=torch.Generator().manual_seed(5))
    ids[1, 2] = 1  # a padding row: no gradient
    _compiled_matches_eager(model, ref, ids)
    forward, backward = ct.reports()
    for op in ("aten.embedding.default", "aten.gather.default", "aten.index_select.default",
               "aten.index.Tensor",
               "aten.slice_scatter.default"):
        assert forward.compiled[op] >= 1, f"{op} not compiled in the forward:\n{forward}"
    for op in ("aten.embedding_dense_backward.default", "aten.scatter_add.default", "aten.index_add.default",
               "aten.index_put.default"):
        assert backward.compiled[op] >= 1, f"{op} not compiled in the backward:\n{backward}"


def test_index_assignment_and_narrow_gather_compile() -> None:
    """Slice and row assignment (slice_scatter, select_scatter, copy), an index_put without
    accumulation, and a gather whose index is narrower than x in every dim (x is cut; its backward
    scatter_add is zero-padded back), forward and backward with nothing falling back."""
    def fn(x: Any, a: Any, b: Any, v: Any) -> Any:
        y = x.clone()
        y[1:5:2, 0:6:3] = a
        y[2] = b
        z = torch.gather(x, 1, torch.tensor([[5, 0, 0, 2], [1, 1, 3, 4], [0, 5, 2, 2]]))
        w = x.index_put((torch.tensor([4, 0, 3]),), v)
        return (y * y).sum() + torch.tanh(z).sum() + (w * w).sum(0).mean()

    gen = torch.Generator().manual_seed(6)
    ct.reset_reports()
    _compare(fn, [torch.randn(5, 6, generator=gen), torch.randn(2, 2, generator=gen),
                  torch.randn(6, generator=gen),
                  torch.randn(3, 6, generator=gen)])
    forward, backward = ct.reports()
    assert not forward.fallback and not backward.fallback, f"{forward}\n{backward}"
    for op in ("aten.slice_scatter.default", "aten.select_scatter.default", "aten.copy.default",
               "aten.gather.default", "aten.index_put.default"):
        assert forward.compiled[op] >= 1, f"{op} not compiled in the forward:\n{forward}"
    assert backward.compiled["aten.scatter_add.default"] == 1


def test_unsupported_op_runs_eagerly_and_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(CONVERTERS, "aten.erfinv.default")  # an op without a converter
    torch._dynamo.reset()

    def fn(x: Any, w: Any) -> Any:
        return torch.exp(torch.erfinv(torch.tanh(x @ w) * 0.9)) * 0.5

    gen = torch.Generator().manual_seed(3)
    ct.reset_reports()
    _compare(fn, [torch.randn(4, 6, generator=gen) * 0.3, torch.randn(6, 5, generator=gen) * 0.3])
    forward = ct.reports()[0]
    assert forward.fallback == {"aten.erfinv.default": 1}
    assert forward.reasons["aten.erfinv.default"] == "no converter"
    assert forward.partitions == 2  # tanh(x @ w) before, exp(...) * 0.5 after
    assert forward.compiled["aten.mm.default"] == 1 and forward.compiled["aten.exp.default"] == 1
    assert "eager: aten.erfinv.default x1 (no converter)" in str(forward)
    assert ct.last_report() is ct.reports()[-1]


def test_call_a_converter_does_not_handle_runs_eagerly_with_its_reason() -> None:
    def fn(x: Any) -> Any:
        return torch.tanh(torch.nn.functional.max_pool2d(x, 2, dilation=2)[:, 1::2] * 2)

    ct.reset_reports()
    _compare(fn, [torch.randn(2, 4, 6, 6)])
    forward, backward = ct.reports()
    assert forward.compiled["aten.slice.Tensor"] == 1  # strided slices convert
    assert backward.compiled["aten.slice_backward.default"] == 1  # ... and their backward
    assert forward.fallback == {"aten.max_pool2d_with_indices.default": 1}
    assert backward.fallback == {"aten.max_pool2d_with_indices_backward.default": 1}
    assert backward.reasons == {"aten.max_pool2d_with_indices_backward.default": "max_pool2d with dilation"}


def test_unknown_option_is_an_error() -> None:
    torch._dynamo.reset()
    with pytest.raises(Exception, match=r"unknown options \['fast'\]"):
        torch.compile(torch.tanh, backend=cinn_py_backend, options={"fast": True})(torch.ones(2))


def test_scalar_loss_backward_and_inference_graph() -> None:
    def loss(x: Any, w: Any, t: Any) -> Any:
        return ((torch.tanh(x @ w) - t) ** 2).mean()

    gen = torch.Generator().manual_seed(5)
    x, w, t = (torch.randn(4, 5, generator=gen), torch.randn(5, 3, generator=gen),
               torch.randn(4, 3, generator=gen))
    ct.reset_reports()
    _compare(loss, [x, w, t])
    torch._dynamo.reset()
    with torch.no_grad():
        got = torch.compile(loss, backend=cinn_py_backend, dynamic=False, options=STRICT)(x, w, t)
    torch.testing.assert_close(got, loss(x, w, t))
    assert (got.shape == () and [r.name.split()[0] for r in ct.reports()]
            == ["forward", "backward", "inference"])
    assert all(not r.fallback for r in ct.reports())


def test_bfloat16_crosses_as_its_bit_pattern_without_copies() -> None:
    t = torch.randn(3, 4).to(torch.bfloat16)
    ml_dtypes = pytest.importorskip("ml_dtypes")
    values = ct.to_numpy(t)
    assert values.dtype == ml_dtypes.bfloat16 and values.ctypes.data == t.data_ptr()
    np.testing.assert_array_equal(values.astype(np.float32), t.float().numpy())
    for array in (values, values.view(np.uint16)):  # the frontend's values or the kernels' bits
        back = ct.to_torch(array, bfloat16)
        assert back.dtype == torch.bfloat16 and back.data_ptr() == t.data_ptr()
        torch.testing.assert_close(back, t, rtol=0, atol=0)


def test_cuda_tensors_without_a_gpu_are_a_clear_error() -> None:
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    gm = torch.fx.symbolic_trace(lambda x: torch.ops.aten.tanh.default(x))
    with pytest.raises(ConversionError, match="tensors are on CUDA but torch sees no CUDA device"):
        CompiledGraph.build(gm, [TensorSpec("float32", (2, 3), "cuda")], "g")


def _declared_entry_point() -> importlib.metadata.EntryPoint:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    value = project["entry-points"]["torch_dynamo_backends"]["cinn_py"]
    return importlib.metadata.EntryPoint(name="cinn_py", value=value, group="torch_dynamo_backends")


def test_entry_point_registers_the_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    """pyproject's entry point loads the backend, and Dynamo's discovery resolves `backend="cinn_py"`.

    Where the installed metadata predates the entry point (an editable install made before it
    was added), discovery is run against the declared entry point."""
    from torch._dynamo.backends import registry

    declared = _declared_entry_point()
    assert declared.load() is cinn_py_backend
    installed = importlib.metadata.entry_points(group="torch_dynamo_backends")
    if "cinn_py" not in installed.names:
        monkeypatch.setattr(importlib.metadata, "entry_points",
                            lambda group=None: importlib.metadata.EntryPoints([declared]))
        registry._discover_entrypoint_backends.cache_clear()
        registry._discover_entrypoint_backends()
    assert torch._dynamo.lookup_backend("cinn_py") is cinn_py_backend
    torch._dynamo.reset()
    ct.reset_reports()
    x = torch.randn(2, 3)
    torch.testing.assert_close(torch.compile(torch.sigmoid, backend="cinn_py", dynamic=False)(x),
                               torch.sigmoid(x))
    report = ct.last_report()
    assert report is not None and report.compiled == {"aten.sigmoid.default": 1}


@pytest.mark.parametrize("fast_math", [True, False])
def test_fast_math_option_reaches_the_kernels(fast_math: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """`fast_math` (default False, exact libm math as Inductor; True: the vectorised polynomials, as
    PyTorch's own CPU kernels) is what every kernel is built with, and gelu (erf) and softmax (exp)
    match eager either way."""
    built: list[CompiledGraph] = []
    original = CompiledGraph.build

    def spy(*args: Any, **kwargs: Any) -> CompiledGraph:
        built.append(original(*args, **kwargs))
        return built[-1]

    monkeypatch.setattr(CompiledGraph, "build", staticmethod(spy))
    gen = torch.Generator().manual_seed(11)
    x, w = torch.randn(8, 16, generator=gen) * 3, torch.randn(16, 16, generator=gen)
    options = {**STRICT, "fast_math": True} if fast_math else STRICT
    _compare(lambda x, w: torch.softmax(torch.nn.functional.gelu(x @ w), -1), [x, w], options)
    kernels = [k for graph in built for k in graph.compiled.kernels]
    assert len(built) == 2 and kernels
    assert {k.fast_math for k in kernels} == {fast_math}


def _graph(fn: Any, args: list[Any]) -> CompiledGraph:
    """`fn` traced to ATen (make_fx) and compiled as one partition."""
    from torch.fx.experimental.proxy_tensor import make_fx  # noqa: PLC0415

    gm = make_fx(fn)(*args)
    return CompiledGraph.build(gm, [TensorSpec.of(a) for a in args], "views", fast_math=True)


def test_views_at_the_outputs_are_torch_views_not_kernels() -> None:
    """A transpose (or any static view chain) at an output is applied by torch to the result, as
    eager returns it (strided, no copy): a view of a computed value is a view of that Program
    output, a view of an argument a view of the argument itself, and a value returned with a view
    of it is computed once."""
    gen = torch.Generator().manual_seed(3)
    x, w = torch.randn(6, 4, generator=gen), torch.randn(4, 5, generator=gen)

    def fn(x: Any, w: Any) -> Any:
        y = torch.ops.aten.mm.default(torch.ops.aten.tanh.default(x), w)
        return (y, torch.ops.aten.t.default(y), torch.ops.aten.t.default(w),
                torch.ops.aten.unsqueeze.default(torch.ops.aten.t.default(y), 0))

    graph = _graph(fn, [x, w])
    got = graph(x, w)
    want = fn(x, w)
    assert len(graph.program.outputs) == 1  # y only: every other output is a view
    for g, e in zip(got, want):
        torch.testing.assert_close(g, e)
        assert g.stride() == e.stride()
    assert got[1].data_ptr() == got[0].data_ptr() and got[2].data_ptr() == w.data_ptr()


def test_an_output_that_is_only_views_of_an_argument_still_runs() -> None:
    """A graph whose every output is a view of an argument computes them (it has no other work)."""
    x = torch.randn(3, 4)
    graph = _graph(lambda x: torch.ops.aten.t.default(x), [x])
    torch.testing.assert_close(graph(x), x.t())
    assert not graph.views


def test_input_layout_of_strided_views() -> None:
    from cinn_py.torch.layout import input_layout  # noqa: PLC0415

    x = torch.randn(2, 3, 4)
    assert input_layout(x) is None and input_layout(torch.randn(3, 1).t()) is None  # row-major: as it is
    assert input_layout(x.transpose(1, 2)).order == (0, 2, 1)  # type: ignore[union-attr]
    assert input_layout(x.permute(2, 0, 1)).order == (1, 2, 0)  # type: ignore[union-attr]
    expanded = input_layout(torch.randn(4).expand(3, 4))
    assert expanded is not None and expanded.broadcast == (0,) and expanded.block is None
    sliced = input_layout(x[:, :, 1:3])
    assert sliced is not None and sliced.block == (2, 3, 4) and sliced.starts == (0, 0, 1)


def test_transposed_argument_enters_as_its_memory_and_feeds_matmul_transposed() -> None:
    """An argument traced as a transposed view (the `t(x)` AOT autograd saves for a weight
    gradient) enters as the permuted, contiguous tensor (no copy) and `mm(t(x), dy)` reads it with
    transpose_x; a call whose argument has another layout gets the same values."""
    gen = torch.Generator().manual_seed(4)
    x, dy = torch.randn(6, 4, generator=gen), torch.randn(6, 5, generator=gen)
    xt = x.t()

    def fn(xt: Any, dy: Any) -> Any:
        return torch.ops.aten.mm.default(xt, torch.ops.aten.tanh.default(dy))

    graph = _graph(fn, [xt, dy])
    assert [tuple(v.shape) for v in graph.program.inputs] == [(6, 4), (6, 5)]
    matmuls = [op for op in graph.program.ops if op.type == "matmul"]
    assert (len(matmuls) == 1 and matmuls[0].attrs["transpose_x"] and matmuls[0].inputs[0]
            is graph.program.inputs[0])
    torch.testing.assert_close(graph(xt, dy), fn(xt, dy))
    torch.testing.assert_close(graph(xt.contiguous(), dy), fn(xt, dy))
