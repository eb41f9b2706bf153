"""Random NetBuilder programs for the fuzzer: op graphs through decomposition, fusion and the
automatic scheduler (`cp.compile_program(..., schedule="auto")`), checked against the ops' own
numpy implementations (`Program.run_numpy`).

A program is plain data (`NetSpec`: JSON-able, printable as NetBuilder source): inputs
`(name, dtype, shape)` with dims that are ints or symbolic-dim names (`"S0"`, bound from the
arrays at run time), then ops `(method, args, attrs)` where an int arg names an earlier value
(inputs first, then op results) and the attrs are the method's keyword arguments.

Values stay bounded: every value carries a bound on its magnitude, and one that would exceed
`_LIMIT` is squashed with `tanh` first; divisions divide by `|y| + 1`; comparisons (`select`)
only see inputs, which the reference and the kernel read exactly. Outputs are compared with a
tolerance relative to the output's magnitude (`tolerance`), since fused float32 kernels and
numpy round differently (a wrong result is off by far more).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

import numpy as np

from cinn_py.tools.fuzzing.programs import SYM_UPPER

Dim = int | str
Shape = tuple[Dim, ...]
Op = tuple[str, tuple[Any, ...], tuple[tuple[str, Any], ...]]

DIMS = (1, 2, 3, 4, 5, 7, 8, 12, 16, 31, 32, 33, 64)
_LIMIT = 50.0
UNARY = ("tanh", "sigmoid", "relu", "abs", "negative", "erf", "gelu", "exp", "sqrt", "scale",
         "sin", "cos", "atan", "relu6", "leaky_relu", "clip", "identity", "dropout_infer")
# continuous ops only: a rounding op (floor, sign, ...) turns a last-bit difference between a fused
# kernel and numpy into a difference of 1
BINARY = ("add", "subtract", "multiply", "maximum", "minimum", "divide")
REDUCE = ("reduce_sum", "reduce_mean", "reduce_max", "reduce_min")
RTOL = 2e-4
LIST_OPERAND = ("concat",)
"""Methods whose operands are passed as one list."""


@dataclass(frozen=True)
class NetSpec:
    """A NetBuilder program as data (see the module docstring)."""

    inputs: tuple[tuple[str, str, Shape], ...]
    ops: tuple[Op, ...]
    outputs: tuple[int, ...]

    def to_json(self) -> dict[str, Any]:
        return {"inputs": [[n, d, list(s)] for n, d, s in self.inputs],
                "ops": [[m, list(a), [list(kv) for kv in kw]] for m, a, kw in self.ops],
                "outputs": list(self.outputs)}

    @staticmethod
    def from_json(data: dict[str, Any]) -> NetSpec:
        return NetSpec(tuple((n, d, tuple(s)) for n, d, s in data["inputs"]),
                       tuple((m, tuple(_tuple(x) for x in a), tuple((k, _tuple(v)) for k, v in kw))
                             for m, a, kw in data["ops"]),
                       tuple(data["outputs"]))

    @property
    def symbols(self) -> list[str]:
        return sorted({d for _, _, s in self.inputs for d in s if isinstance(d, str)})


def _tuple(x: Any) -> Any:
    return tuple(_tuple(y) for y in x) if isinstance(x, list) else x


class _Gen:
    """Builds a spec value by value, tracking each value's shape and magnitude bound."""

    def __init__(self, rng: random.Random, specials: bool = False) -> None:
        self.rng = rng
        self.specials = specials
        """Inputs hold NaN/inf/-0.0/0.0 (`random_inputs`); some divisions divide by an input as is."""
        self.inputs: list[tuple[str, str, Shape]] = []
        self.ops: list[Op] = []
        self.shapes: list[Shape] = []
        self.mags: list[float] = []
        self.exact: list[bool] = []
        self.floating: list[bool] = []
        self.symbolic = rng.random() < 0.3

    # -- values -----------------------------------------------------------------------------------
    def new_input(self, shape: Shape) -> int:
        self.inputs.append((f"x{len(self.inputs)}", "float32", shape))
        return self._value(shape, 2.0, exact=True)

    def _value(self, shape: Shape, mag: float, exact: bool = False, floating: bool = True) -> int:
        self.shapes.append(shape)
        self.mags.append(mag)
        self.exact.append(exact)
        self.floating.append(floating)
        return len(self.shapes) - 1

    def emit(self, method: str, args: tuple[Any, ...], shape: Shape, mag: float, **attrs: Any) -> int:
        # op results are numbered after all inputs: remap at the end (see `spec`)
        self.ops.append((method, args, tuple(sorted(attrs.items()))))
        return self._value(shape, mag)

    def random_shape(self) -> Shape:
        rank = self.rng.choice((1, 2, 2, 2, 3, 3))
        dims: list[Dim] = [self.rng.choice(DIMS) for _ in range(rank)]
        if self.symbolic and self.rng.random() < 0.6:
            dims[self.rng.randrange(rank)] = f"S{self.rng.randrange(2)}"
        return tuple(dims)

    def squash(self, v: int) -> int:
        if self.mags[v] <= _LIMIT:
            return v
        return self.emit("tanh", (v,), self.shapes[v], 1.0)

    # -- ops --------------------------------------------------------------------------------------
    def unary(self, v: int) -> int:
        fn = self.rng.choice(UNARY)
        shape, mag = self.shapes[v], self.mags[v]
        if fn == "exp":
            t = self.emit("tanh", (v,), shape, 1.0)
            return self.emit("exp", (t,), shape, math.e)
        if fn == "sqrt":
            a = self.emit("abs", (v,), shape, mag)
            return self.emit("sqrt", (a,), shape, math.sqrt(mag))
        if fn == "scale":
            s, b = self.rng.choice((0.5, 2.0, -1.5)), self.rng.choice((0.0, 1.0, -0.25))
            return self.emit("scale", (v,), shape, abs(s) * mag + abs(b), scale=s, bias=b,
                             bias_after_scale=self.rng.random() < 0.5)
        if fn == "leaky_relu":
            return self.emit(fn, (v,), shape, mag, alpha=0.1)
        if fn == "clip":
            return self.emit(fn, (v,), shape, 1.5, min=-1.5, max=1.0)
        if fn == "dropout_infer":
            return self.emit(fn, (v,), shape, mag, dropout_prob=0.25)
        bound = {"tanh": 1.0, "sigmoid": 1.0, "erf": 1.0, "sin": 1.0, "cos": 1.0, "atan": math.pi / 2,
                 "relu6": min(mag, 6.0)}.get(fn, mag)
        return self.emit(fn, (v,), shape, bound)

    def partner(self, v: int) -> tuple[int | float, int | None]:
        """A second operand for `v` and the CINN `axis` to pass (None: the default -1): a value of
        the same shape or of a suffix of it (broadcast), a new input of such a shape or of an
        inner slice of it (aligned at `axis`), or a number."""
        shape = self.shapes[v]
        same = [u for u in range(len(self.shapes))
                if u != v and self.floating[u] and _broadcasts(self.shapes[u], shape)]
        roll = self.rng.random()
        if same and roll < 0.5:
            return self.rng.choice(same), None
        if roll < 0.7 and len(shape) >= 2:
            k = self.rng.randrange(len(shape) - 1)
            return self.new_input(shape[k:self.rng.randrange(k + 1, len(shape))]), k
        if roll < 0.85 and shape:
            return self.new_input(shape[self.rng.randrange(len(shape)):]), None
        return self.rng.choice((0.5, 2.0, -3.0, 1.0)), None

    def binary(self, v: int) -> int:
        op = self.rng.choice(BINARY)
        w, axis = self.partner(v)
        wmag = self.mags[w] if isinstance(w, int) else abs(w)
        shape = self.shapes[v]
        kw = {} if axis is None else {"axis": axis}
        if op == "divide":
            if isinstance(w, int) and self.specials and self.exact[w] and self.rng.random() < 0.5:
                # a zero divisor: +-inf or NaN, as IEEE and numpy give it (squashed by tanh if reused)
                return self.emit("divide", (v, w), shape, math.inf, **kw)
            if isinstance(w, int):
                a = self.emit("abs", (w,), self.shapes[w], wmag)
                w = self.emit("add", (a, 1.0), self.shapes[w], wmag + 1.0)
                return self.emit("divide", (v, w), shape, self.mags[v], **kw)
            return self.emit("divide", (v, abs(w) + 1.0), shape, self.mags[v])
        mag = {"add": self.mags[v] + wmag, "subtract": self.mags[v] + wmag,
               "multiply": self.mags[v] * wmag}.get(
            op, max(self.mags[v], wmag))
        return self.emit(op, (v, w), shape, mag, **kw)

    def reduce(self, v: int) -> int:
        shape = self.shapes[v]
        axes = sorted(self.rng.sample(range(len(shape)), self.rng.randint(1, len(shape))))
        keep = self.rng.random() < 0.4
        op = self.rng.choice(REDUCE)
        out = tuple(1 if k in axes else d for k, d in enumerate(shape)) if keep else \
            tuple(d for k, d in enumerate(shape) if k not in axes)
        size = math.prod(SYM_UPPER if isinstance(d, str) else d for d in (shape[k] for k in axes))
        mag = self.mags[v] * (size if op == "reduce_sum" else 1)
        return self.emit(op, (v,), out, mag, dim=tuple(axes), keep_dim=keep)

    def composite(self, v: int) -> int:
        shape = self.shapes[v]
        if not shape:
            return self.unary(v)
        kind = self.rng.choice(("softmax", "rms_norm", "layer_norm", "transpose", "select", "matmul"))
        if kind == "softmax":
            return self.emit("softmax", (self.squash(v),), shape, 1.0,
                             axes=(self.rng.randrange(-len(shape), len(shape)),))
        if kind in ("rms_norm", "layer_norm"):
            last = shape[-1]
            size = SYM_UPPER if isinstance(last, str) else last
            return self.emit(kind, (self.squash(v),), shape,
                             math.sqrt(size) * (2.0 if kind == "layer_norm" else 1.0))
        if kind == "transpose" and len(shape) >= 2:
            perm = list(range(len(shape)))
            while perm == sorted(perm):
                self.rng.shuffle(perm)
            return self.emit("transpose", (v,), tuple(shape[p] for p in perm), self.mags[v], axis=tuple(perm))
        if kind == "select" and self.exact[v]:
            w = self.new_input(shape)
            c = self.emit("greater_than", (v, w), shape, 1.0)
            self.floating[c] = False  # a bool mask: never a binary partner (float32 x bool is refused)
            return self.emit("select", (c, v, w), shape, max(self.mags[v], 2.0))
        if kind == "matmul" and len(shape) == 2:
            n = self.rng.choice(DIMS[:9])
            w = self.new_input((shape[1], n))
            k = SYM_UPPER if isinstance(shape[1], str) else shape[1]
            return self.emit("matmul", (self.squash(v), w), (shape[0], n),
                             min(self.mags[v], _LIMIT) * 2.0 * k)
        return self.unary(v)

    def movement(self, v: int) -> int:
        """A shape-manipulation op (Injective: fuses with its elementwise neighbours). Dims that
        grow (tile, repeat, pad) are static ones: a spec shape holds ints and symbol names only."""
        shape, mag, rng = self.shapes[v], self.mags[v], self.rng
        static = [k for k, d in enumerate(shape) if isinstance(d, int)]
        kind = rng.choice(("reverse", "tile", "repeat", "pad", "unit_axes", "slice_assign",
                           "concat", "gather",
                           "scatter_add"))
        if not shape or (kind in ("tile", "repeat", "slice_assign", "concat") and not static):
            return self.unary(v)
        if kind in ("gather", "scatter_add"):
            return self.indexed(v, kind)
        if kind == "concat" and static:  # along a static axis: a sum with a symbol is not a spec dim
            axis, extent = rng.choice(static), rng.choice(DIMS[:8])
            w = self.new_input(tuple(extent if k == axis else d for k, d in enumerate(shape)))
            out = tuple(d + extent if k == axis and isinstance(d, int) else d for k, d in enumerate(shape))
            return self.emit("concat", (v, w), out, max(mag, 2.0), axis=axis - len(shape) * rng.randint(0, 1))
        if kind == "reverse":
            axes = sorted(rng.sample(range(len(shape)), rng.randint(1, len(shape))))
            return self.emit("reverse", (v,), shape, mag, axis=tuple(axes))
        if kind == "tile":
            reps = tuple(rng.choice((1, 2, 3)) if k in static else 1 for k in range(len(shape)))
            out = tuple(d * r if isinstance(d, int) else d for d, r in zip(shape, reps))
            return self.emit("tile", (v,), out, mag, repeat_times=reps)
        if kind == "repeat":
            axis, reps = rng.choice(static), rng.choice((2, 3))
            out = tuple(d * reps if k == axis and isinstance(d, int) else d for k, d in enumerate(shape))
            return self.emit("repeat", (v,), out, mag, repeats=reps, axis=axis)
        if kind == "pad":
            pads = tuple((rng.randint(0, 2), rng.randint(0, 2)) if isinstance(d, int) else (0, 0)
                         for d in shape)
            out = tuple(d + b + a if isinstance(d, int) else d for d, (b, a) in zip(shape, pads))
            value = rng.choice((0.0, -1.0, 0.5))
            return self.emit("pad", (v,), out, max(mag, abs(value)), paddings=pads, pad_value=value)
        if kind == "unit_axes":
            a = rng.randrange(len(shape) + 1)
            e = self.emit("expand_dims", (v,), shape[:a] + (1,) + shape[a:], mag, axes=(a,))
            return self.emit("squeeze", (e,), shape, mag, axes=(a,))
        axis = rng.choice(static)
        dim = shape[axis]
        assert isinstance(dim, int)
        start = rng.randrange(dim)
        end = rng.randint(start + 1, dim)
        w = self.new_input(tuple(end - start if k == axis else d for k, d in enumerate(shape)))
        return self.emit("slice_assign", (v, w), shape, max(mag, 2.0), axes=(axis,), starts=(start,),
                         ends=(end,))

    def indexed(self, v: int, kind: str) -> int:
        """`gather` (rows of `v` along an axis, picked by an index) or `scatter_add` (rows of a new
        input added into `v`): the index is the argmax of a new input over the axis' extent, so it
        is in range for any binding of a symbolic dim, and repeats (scatter_add accumulates)."""
        shape, rng = self.shapes[v], self.rng
        axis = rng.randrange(len(shape))
        count = rng.choice(DIMS[:8])
        scores = self.new_input((count, shape[axis]))
        index = self.emit("argmax", (scores,), (count,), 0.0, axis=1)
        self.floating[index] = False
        picked = tuple(count if k == axis else d for k, d in enumerate(shape))
        signed_axis = axis - len(shape) * rng.randint(0, 1)
        if kind == "gather":
            return self.emit("gather", (v, index), picked, self.mags[v], axis=signed_axis)
        updates = self.new_input(picked)
        return self.emit("scatter_add", (v, updates, index), shape, self.mags[v] + 2.0 * count,
                         axis=signed_axis)

    def step(self, v: int) -> int:
        roll = self.rng.random()
        if roll < 0.3:
            return self.unary(v)
        if roll < 0.6:
            return self.binary(v)
        if roll < 0.8 and self.shapes[v]:
            return self.squash(self.reduce(v))
        return self.composite(v) if roll < 0.9 else self.movement(v)


