"""The architectures of the model zoo (`cinn_py.tools.zoo`): random-init models, no downloads.

Each entry builds, for a size (`tiny`, `small`, `base`), a `ZooNet`: the model wrapped with its
inputs and a scalar loss, so that one `torch.compile` of the wrapper traces the forward and the
loss as one graph (as a training loop compiles its model and loss together):

| name | architecture | inputs | loss |
|---|---|---|---|
| resnet | transformers ResNetModel, basic blocks (CNN) | images, NCHW | outputs x cotangents |
| mobilenet | transformers MobileNetV2Model (mobile CNN) | images, NCHW | outputs x cotangents |
| bert | transformers BertModel (encoder) | token ids | outputs x cotangents |
| gpt2 | transformers GPT2LMHeadModel (decoder) | token ids = labels | causal LM cross entropy |
| llama | LlamaForCausalLM (RMSNorm, RoPE, SwiGLU, GQA) | token ids = labels | causal LM cross entropy |
| transformer | torch.nn.TransformerEncoderLayer (plain layer) | embeddings [B, S, H] | outputs x cotangents |

"outputs x cotangents": the sum over the model's float outputs of (output * a fixed random tensor),
so that every output element gets its own gradient (a plain sum of a normalised output is
constant). Dropout probabilities are 0: eager and compiled runs then compute the same function.
transformers is imported only when a transformers model is built (it is in the `test` extra).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch  # pyright: ignore[reportMissingImports]

from cinn_py.tools.zoo_options import SIZES


@dataclass(frozen=True)
class Shape:
    """Per-size dimensions of one architecture: batch, sequence length (or image side), width,
    depth, and the architecture's own extra knobs."""

    batch: int
    seq: int
    hidden: int
    layers: int
    extra: tuple[tuple[str, Any], ...] = ()

    def get(self, key: str) -> Any:
        return dict(self.extra)[key]


class ZooNet(torch.nn.Module):
    """A model, its example inputs and its loss: `forward()` returns (loss, *outputs)."""

    def __init__(self, model: torch.nn.Module, inputs: dict[str, torch.Tensor], lm_loss: bool) -> None:
        super().__init__()
        self.model = model
        self.inputs = inputs
        self.lm_loss = lm_loss
        self.cotangents: list[torch.Tensor] = []

    def outputs(self, result: Any) -> list[torch.Tensor]:
        """The float tensors of a model's result (a ModelOutput, a tuple or a tensor), loss excluded."""
        if isinstance(result, torch.Tensor):
            return [result]
        values = result.values() if hasattr(result, "values") else result
        return [v for v in values if isinstance(v, torch.Tensor) and v.is_floating_point() and v.dim() > 0]

    def forward(self) -> tuple[torch.Tensor, ...]:
        result = self.model(**self.inputs)
        outputs = self.outputs(result)
        if self.lm_loss:
            return (result.loss, *outputs)
        # the cotangent's dtype: fp32 normally (a bf16 output under autocast is widened), fp64 in the
        # float64 reference run (`in_float64`), which must not round through fp32
        loss = sum((o.to(c.dtype) * c).sum() for o, c in zip(outputs, self.cotangents))
        return (torch.as_tensor(loss), *outputs)

    def in_float64(self) -> ZooNet:
        """A float64 copy (weights, float inputs, cotangents): the exact reference that the zoo's
        correctness check measures eager's own fp32 rounding error against."""
        twin = copy.deepcopy(self).double()
        twin.inputs = {k: v.double() if v.is_floating_point() else v for k, v in self.inputs.items()}
        twin.cotangents = [c.double() for c in self.cotangents]
        return twin

    def draw_cotangents(self) -> None:
        """Fixed random cotangents of the outputs, from a seeded generator (drawn here, eagerly:
        random calls inside `forward` would be traced into the compiled graph)."""
        if self.lm_loss:
            return
        with torch.no_grad():
            shapes = [o.shape for o in self.outputs(self.model(**self.inputs))]
        gen = torch.Generator().manual_seed(7)
        self.cotangents = [torch.randn(s, generator=gen) for s in shapes]


@dataclass(frozen=True)
class Architecture:
    name: str
    description: str
    shapes: dict[str, Shape]
    build: Callable[[Shape], ZooNet]

    def net(self, size: str, seed: int = 0) -> ZooNet:
        """A freshly initialised net at `size` (the same weights for the same seed)."""
        if size not in self.shapes:
            raise ValueError(f"model zoo: unknown size {size!r}; expected one of {', '.join(SIZES)}")
        torch.manual_seed(seed)
        net = self.build(self.shapes[size])
        net.draw_cotangents()
        return net


def _transformers() -> Any:
    import transformers  # noqa: PLC0415  # pyright: ignore[reportMissingImports] (test extra)

    transformers.logging.set_verbosity_error()  # config warnings about token ids of tiny vocabularies
    return transformers


def _images(shape: Shape) -> dict[str, torch.Tensor]:
    return {"pixel_values": torch.randn(shape.batch, 3, shape.seq, shape.seq)}


