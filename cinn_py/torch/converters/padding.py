"""Padding: constant_pad_nd (negative pads crop, as in torch)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cinn_py.frontend.program import Variable
from cinn_py.torch.converters.base import Emitter, Value, converts, static_dim


def _pairs(pad: Sequence[int], ndim: int) -> list[tuple[int, int]]:
    """torch's flat pad list (last dim first: [before, after, before, after, ...]) per dim."""
    pairs = [(0, 0)] * ndim
    for k in range(len(pad) // 2):
        pairs[ndim - 1 - k] = (int(pad[2 * k]), int(pad[2 * k + 1]))
    return pairs


def _static_cropped(x: Any, pad: Sequence[Any], value: Any = 0) -> str | None:
    fake = getattr(x, "meta", {}).get("val")
    if any(not isinstance(p, int) for p in pad):
        return f"constant_pad_nd with symbolic pads {list(pad)}"
    if fake is None:
        return None
    bad = [fake.shape[d] for d, (lo, hi) in enumerate(_pairs(pad, fake.dim()))
           if (lo < 0 or hi < 0) and not isinstance(fake.shape[d], int)]
    return f"constant_pad_nd cropping a symbolic dim {bad[0]}" if bad else None


@converts("aten.constant_pad_nd.default", check=_static_cropped)
def _constant_pad_nd(e: Emitter, x: Variable, pad: Sequence[int], value: Any = 0) -> Value:
    pairs = _pairs(pad, x.ndim)
    for d, (lo, hi) in enumerate(pairs):  # negative pads: crop first
        if lo < 0 or hi < 0:
            size = static_dim(x.shape[d])
            x = e.nb.slice(x, [d], [max(0, -lo)], [size - max(0, -hi)])
    grow = [[max(0, lo), max(0, hi)] for lo, hi in pairs]
    if not any(lo or hi for lo, hi in grow):
        return e.to_shape(x)
    return e.nb.pad(x, grow, float(value) if e.dtype.startswith(("float", "bfloat")) else value)


def _source_index(e: Emitter, n: int, lo: int, hi: int, mode: str) -> Variable:
    """For each of the n + lo + hi padded positions, the position of x it copies (int64):
    clamped into [0, n) (replicate) or mirrored at the ends (reflect)."""
    nb = e.nb
    count = n + lo + hi

    def const(v: int) -> Variable:
        return nb.fill_constant([count], v, dtype="int64")

    i = nb.subtract(nb.arange(0, count, 1, "int64"), const(lo))
    if mode == "replicate":
        return nb.minimum(nb.maximum(i, const(0)), const(n - 1))
    mirrored = nb.abs(i)
    return nb.subtract(const(n - 1), nb.abs(nb.subtract(const(n - 1), mirrored)))


def _static_padded(x: Any, pad: Sequence[Any]) -> str | None:
    fake = getattr(x, "meta", {}).get("val")
    if fake is None:
        return None
    dims = range(fake.dim() - len(pad) // 2, fake.dim())
    bad = [fake.shape[d] for d in dims if not isinstance(fake.shape[d], int)]
    return f"padding symbolic dim {bad[0]}" if bad else None


def _index_pad(mode: str) -> Any:
    def convert(e: Emitter, x: Variable, pad: Sequence[int]) -> Value:
        for d, (lo, hi) in enumerate(_pairs(pad, x.ndim)):
            if lo or hi:
                x = e.nb.gather(x, _source_index(e, static_dim(x.shape[d]), lo, hi, mode), axis=d)
        return x
    return convert


def _index_pad_backward(mode: str) -> Any:
    def convert(e: Emitter, g: Variable, x: Variable, pad: Sequence[int]) -> Value:
        """Each padded position's cotangent added into the position it copies, dim by dim."""
        for d, (lo, hi) in enumerate(_pairs(pad, x.ndim)):
            if lo or hi:
                n = static_dim(x.shape[d])
                zeros = e.nb.fill_constant([*g.shape[:d], n, *g.shape[d + 1:]], 0, dtype=str(g.dtype))
                g = e.nb.scatter_add(zeros, g, _source_index(e, n, lo, hi, mode), axis=d)
        return g
    return convert


for _mode, _name in (("replicate", "replication"), ("reflect", "reflection")):
    for _rank in (1, 2, 3):
        converts(f"aten.{_name}_pad{_rank}d.default", check=_static_padded)(_index_pad(_mode))
        converts(f"aten.{_name}_pad{_rank}d_backward.default",
                 check=lambda g, x, pad: _static_padded(x, pad))(_index_pad_backward(_mode))
