"""Converters real models hit (batch/group norm, activations, attention, losses, dropout, adaptive
pooling, statistics, autocast), each through `torch.compile(backend="cinn_py")` in strict mode
against eager: outputs, the gradients of every input and parameter, and that no compute op fell
back."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import cinn_py.torch as ct  # noqa: E402
from cinn_py.torch.backend import cinn_py_backend  # noqa: E402

STRICT = {"strict": True}


def _gen(seed: int) -> Any:
    return torch.Generator().manual_seed(seed)


def _no_fallback() -> None:
    assert ct.reports(), "nothing was compiled"
    bad = [r for r in ct.reports() if r.fallback or r.errors]
    assert not bad, "\n".join(map(str, bad))


def check(fn: Callable[..., Any], inputs: Sequence[Any], params: Sequence[Any] = (), rtol: float = 1e-4,
          atol: float = 1e-5, grad: bool = True) -> None:
    """`fn(*inputs)` compiled (strict) vs eager; with `grad` the gradients of the float inputs and
    of `params` (tensors `fn` closes over, compared after a backward of each run)."""
    torch._dynamo.reset()
    ct.reset_reports()
    mine = [t.detach().clone().requires_grad_(grad and t.is_floating_point()) for t in inputs]
    ref = [t.detach().clone().requires_grad_(grad and t.is_floating_point()) for t in inputs]
    out = torch.compile(fn, backend=cinn_py_backend, dynamic=False, options=STRICT)(*mine)
    outs = out if isinstance(out, tuple) else (out,)
    mine_param_grads = _backward(outs, params) if grad else []
    expected = fn(*ref)
    exp = expected if isinstance(expected, tuple) else (expected,)
    for k, (a, b) in enumerate(zip(outs, exp)):
        torch.testing.assert_close(a, b, rtol=rtol, atol=atol, msg=lambda m, k=k: f"output {k}: {m}")
    if not grad:
        _no_fallback()
        return
    ref_param_grads = _backward(exp, params)
    for k, (a, b) in enumerate(zip(mine, ref)):
        if b.grad is not None:
            torch.testing.assert_close(a.grad, b.grad, rtol=rtol, atol=atol,
                                       msg=lambda m, k=k: f"input {k}: {m}")
    for k, (a, b) in enumerate(zip(mine_param_grads, ref_param_grads)):
        torch.testing.assert_close(a, b, rtol=rtol, atol=atol, msg=lambda m, k=k: f"param {k}: {m}")
    _no_fallback()


def _backward(outs: Sequence[Any], params: Sequence[Any]) -> list[Any]:
    """Backward of sum(out * cotangent) over the float outputs; the params' grads, then cleared."""
    loss = sum((o.float() * torch.randn(o.shape, generator=_gen(7 + k)).to(o.dtype).float()).sum()
               for k, o in enumerate(outs) if o.is_floating_point() and o.requires_grad)
    assert isinstance(loss, torch.Tensor)
    loss.backward()
    grads = [p.grad.clone() for p in params]
    for p in params:
        p.grad = None
    return grads


def check_module(model: Any, ref: Any, *inputs: Any, rtol: float = 1e-4, atol: float = 1e-5) -> None:
    """`model` compiled (strict) vs its copy `ref` in eager: output and every parameter's gradient."""
    torch._dynamo.reset()
    ct.reset_reports()
    out = torch.compile(model, backend=cinn_py_backend, dynamic=False, options=STRICT)(*inputs)
    expected = ref(*inputs)
    torch.testing.assert_close(out, expected, rtol=rtol, atol=atol)
    cot = torch.randn(expected.shape, generator=_gen(5))
    (out * cot).sum().backward()
    (expected * cot).sum().backward()
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=rtol, atol=atol, msg=lambda m, n=name: f"{n}: {m}")
    _no_fallback()


# ---------------------------------------------------------------------------------------------------------
# batch norm
# ---------------------------------------------------------------------------------------------------------
def _conv_bn(channels_last: bool) -> tuple[Any, Any, Any]:
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(3, 4, 3, padding=1, bias=False)
    bn = torch.nn.BatchNorm2d(4)
    with torch.no_grad():
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.uniform_(-0.5, 0.5)
        bn.running_mean.uniform_(-0.2, 0.2)
        bn.running_var.uniform_(0.5, 2.0)
    x = torch.randn(2, 3, 6, 6, generator=_gen(1))
    if channels_last:
        x = x.to(memory_format=torch.channels_last)
    return conv, bn, x


