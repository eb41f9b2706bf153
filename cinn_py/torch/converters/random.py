"""Dropout with a counter-based random mask: `native_dropout` and `native_dropout_backward`.

A Program is compiled once and called many times, so its random numbers cannot be compile-time
constants: each call must draw a new mask. `seed_dropout(gm)` rewrites a graph's training-mode
`native_dropout(x, p, True)` into `cinn_py::seeded_dropout(x, p, seed)` whose `seed` is an int64
[2] tensor drawn by `aten.randint` from torch's generator at every call (so `torch.manual_seed`
reproduces the masks); the randint runs in eager PyTorch (it is the draw native_dropout makes
inside itself) and the dropout converts to elementwise NetBuilder ops.

The mask hashes each element's row-major number `i` (1-based): `c = (a i + b) mod P` with the
seed `(a, b)` (an affine permutation of the counters per call), then a degree-3 polynomial of `c`
mod P = 2^31 - 1 with fixed coefficients (a 4-independent family, as `uniform_random`'s); an
element is kept when the hash is >= ceil(p P), an integer comparison, so the kernel and the op's
own torch implementation (`seeded_dropout`, which eager fallback runs) draw the same mask bit for
bit. All products stay below 2^62: int64 arithmetic is exact everywhere.
"""

from __future__ import annotations

import math
from typing import Any

import torch  # pyright: ignore[reportMissingImports]

from cinn_py.frontend.program import Variable
from cinn_py.torch.converters.base import Emitter, Value, converts

PRIME = 2**31 - 1
_COEFFS = (1_103_515_245 % PRIME, 12_345, 2_147_483_587 % PRIME, 97_531)
SEED_MARK = "cinn_py_seed"
"""node.meta key of the randint nodes `seed_dropout` adds (not counted as eager compute ops)."""


def _threshold(p: float) -> int:
    return math.ceil(p * PRIME)


def _keep_torch(shape: list[int], p: float, seed: Any) -> Any:
    a, b = seed[0], seed[1]
    n = math.prod(shape)
    c = (torch.arange(1, n + 1, dtype=torch.int64, device=seed.device) * a + b) % PRIME
    h = torch.full_like(c, _COEFFS[0])
    for k in _COEFFS[1:]:
        h = (h * c + k) % PRIME
    return (h >= _threshold(p)).reshape(shape)


