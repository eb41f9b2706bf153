"""Train a BERT-style encoder layer (attention with softmax, linear + bias + gelu, residuals,
layer_norm) whose forward and backward are cinn-py programs, inside an ordinary PyTorch
training step (`cinn_py.torch.compile_function`), and compare with eager PyTorch.

    python examples/train_bert_layer.py [--steps 5] [--via function|compile|dynamic]

Prints the loss of each SGD step for cinn-py and eager PyTorch (same initial weights and data):
the two trajectories agree to float32 rounding. `--via dynamic` feeds each step a batch of another
sequence length (`SEQ_LENGTHS`) through `torch.compile` with the batch and sequence dims marked
dynamic: one forward and one backward graph, compiled once, serve every length. Needs the extra
cinn-py[torch].
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import torch

from cinn_py.frontend import NetBuilder
from cinn_py.frontend.program import Program
from cinn_py.torch import compile_function

B, S, H, F = 2, 8, 16, 32
SEQ_LENGTHS = (8, 5, 7, 3, 6)
"""The sequence length of each step with `--via dynamic` (cycled); the other ways use S."""
PARAMS = {"Wq": (H, H), "Wk": (H, H), "Wv": (H, H), "G1": (H,), "B1": (H,), "W1": (H, F), "C1": (F,),
          "W2": (F, H), "C2": (H,), "G2": (H,), "B2": (H,)}


def layer_program() -> Program:
    nb = NetBuilder("bert_layer")
    x = nb.create_input("float32", [B, S, H], "X")
    p = {name: nb.create_input("float32", list(shape), name) for name, shape in PARAMS.items()}
    q, k, v = (nb.matmul(x, p[w]) for w in ("Wq", "Wk", "Wv"))
    attn = nb.softmax(nb.scale(nb.matmul(q, k, transpose_y=True), H ** -0.5), [-1])
    h = nb.layer_norm(nb.add(nb.matmul(attn, v), x), p["G1"], p["B1"], eps=1e-5, begin_norm_axis=2)
    ff = nb.add(nb.matmul(nb.gelu(nb.add(nb.matmul(h, p["W1"]), p["C1"])), p["W2"]), p["C2"])
    return nb.build([nb.layer_norm(nb.add(ff, h), p["G2"], p["B2"], eps=1e-5, begin_norm_axis=2)])


def eager_layer(x: torch.Tensor, p: dict[str, torch.Tensor]) -> torch.Tensor:
    """The layer in PyTorch, for any batch, sequence and hidden size (the hidden size is x's last dim)."""
    hidden = x.shape[-1]
    q, k, v = x @ p["Wq"], x @ p["Wk"], x @ p["Wv"]
    attn = torch.softmax((q @ k.transpose(-1, -2)) * hidden ** -0.5, -1)
    h = torch.nn.functional.layer_norm(attn @ v + x, (hidden,), p["G1"], p["B1"], eps=1e-5)
    ff = torch.nn.functional.gelu(h @ p["W1"] + p["C1"]) @ p["W2"] + p["C2"]
    return torch.nn.functional.layer_norm(ff + h, (hidden,), p["G2"], p["B2"], eps=1e-5)


def param_shapes(hidden: int = H, ffn: int = F) -> dict[str, tuple[int, ...]]:
    """PARAMS for another hidden / feed-forward size."""
    size = {H: hidden, F: ffn}
    return {name: tuple(size[d] for d in shape) for name, shape in PARAMS.items()}


def init_params(seed: int = 0, hidden: int = H, ffn: int = F) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    params = {}
    for name, shape in param_shapes(hidden, ffn).items():
        if name.startswith("G"):
            t = torch.ones(shape)
        elif name.startswith(("B", "C")):
            t = torch.zeros(shape)
        else:
            t = torch.randn(shape, generator=gen) * shape[0] ** -0.5
        params[name] = t.requires_grad_()
    return params


Forward = Callable[[torch.Tensor, dict[str, torch.Tensor]], torch.Tensor]


def cinn_forward(via: str) -> Forward:
    """The layer run by cinn-py: the NetBuilder program as a torch function (`function`), or the
    eager layer through `torch.compile(backend="cinn_py")`, with static shapes (`compile`) or
    with the batch and sequence dims marked dynamic (`dynamic`)."""
    if via == "function":
        layer = compile_function(layer_program())
        return lambda x, p: layer(x, *p.values())
    if via == "compile":
        compiled = torch.compile(eager_layer, backend="cinn_py", dynamic=False)
        return lambda x, p: compiled(x, p)
    if via == "dynamic":
        dynamic = torch.compile(eager_layer, backend="cinn_py")

        def forward(x: torch.Tensor, p: dict[str, torch.Tensor]) -> torch.Tensor:
            torch._dynamo.mark_dynamic(x, 0)
            torch._dynamo.mark_dynamic(x, 1)
            return dynamic(x, p)
        return forward
    raise ValueError(f"train: via must be 'function', 'compile' or 'dynamic', got {via!r}")


def batches(steps: int, via: str) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(input, target) of each step: one fixed batch, or with `dynamic` one of each step's length."""
    gen = torch.Generator().manual_seed(1)
    x, target = torch.randn(B, S, H, generator=gen), torch.randn(B, S, H, generator=gen)
    if via != "dynamic":
        return [(x, target)] * steps
    lengths = [SEQ_LENGTHS[k % len(SEQ_LENGTHS)] for k in range(steps)]
    return [(x[:, :n].contiguous(), target[:, :n].contiguous()) for n in lengths]


def train(steps: int = 5, lr: float = 0.1, via: str = "function") -> tuple[list[float], list[float]]:
    """SGD on the mean squared error to a fixed target; the cinn-py and eager losses per step."""
    data = batches(steps, via)
    losses: dict[str, list[float]] = {"cinn-py": [], "eager": []}
    for which, forward in (("cinn-py", cinn_forward(via)), ("eager", eager_layer)):
        params = init_params()
        opt = torch.optim.SGD(params.values(), lr=lr)
        for x, target in data:
            opt.zero_grad()
            loss = torch.mean((forward(x, params) - target) ** 2)
            loss.backward()
            opt.step()
            losses[which].append(float(loss.detach()))
    return losses["cinn-py"], losses["eager"]


def main() -> None:
    parser = argparse.ArgumentParser(description="Train a BERT-style layer with cinn-py vs eager PyTorch.")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--via", choices=("function", "compile", "dynamic"), default="function",
                        help="cinn-py runs the NetBuilder program (function) or torch.compile's graphs, with "
                             "static shapes (compile) or dynamic batch and sequence length (dynamic)")
    args = parser.parse_args()
    mine, eager = train(args.steps, via=args.via)
    for step, (a, b) in enumerate(zip(mine, eager)):
        print(f"step {step}: loss cinn-py {a:.6f}  eager {b:.6f}  diff {abs(a - b):.2e}")


if __name__ == "__main__":
    main()
