"""A Hugging Face Llama (random init, 2 layers) trains one step under `torch.compile(backend="cinn_py")`
with eager's loss and gradients. Its attention (SDPA, the default) passes transposed views between
compiled partitions and eager ops: with row-major partition outputs, a `view` in the forward raised
"view size is not compatible with input tensor's size and stride" (cinn_py/torch/layout.py)."""

from __future__ import annotations

import copy

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import cinn_py.torch as ct  # noqa: E402


@pytest.mark.slow
def test_llama_training_step_matches_eager() -> None:
    config = transformers.LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128,
                                      num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2,
                                      max_position_embeddings=64,
                                      use_cache=False)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config)
    reference = copy.deepcopy(model)
    ids = torch.randint(0, 128, (2, 16), generator=torch.Generator().manual_seed(1))
    torch._dynamo.reset()
    ct.reset_reports()
    compiled = torch.compile(model, backend="cinn_py", options={"strict": True})
    loss = compiled(input_ids=ids, labels=ids).loss
    loss.backward()
    want = reference(input_ids=ids, labels=ids).loss
    want.backward()
    torch.testing.assert_close(loss, want, rtol=1e-3, atol=1e-4)
    for (name, p), (_, q) in zip(model.named_parameters(), reference.named_parameters(), strict=True):
        assert p.grad is not None, name
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-3, atol=1e-4,
                                   msg=lambda m, name=name: f"{name}: {m}")
    compiled_ops = {r.name.split()[0]: sum(r.compiled.values()) for r in ct.reports()}
    # the model runs in cinn-py kernels
    assert compiled_ops["forward"] > 100 and compiled_ops["backward"] > 150