def _broadcasts(small: Shape, big: Shape) -> bool:
    return len(small) <= len(big) and tuple(big[len(big) - len(small):]) == tuple(small)


def generate_net(rng: random.Random, specials: bool = False) -> NetSpec:
    """A random program of 1-8 steps over 1-2 inputs (more inputs appear as second operands);
    its outputs are the op results nothing else reads. `specials`: see `_Gen.specials`."""
    g = _Gen(rng, specials)
    frontier = [g.new_input(g.random_shape()) for _ in range(rng.randint(1, 2))]
    for _ in range(rng.randint(1, 8)):
        frontier.append(g.step(rng.choice(frontier)))
    read = {a for _, args, _ in g.ops for a in args if isinstance(a, int)}
    results = [v for v in range(len(g.shapes)) if not g.exact[v]]
    outputs = [v for v in results if v not in read] or results[-1:]
    return _renumber(g, outputs)


def _renumber(g: _Gen, outputs: list[int]) -> NetSpec:
    """Value ids with the inputs first, then the op results in creation order (inputs and ops
    interleave while generating; only inputs are `exact`)."""
    inputs = [v for v in range(len(g.shapes)) if g.exact[v]]
    results = [v for v in range(len(g.shapes)) if not g.exact[v]]
    new_id = {v: k for k, v in enumerate(inputs + results)}
    ops = tuple((m, tuple(new_id[a] if isinstance(a, int) else a for a in args), kw) for m, args, kw in g.ops)
    return NetSpec(tuple(g.inputs), ops, tuple(sorted(new_id[v] for v in outputs)))