@pytest.mark.parametrize("channels_last", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_batch_norm_training_matches_eager_with_running_stats(channels_last: bool) -> None:
    conv, bn, x = _conv_bn(channels_last)
    bn.train()
    ref = torch.nn.Sequential(copy.deepcopy(conv), copy.deepcopy(bn))
    model = torch.nn.Sequential(conv, bn)
    check_module(model, ref, x)
    torch.testing.assert_close(bn.running_mean, ref[1].running_mean, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(bn.running_var, ref[1].running_var, rtol=1e-5, atol=1e-6)
    assert int(bn.num_batches_tracked) == 1


def test_batch_norm_inference_is_a_conv_epilogue() -> None:
    conv, bn, x = _conv_bn(False)
    bn.eval()
    with torch.no_grad():
        check(lambda t: bn(conv(t)), [x], grad=False)
    # batch norm is one per-channel scale + shift group after the conv (the conv's epilogue once the
    # conv tactic takes epilogues: then one kernel), not a chain of kernels over the statistics
    report = ct.reports()[-1]
    assert report.kernels <= 2, f"batch norm at inference should be at most one kernel: {report}"


@pytest.mark.slow
def test_batch_norm_eval_backward_and_no_affine() -> None:
    """Eval-mode batch norm in a training graph (frozen statistics) and affine=False."""
    conv, bn, x = _conv_bn(False)
    bn.eval()
    plain = torch.nn.BatchNorm2d(4, affine=False)
    check(lambda t: plain(bn(conv(t))), [x], [conv.weight, bn.weight, bn.bias])


def test_group_norm_matches_eager() -> None:
    torch.manual_seed(0)
    gn = torch.nn.GroupNorm(2, 6)
    with torch.no_grad():
        gn.weight.uniform_(0.5, 1.5)
        gn.bias.uniform_(-0.5, 0.5)
    check(lambda t: gn(t), [torch.randn(2, 6, 3, 4, generator=_gen(2))], [gn.weight, gn.bias])


# ---------------------------------------------------------------------------------------------------------
# activations
# ---------------------------------------------------------------------------------------------------------
_F = torch.nn.functional


def test_activations_and_their_backward_match_eager() -> None:
    x = torch.linspace(-5, 5, 48).reshape(4, 12)  # both sides of every kink
    x = x + 0.013 * torch.randn(4, 12, generator=_gen(3))  # off the kinks themselves

    def fn(t: Any) -> Any:
        return (_F.hardtanh(t, -2.0, 2.0) + _F.relu6(t) + _F.hardswish(t) + _F.hardsigmoid(t) + _F.silu(t)
                + _F.mish(t) + _F.elu(t, 0.7) + _F.selu(t) + _F.leaky_relu(t, 0.1) + _F.softplus(t, 2.0, 5.0)
                + _F.celu(t))

    check(fn, [x])


# ---------------------------------------------------------------------------------------------------------
# attention
# ---------------------------------------------------------------------------------------------------------
def _qkv(kv_heads: int = 2, length: int = 5, keys: int = 5) -> list[Any]:
    g = _gen(11)
    return [torch.randn(2, 2, length, 8, generator=g), torch.randn(2, kv_heads, keys, 8, generator=g),
            torch.randn(2, kv_heads, keys, 8, generator=g)]


@pytest.mark.parametrize("kind", ["causal", "bool_mask", "gqa"] + [pytest.param(k, marks=pytest.mark.slow)
                                                          for k in ("plain", "float_mask", "scale")])
def test_sdpa_forward_and_backward_match_eager(kind: str) -> None:
    sdpa = _F.scaled_dot_product_attention
    float_mask = torch.randn(5, 5, generator=_gen(12))
    bool_mask = torch.rand(2, 1, 5, 5, generator=_gen(13)) > 0.3
    bool_mask[..., 0] = True  # no fully masked row (eager's math path gives NaN there)
    fns = {"plain": lambda q, k, v: sdpa(q, k, v),
           "causal": lambda q, k, v: sdpa(q, k, v, is_causal=True),
           "float_mask": lambda q, k, v: sdpa(q, k, v, attn_mask=float_mask),
           "bool_mask": lambda q, k, v: sdpa(q, k, v, attn_mask=bool_mask),
           "scale": lambda q, k, v: sdpa(q, k, v, scale=0.3, is_causal=True),
           "gqa": lambda q, k, v: sdpa(q, k, v, enable_gqa=True)}
    check(fns[kind], _qkv(kv_heads=1 if kind == "gqa" else 2))


def test_safe_softmax_fully_masked_rows_are_zero() -> None:
    """The math path (a bool mask with a fully masked row) goes through _safe_softmax."""
    mask = torch.ones(2, 1, 5, 5, dtype=torch.bool)
    mask[0, 0, 2] = False
    check(lambda q, k, v: _F.scaled_dot_product_attention(q, k, v, attn_mask=mask), _qkv())


# ---------------------------------------------------------------------------------------------------------
# losses
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("reduction", ["mean", pytest.param("sum", marks=pytest.mark.slow), "none"])
def test_cross_entropy_with_weight_and_ignore_index(reduction: str) -> None:
    target = torch.tensor([1, 4, -100, 0, 2, 4])
    weight = torch.rand(5, generator=_gen(21)) + 0.5
    check(lambda x: _F.cross_entropy(x, target, weight=weight, ignore_index=-100, reduction=reduction),
          [torch.randn(6, 5, generator=_gen(22))])


def test_nll_loss_2d_and_single_sample() -> None:
    target = torch.randint(0, 4, (2, 3, 3), generator=_gen(23))
    target[0, 1, 1] = 2  # ignored below

    def fn(x: Any, y: Any) -> Any:
        return (_F.nll_loss(_F.log_softmax(x, 1), target, ignore_index=2)
                + _F.cross_entropy(y, torch.tensor(3), reduction="sum"))

    check(fn, [torch.randn(2, 4, 3, 3, generator=_gen(24)), torch.randn(5, generator=_gen(25))])


# ---------------------------------------------------------------------------------------------------------
# dropout
# ---------------------------------------------------------------------------------------------------------
def test_seeded_dropout_kernel_draws_the_ops_own_mask() -> None:
    """The compiled mask equals `cinn_py::seeded_dropout`'s torch implementation bit for bit (what
    eager fallback runs), gradient included."""
    seed = torch.tensor([123_456_789, 42])
    check(lambda x: torch.ops.cinn_py.seeded_dropout(x, 0.3, seed), [torch.randn(4, 33, generator=_gen(31))])


def test_dropout_in_training_draws_a_new_mask_per_call_from_torchs_seed() -> None:
    torch._dynamo.reset()
    ct.reset_reports()
    x = torch.ones(64, 64, requires_grad=True)
    fn = torch.compile(lambda t: _F.dropout(t, 0.25, training=True) * 2, backend=cinn_py_backend,
                       dynamic=False,
                       options=STRICT)
    torch.manual_seed(5)
    first = fn(x)
    second = fn(x)
    torch.manual_seed(5)
    again = fn(x)
    assert torch.equal(first, again), "torch.manual_seed must reproduce the mask"
    assert not torch.equal(first, second), "each call draws a new mask"
    kept = first != 0
    assert abs(kept.float().mean().item() - 0.75) < 0.03
    torch.testing.assert_close(first[kept], torch.full_like(first[kept], 2 / 0.75))
    first.sum().backward()
    assert x.grad is not None
    torch.testing.assert_close(x.grad, kept.float() * 2 / 0.75)
    _no_fallback()


# ---------------------------------------------------------------------------------------------------------
# adaptive pooling
# ---------------------------------------------------------------------------------------------------------
def test_adaptive_pooling_matches_eager() -> None:
    """Global, dividing (a pool2d) and overlapping (the window matrices) adaptive average pools;
    a dividing adaptive max pool."""
    def fn(x: Any) -> Any:
        return (_F.adaptive_avg_pool2d(x, 1).sum() + _F.adaptive_avg_pool2d(x, (3, 2)).sum() * 0.5
                + _F.adaptive_avg_pool2d(x, (4, 5)).square().sum()
                + _F.adaptive_max_pool2d(x, (3, 2)).square().sum())

    check(fn, [torch.randn(2, 3, 6, 4, generator=_gen(41))])


# ---------------------------------------------------------------------------------------------------------
# autocast
# ---------------------------------------------------------------------------------------------------------
class _BertBlock(torch.nn.Module):
    """A BERT-like block: embeddings, layer norm, fused qkv, SDPA with a padding mask, GELU MLP,
    dropout, and a cross-entropy head."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(17, 16)
        self.ln1, self.ln2 = torch.nn.LayerNorm(16), torch.nn.LayerNorm(16)
        self.qkv, self.proj = torch.nn.Linear(16, 48), torch.nn.Linear(16, 16)
        self.up, self.down = torch.nn.Linear(16, 32), torch.nn.Linear(32, 16)
        self.head = torch.nn.Linear(16, 17)

    def forward(self, ids: Any, keep: Any) -> Any:
        x = self.ln1(self.emb(ids))
        q, k, v = (t.unflatten(-1, (2, 8)).transpose(1, 2) for t in self.qkv(x).split(16, -1))
        a = _F.scaled_dot_product_attention(q, k, v, attn_mask=keep[:, None, None, :])
        x = self.ln2(x + _F.dropout(self.proj(a.transpose(1, 2).flatten(2)), 0.0, self.training))
        x = x + self.down(_F.gelu(self.up(x)))
        return _F.cross_entropy(self.head(x).flatten(0, 1), ids.flatten())


def test_bert_block_under_bf16_autocast_converts_fully_and_matches_eager() -> None:
    torch.manual_seed(0)
    model = _BertBlock()
    ref = copy.deepcopy(model)
    ids = torch.randint(0, 17, (2, 6), generator=_gen(51))
    keep = torch.ones(2, 6, dtype=torch.bool)
    keep[1, 4:] = False
    torch._dynamo.reset()
    ct.reset_reports()
    compiled = torch.compile(model, backend=cinn_py_backend, dynamic=False, options=STRICT)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = compiled(ids, keep)
        expected = ref(ids, keep)
    torch.testing.assert_close(loss, expected, rtol=2e-2, atol=2e-2)
    loss.backward()
    expected.backward()
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        scale = q.grad.abs().max().item()
        torch.testing.assert_close(p.grad, q.grad, rtol=5e-2, atol=5e-2 * scale,
                                   msg=lambda m, n=name: f"{n}: {m}")
    _no_fallback()
    assert sum(sum(r.compiled.values()) for r in ct.reports()) > 40


# ---------------------------------------------------------------------------------------------------------
# statistics, reductions with dtype=, embedding scaled by frequency
# ---------------------------------------------------------------------------------------------------------
def test_statistics_and_reductions_with_dtype_match_eager() -> None:
    ids = torch.tensor([[0, 1, 1], [2, 3, 1], [0, 0, 1], [3, 2, 1]])

    def fn(x: Any, table: Any) -> Any:
        v, m = torch.var_mean(x, 1, keepdim=True)
        return (v + m + x.var(0, correction=0) + torch.cumsum(x, 1, dtype=torch.float64).float()
                + torch.logsumexp(x, 1, keepdim=True) + x.sum(1, dtype=torch.float64, keepdim=True).float()
                + _F.embedding(ids, table, scale_grad_by_freq=True).sum((1, 2))[:, None])

    check(fn, [torch.randn(4, 6, generator=_gen(61)), torch.randn(5, 3, generator=_gen(62))])
    check(lambda x: x.std(1) + x.std(), [torch.randn(4, 6, generator=_gen(63))], grad=False)


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_encoder_layer_fast_path_matches_eager(norm_first: bool) -> None:
    """nn.TransformerEncoderLayer in eval mode under no_grad runs aten._transformer_encoder_layer_fwd."""
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(16, 2, 32, activation="gelu", batch_first=True,
                                             norm_first=norm_first).eval()
    with torch.no_grad():
        check(lambda x: layer(x), [torch.randn(2, 5, 16, generator=_gen(71))], grad=False)
    assert "aten._transformer_encoder_layer_fwd.default" in ct.reports()[-1].compiled