@torch.library.custom_op("cinn_py::seeded_dropout", mutates_args=())
def seeded_dropout(x: torch.Tensor, p: float, seed: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """native_dropout(x, p, train=True) with the mask of `seed` (what the kernel computes)."""
    if p >= 1:
        return torch.zeros_like(x), torch.zeros_like(x, dtype=torch.bool)
    keep = _keep_torch(list(x.shape), p, seed)
    return x * keep * (1.0 / (1.0 - p)), keep


@seeded_dropout.register_fake
def _seeded_dropout_fake(x: torch.Tensor, p: float, seed: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.empty_like(x), torch.empty_like(x, dtype=torch.bool)


def _save_mask(ctx: Any, inputs: tuple[Any, ...], output: tuple[Any, ...]) -> None:
    ctx.p = inputs[1]
    ctx.save_for_backward(output[1])


def _seeded_dropout_backward(ctx: Any, g: Any, _mask_grad: Any) -> tuple[Any, None, None]:
    (mask,) = ctx.saved_tensors
    scale = 0.0 if ctx.p >= 1 else 1.0 / (1.0 - ctx.p)
    return torch.ops.aten.native_dropout_backward(g, mask, scale), None, None


seeded_dropout.register_autograd(_seeded_dropout_backward, setup_context=_save_mask)


def seed_dropout(gm: Any) -> bool:
    """Rewrite training-mode `native_dropout` nodes of `gm` into `seeded_dropout` with a seed drawn
    per call; whether any was rewritten."""
    nodes = [n for n in gm.graph.nodes
             if n.op == "call_function" and n.target is torch.ops.aten.native_dropout.default
             and _training(n)]
    for node in nodes:
        x, p = node.args[0], node.args[1]
        fake = x.meta.get("val")
        if fake is None:
            continue
        with gm.graph.inserting_before(node):
            seed = gm.graph.call_function(torch.ops.aten.randint.low, (1, PRIME, [2]),
                                          {"dtype": torch.int64, "device": fake.device})
            with fake.fake_mode:
                seed.meta["val"] = torch.empty(2, dtype=torch.int64, device=fake.device)
            seed.meta[SEED_MARK] = True
            new = gm.graph.call_function(torch.ops.cinn_py.seeded_dropout.default, (x, float(p), seed))
            new.meta["val"] = node.meta["val"]
        node.replace_all_uses_with(new)
        gm.graph.erase_node(node)
    return bool(nodes)


def _training(node: Any) -> bool:
    train = node.args[2] if len(node.args) > 2 else node.kwargs.get("train")
    return train is None or bool(train)


def _mask(e: Emitter, like: Variable, p: float, seed: Variable) -> Variable:
    """The keep mask (bool, like's shape) of `_keep_torch`, as int64 NetBuilder ops."""
    nb = e.nb
    shape = [int(d) for d in like.shape]
    n = math.prod(shape)

    def part(k: int) -> Variable:
        return nb.broadcast_to(nb.slice(seed, [0], [k], [k + 1]), shape, [len(shape) - 1])

    counter = nb.reshape(nb.arange(1, n + 1, 1, dtype="int64"), shape)
    c = nb.mod(nb.add(nb.multiply(counter, part(0)), part(1)), PRIME)
    h = nb.fill_constant(shape, _COEFFS[0], dtype="int64")
    for k in _COEFFS[1:]:
        h = nb.mod(nb.add(nb.multiply(h, c), k), PRIME)
    return nb.greater_equal(h, _threshold(p))


def _static(x: Any, p: Any, seed: Any) -> str | None:
    fake = getattr(x, "meta", {}).get("val")
    if fake is not None and not all(isinstance(d, int) for d in fake.shape):
        return "dropout with symbolic sizes"
    return None


@converts("cinn_py.seeded_dropout.default", check=_static)
def _seeded_dropout(e: Emitter, x: Variable, p: float, seed: Variable) -> Value:
    nb = e.nb
    if p >= 1:
        return nb.fill_constant(list(x.shape), 0.0, dtype=str(x.dtype)), \
            nb.fill_constant(list(x.shape), False, dtype="bool")
    keep = _mask(e, x, p, seed)
    kept = nb.select(keep, nb.scale(x, 1.0 / (1.0 - p)),
                     nb.fill_constant(list(x.shape), 0.0, dtype=str(x.dtype)))
    return kept, keep


def _eval_only(x: Any, p: Any, train: Any = None) -> str | None:
    """Training-mode native_dropout is rewritten before conversion (`seed_dropout`); one left
    here had no fake tensor to seed from."""
    return None if train is not None and not train else "native_dropout in training mode without a seed"


@converts("aten.native_dropout.default", check=_eval_only)
def _dropout_eval(e: Emitter, x: Variable, p: float, train: Any = None) -> Value:
    return x, _all_true(e, x)


def _all_true(e: Emitter, like: Variable) -> Variable:
    return e.nb.fill_constant(list(like.shape), True, dtype="bool")


@converts("aten.native_dropout_backward.default")
def _dropout_backward(e: Emitter, g: Variable, mask: Variable, scale: float) -> Value:
    """g * mask * scale."""
    nb = e.nb
    zeros = nb.fill_constant(list(g.shape), 0.0, dtype=str(g.dtype))
    return nb.select(as_bool(e, mask), nb.scale(g, float(scale)), zeros)


def as_bool(e: Emitter, mask: Variable) -> Variable:
    return mask if str(mask.dtype) == "bool" else e.nb.not_equal(mask, 0)