# ---------------------------------------------------------------------------------------------
# Building, inputs, reference, source
# ---------------------------------------------------------------------------------------------
def build_program(spec: NetSpec, name: str = "fuzz_net") -> Any:
    """The `Program` of `spec` (NetBuilder calls in order)."""
    import cinn_py as cp  # noqa: PLC0415

    nb = cp.NetBuilder(name)
    values: list[Any] = [nb.create_input(d, list(s), n) for n, d, s in spec.inputs]
    for method, args, kw in spec.ops:
        operands = [values[a] if isinstance(a, int) else a for a in args]
        if method in LIST_OPERAND:  # concat([a, b], axis=...)
            operands = [operands]
        values.append(getattr(nb, method)(*operands, **dict(kw)))
    return nb.build([values[v] for v in spec.outputs])


SPECIAL_VALUES = (math.nan, math.inf, -math.inf, -0.0, 0.0)
SIGNED_ZEROS = (-0.0, 0.0)
ORDER_DEPENDENT = ("reduce_max", "reduce_min", "argmax", "argmin")
"""Ops whose result on a row holding NaN depends on the schedule's reduction order (CINN's
`a > b ? a : b` fold, docs/semantics.md): programs with one get signed zeros only (an infinity
can become NaN on the way: inf - inf)."""