def _tokens(shape: Shape, vocab: int, labels: bool) -> dict[str, torch.Tensor]:
    ids = torch.randint(0, vocab, (shape.batch, shape.seq))
    return {"input_ids": ids, "labels": ids} if labels else {"input_ids": ids}


def _resnet(shape: Shape) -> ZooNet:
    t = _transformers()
    widths = [shape.hidden * 2**k for k in range(4)]
    config = t.ResNetConfig(layer_type="basic", depths=[shape.layers] * 4, hidden_sizes=widths,
                            embedding_size=shape.hidden)
    return ZooNet(t.ResNetModel(config), _images(shape), lm_loss=False)


def _mobilenet(shape: Shape) -> ZooNet:
    t = _transformers()
    config = t.MobileNetV2Config(depth_multiplier=shape.get("depth_multiplier"), image_size=shape.seq)
    return ZooNet(t.MobileNetV2Model(config), _images(shape), lm_loss=False)


def _bert(shape: Shape) -> ZooNet:
    t = _transformers()
    config = t.BertConfig(vocab_size=shape.get("vocab"), hidden_size=shape.hidden,
                          num_hidden_layers=shape.layers,
                          num_attention_heads=shape.get("heads"), intermediate_size=4 * shape.hidden,
                          max_position_embeddings=max(64, shape.seq), hidden_dropout_prob=0.0,
                          attention_probs_dropout_prob=0.0)
    return ZooNet(t.BertModel(config), _tokens(shape, shape.get("vocab"), labels=False), lm_loss=False)


def _gpt2(shape: Shape) -> ZooNet:
    t = _transformers()
    config = t.GPT2Config(vocab_size=shape.get("vocab"), n_embd=shape.hidden, n_layer=shape.layers,
                          n_head=shape.get("heads"), n_positions=max(64, shape.seq), resid_pdrop=0.0,
                          embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0,
                          loss_type="ForCausalLM")
    return ZooNet(t.GPT2LMHeadModel(config), _tokens(shape, shape.get("vocab"), labels=True), lm_loss=True)


def _llama(shape: Shape) -> ZooNet:
    t = _transformers()
    heads = shape.get("heads")
    config = t.LlamaConfig(vocab_size=shape.get("vocab"), hidden_size=shape.hidden,
                           intermediate_size=shape.hidden * 8 // 3, num_hidden_layers=shape.layers,
                           num_attention_heads=heads, num_key_value_heads=max(1, heads // 2),
                           max_position_embeddings=max(64, shape.seq), bos_token_id=0, eos_token_id=0,
                           pad_token_id=None, loss_type="ForCausalLM")
    return ZooNet(t.LlamaForCausalLM(config), _tokens(shape, shape.get("vocab"), labels=True), lm_loss=True)


def _transformer_layer(shape: Shape) -> ZooNet:
    layer = torch.nn.TransformerEncoderLayer(shape.hidden, shape.get("heads"), 4 * shape.hidden, dropout=0.0,
                                             batch_first=True)
    return ZooNet(layer, {"src": torch.randn(shape.batch, shape.seq, shape.hidden)}, lm_loss=False)


def _text(heads: tuple[int, int, int], vocab: tuple[int, int, int] = (128, 1000, 8000)) -> dict[str, Shape]:
    """tiny / small / base shapes of a text model (batch, seq, hidden, layers)."""
    dims = ((1, 8, 32, 1), (2, 64, 128, 2), (2, 128, 256, 4))
    return {size: Shape(*d, extra=(("heads", h), ("vocab", v)))
            for size, d, h, v in zip(SIZES, dims, heads, vocab)}


ARCHITECTURES: dict[str, Architecture] = {a.name: a for a in (
    Architecture("resnet",
                 "transformers ResNetModel, basic blocks (resnet18 at small and base: depths 2,2,2,2, widths "
                 "64..512)",
                 {"tiny": Shape(2, 32, 8, 1), "small": Shape(2, 64, 64, 2), "base": Shape(4, 128, 64, 2)},
                 _resnet),
    Architecture("mobilenet", "transformers MobileNetV2Model (depthwise convolutions, ReLU6)",
                 {"tiny": Shape(2, 32, 0, 0, (("depth_multiplier", 0.35),)),
                  "small": Shape(2, 64, 0, 0, (("depth_multiplier", 0.5),)),
                  "base": Shape(2, 96, 0, 0, (("depth_multiplier", 1.0),))}, _mobilenet),
    Architecture("bert", "transformers BertModel (encoder, SDPA attention)", _text((2, 2, 4)), _bert),
    Architecture("gpt2", "transformers GPT2LMHeadModel (decoder, causal LM loss)", _text((2, 2, 4)), _gpt2),
    Architecture("llama", "transformers LlamaForCausalLM (RMSNorm, RoPE, SwiGLU, grouped-query attention)",
                 _text((2, 4, 4)), _llama),
    Architecture("transformer", "torch.nn.TransformerEncoderLayer (one plain post-norm layer)",
                 {"tiny": Shape(1, 8, 32, 1, (("heads", 2),)), "small": Shape(2, 64, 128, 1, (("heads", 2),)),
                  "base": Shape(2, 128, 256, 1, (("heads", 4),))}, _transformer_layer),
)}
