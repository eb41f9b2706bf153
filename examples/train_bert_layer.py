"""Train a BERT-style encoder layer (attention with softmax, linear + bias + gelu, residuals,
layer_norm) whose forward and backward are cinn-py programs, inside an ordinary PyTorch
training step (`cinn_py.torch.compile_function`), and compare with eager PyTorch.

    python examples/train_bert_layer.py [--steps 5] [--via function|compile]

Prints the loss of each SGD step for cinn-py and eager PyTorch (same initial weights and data):
the two trajectories agree to float32 rounding. Needs the extra cinn-py[torch].
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import torch

from cinn_py.frontend import NetBuilder
from cinn_py.frontend.program import Program
from cinn_py.torch import compile_function

B, S, H, F = 2, 8, 16, 32
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


def cinn_forward(via: str, x: torch.Tensor) -> Callable[[dict[str, torch.Tensor]], torch.Tensor]:
    """The layer run by cinn-py: the NetBuilder program as a torch function (`function`), or the
    eager layer through `torch.compile(backend="cinn_py")` (`compile`)."""
    if via == "function":
        layer = compile_function(layer_program())
        return lambda p: layer(x, *p.values())
    if via == "compile":
        compiled = torch.compile(eager_layer, backend="cinn_py", dynamic=False)
        return lambda p: compiled(x, p)
    raise ValueError(f"train: via must be 'function' or 'compile', got {via!r}")


def train(steps: int = 5, lr: float = 0.1, via: str = "function") -> tuple[list[float], list[float]]:
    """SGD on the mean squared error to a fixed target; the cinn-py and eager losses per step."""
    gen = torch.Generator().manual_seed(1)
    x, target = torch.randn(B, S, H, generator=gen), torch.randn(B, S, H, generator=gen)
    losses: dict[str, list[float]] = {"cinn-py": [], "eager": []}
    for which, forward in (("cinn-py", cinn_forward(via, x)), ("eager", lambda p: eager_layer(x, p))):
        params = init_params()
        opt = torch.optim.SGD(params.values(), lr=lr)
        for _ in range(steps):
            opt.zero_grad()
            loss = torch.mean((forward(params) - target) ** 2)
            loss.backward()
            opt.step()
            losses[which].append(float(loss.detach()))
    return losses["cinn-py"], losses["eager"]


def main() -> None:
    parser = argparse.ArgumentParser(description="Train a BERT-style layer with cinn-py vs eager PyTorch.")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--via", choices=("function", "compile"), default="function",
                        help="cinn-py runs the NetBuilder program (function) or torch.compile's graphs (compile)")
    args = parser.parse_args()
    mine, eager = train(args.steps, via=args.via)
    for step, (a, b) in enumerate(zip(mine, eager)):
        print(f"step {step}: loss cinn-py {a:.6f}  eager {b:.6f}  diff {abs(a - b):.2e}")


if __name__ == "__main__":
    main()