def random_inputs(spec: NetSpec, rng: random.Random, np_rng: np.random.Generator,
                  specials: bool = False) -> list[np.ndarray]:
    """U[-2, 2] inputs; with `specials`, a fifth of each float input's elements NaN, +-inf, -0.0
    or 0.0 (signed zeros only with an ORDER_DEPENDENT op)."""
    binding = {s: rng.randint(1, SYM_UPPER) for s in spec.symbols}
    arrays = [np_rng.uniform(-2.0, 2.0, tuple(binding[d] if isinstance(d, str) else d for d in s)).astype(dt)
              for _, dt, s in spec.inputs]
    values = SIGNED_ZEROS if any(op[0] in ORDER_DEPENDENT for op in spec.ops) else SPECIAL_VALUES
    return [with_specials(a, np_rng, values) if specials else a for a in arrays]


def with_specials(a: np.ndarray, np_rng: np.random.Generator,
                  values: tuple[float, ...] = SPECIAL_VALUES) -> np.ndarray:
    """`a` with about a fifth of its elements drawn from `values` (floats only)."""
    if a.dtype.kind != "f" or not a.size:
        return a
    picks = np.asarray(values, a.dtype)[np_rng.integers(0, len(values), a.shape)]
    return np.where(np_rng.random(a.shape) < 0.2, picks, a).astype(a.dtype)


def tolerance(reference: np.ndarray) -> float:
    """Absolute tolerance of an output: relative to its largest magnitude."""
    finite = np.abs(reference[np.isfinite(reference)]) if reference.size else np.zeros(1)
    return RTOL * max(1.0, float(finite.max()) if finite.size else 1.0)


def to_python(spec: NetSpec, name: str = "fuzz_net") -> str:
    """NetBuilder source that builds the same program (for reproducers)."""
    lines = ["import cinn_py as cp", f"nb = cp.NetBuilder({name!r})"]
    for k, (n, d, s) in enumerate(spec.inputs):
        lines.append(f"v{k} = nb.create_input({d!r}, {list(s)!r}, {n!r})")
    for k, (method, args, kw) in enumerate(spec.ops, start=len(spec.inputs)):
        operands = [f"v{a}" if isinstance(a, int) else repr(a) for a in args]
        if method in LIST_OPERAND:
            operands = [f"[{', '.join(operands)}]"]
        text = ", ".join(operands + [f"{key}={value!r}" for key, value in kw])
        lines.append(f"v{k} = nb.{method}({text})")
    lines.append(f"program = nb.build([{', '.join(f'v{v}' for v in spec.outputs)}])")
    return "\n".join(lines)
