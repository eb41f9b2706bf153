"""Random compute-DSL programs for the fuzzer, with an independent numpy reference.

A program is plain data (`ProgramSpec`: JSON-able, printable as DSL source) so that a failing
case can be reproduced, shrunk and pasted into a test. Every tensor has a shape made of *axis
ids* (`(1, 0)` is the transpose of `(0, 1)`), so loads need no index arithmetic: a compute over
axes `(0, 2)` reading a tensor over `(2,)` broadcasts it, one over `(1, 0)` reading `(0, 1)`
transposes it, and a reduction adds one reduce axis that its body may index.

Expression trees (tuples, first element the node kind):

    ("load", t)                 tensor t indexed by the loop variables of its axes
    ("const", v)                a number of the expression's dtype
    ("idx", a)                  the loop variable of axis a, cast to the expression's dtype
    ("un", fn, e)               a domain-safe unary function (see UNARY)
    ("bin", op, a, b)           add sub mul max min, float div (a / (|b| + 1)), int div/mod by a
                                positive constant (C truncation)
    ("sel", cmp, a, b, t, f)    select(a cmp b, t, f)
    ("cast", to, from, e)       an explicit conversion of `e` (computed in `from`) to `to`

Values stay bounded (each expression carries an upper bound of its magnitude and is squashed
with `tanh` / `% c` when a bound would get too large), and discontinuous operations (floor,
ceil, comparisons, float->int casts) only see *exact* operands (inputs, constants, integer
expressions), so the float64 reference and a float32/float16 kernel cannot land on different
sides of a jump. Each tensor also carries a propagated bound of its rounding error (`TensorSpec.err`, 0 for
exact values); outputs are compared with `tolerance(dtype, mag, err)`.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any

import numpy as np

Node = tuple[Any, ...]
Gen = tuple[Node, float, float]

FLOAT_DTYPES = ("float16", "float32", "float64")
INT_DTYPES = ("int32", "int64")
# Magnitude bound above which an expression is squashed (tanh for floats, % 97 for ints).
_LIMIT = {"float16": 200.0, "float32": 1e6, "float64": 1e9, "int32": 1e6, "int64": 1e12}
# Unit roundoff per dtype (0 for integers: integer results must match exactly).
EPS = {"float16": 2.0 ** -11, "float32": 2.0 ** -24, "float64": 2.0 ** -53, "int32": 0.0, "int64": 0.0,
       "bool": 0.0}
# Symbols are bound to values in [1, SYM_UPPER].
SYM_UPPER = 9
# Safety factor on the propagated error bound (`TensorSpec.err`) when comparing results.
ERR_FACTOR = 8.0


def tolerance(dtype: str, mag: float, err: float) -> float:
    """Absolute tolerance of an output: ERR_FACTOR x its propagated error bound, plus a few ulps
    of its magnitude (libm and numpy transcendental functions differ by an ulp or two)."""
    return ERR_FACTOR * err + 4.0 * EPS[dtype] * max(mag, 1.0)


# name -> (magnitude bound of the result, Lipschitz factor (None: sqrt-like), needs an exact operand)
UNARY: dict[str, tuple[Any, Any, bool]] = {
    "exp": (lambda m: math.exp(min(m, 3.0)), lambda m: math.exp(min(m, 3.0)), False),   # exp(min(x, 3))
    "log": (lambda m: math.log(m + 1.0), lambda m: 1.0, False),                         # log(|x| + 1)
    "sqrt": (lambda m: math.sqrt(m), None, False),                                      # sqrt(|x|)
    "rsqrt": (lambda m: 1.0, lambda m: 0.5, False),                                     # rsqrt(|x| + 1)
    "tanh": (lambda m: 1.0, lambda m: 1.0, False), "sigmoid": (lambda m: 1.0, lambda m: 0.25, False),
    "erf": (lambda m: 1.0, lambda m: 1.13, False),
    "sin": (lambda m: 1.0, lambda m: 1.0, False), "cos": (lambda m: 1.0, lambda m: 1.0, False),
    "abs": (lambda m: m, lambda m: 1.0, False), "neg": (lambda m: m, lambda m: 1.0, False),
    "floor": (lambda m: m + 1.0, lambda m: 0.0, True), "ceil": (lambda m: m + 1.0, lambda m: 0.0, True),
}
INT_UNARY = ("abs", "neg")
CMPS = ("lt", "le", "gt", "ge", "eq", "ne")
REDUCE_KINDS = ("sum", "prod", "max", "min")


@dataclass(frozen=True)
class TensorSpec:
    """An input (`body is None`) or a compute over `axes`; `reduce` is (kind, reduce axis id)."""

    name: str
    axes: tuple[int, ...]
    dtype: str
    body: Node | None = None
    reduce: tuple[str, int] | None = None
    mag: float = 1.0
    """Upper bound of |value|."""
    err: float = 0.0
    """Upper bound of |kernel value - float64 reference value| (0: exact)."""

    @property
    def is_input(self) -> bool:
        return self.body is None

    @property
    def expr(self) -> Node:
        """The body of a computed tensor (ValueError for an input)."""
        if self.body is None:
            raise ValueError(f"tensor spec '{self.name}' is an input: it has no body")
        return self.body


@dataclass(frozen=True)
class ProgramSpec:
    """`dims[a]` is axis a's extent: an int or a symbol name (bound per run)."""

    dims: tuple[int | str, ...]
    tensors: tuple[TensorSpec, ...]
    outputs: tuple[int, ...]
    symbols: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return {"dims": list(self.dims), "symbols": list(self.symbols), "outputs": list(self.outputs),
                "tensors": [{"name": t.name, "axes": list(t.axes), "dtype": t.dtype, "body": _to_list(t.body),
                             "reduce": list(t.reduce) if t.reduce else None, "mag": t.mag, "err": t.err} for t
                            in self.tensors]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProgramSpec:
        tensors = tuple(TensorSpec(t["name"], tuple(t["axes"]), t["dtype"], _to_tuple(t["body"]),
                                   tuple(t["reduce"]) if t["reduce"] else None, float(t["mag"]),
                                   float(t["err"]))  # type: ignore[arg-type]
                        for t in data["tensors"])
        return cls(tuple(data["dims"]), tensors, tuple(data["outputs"]), tuple(data["symbols"]))


def _to_list(node: Any) -> Any:
    return [_to_list(x) for x in node] if isinstance(node, tuple) else node


def _to_tuple(node: Any) -> Any:
    return tuple(_to_tuple(x) for x in node) if isinstance(node, list) else node


# ---------------------------------------------------------------------------------------------
# Generation
# ---------------------------------------------------------------------------------------------
class _Gen:
    """State of one `generate_program` call."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.tensors: list[TensorSpec] = []
        self.dims: list[int | str] = []
        self.symbols: list[str] = []

    def extent_bound(self, axis: int) -> int:
        d = self.dims[axis]
        return SYM_UPPER if isinstance(d, str) else d

    def make_dims(self) -> None:
        for _ in range(self.rng.choice((1, 2, 2, 3, 3))):
            if self.rng.random() < 0.25:
                if self.symbols and self.rng.random() < 0.3:
                    self.dims.append(self.rng.choice(self.symbols))  # two axes share a symbol
                    continue
                name = f"S{len(self.symbols)}"
                self.symbols.append(name)
                self.dims.append(name)
            else:
                self.dims.append(self.rng.choice((1, 2, 3, 4, 5, 7, 8, 16)))

    def ordered_subset(self, min_size: int = 1) -> tuple[int, ...]:
        axes = list(range(len(self.dims)))
        self.rng.shuffle(axes)
        return tuple(axes[:self.rng.randint(min_size, len(axes))])

    # -- expressions: each returns (node, magnitude bound, error bound); error 0 means exact ----
    def expr(self, dtype: str, avail: tuple[int, ...], depth: int, must: int | None) -> Gen:
        if depth <= 0 or self.rng.random() < 0.25:
            return self.leaf(dtype, avail, must)
        is_float = dtype in FLOAT_DTYPES
        roll = self.rng.random()
        if roll < 0.3 and is_float or roll < 0.1:
            return self.unary(dtype, avail, depth, must)
        if roll < 0.75:
            return self.binary(dtype, avail, depth, must)
        if roll < 0.88:
            return self.select(dtype, avail, depth, must)
        return self.cast_roundtrip(dtype, avail, depth, must)

    def leaf(self, dtype: str, avail: tuple[int, ...], must: int | None, exact: bool = False) -> Gen:
        eligible = [k for k, t in enumerate(self.tensors)
                    if set(t.axes) <= set(avail) and (t.err == 0 or not exact)]
        roll = self.rng.random()
        if must is not None or (eligible and roll < 0.75):
            k = must if must is not None else self.rng.choice(eligible)
            return self.load(k, dtype)
        if roll < 0.88 or not avail:
            value: float = self.rng.choice((0, 1, 2, 3, -1, 5)) if dtype in INT_DTYPES else \
                self.rng.choice((0.0, 0.5, 1.0, -1.5, 2.0, 0.25))
            return ("const", value), abs(value), 0.0
        axis = self.rng.choice(avail)
        return ("idx", axis), float(self.extent_bound(axis)), 0.0

    def load(self, k: int, dtype: str) -> Gen:
        t = self.tensors[k]
        node: Node = ("load", k)
        if t.dtype == dtype:
            return node, t.mag, t.err
        if dtype in INT_DTYPES and t.err > 0:
            # Computes share the program's dtype, so an int compute never reads an inexact float
            # tensor; a cast here would be discontinuous, so fall back to a constant.
            return ("const", 1), 1.0, 0.0
        if dtype == "float16" and t.mag > 1000:   # would overflow / lose the integer part
            if t.dtype in INT_DTYPES:
                return ("cast", dtype, t.dtype, ("bin", "mod", node, ("const", 97))), 96.0, 0.0
            return ("cast", dtype, t.dtype, ("un", "tanh", node)), 1.0, t.err + 2 * EPS[t.dtype] + EPS[dtype]
        rounding = 0.0 if t.err == 0 else EPS[dtype] * t.mag   # rounding an exact value is deterministic
        return ("cast", dtype, t.dtype, node), t.mag, t.err + rounding

    def unary(self, dtype: str, avail: tuple[int, ...], depth: int, must: int | None) -> Gen:
        names = list(UNARY) if dtype in FLOAT_DTYPES else list(INT_UNARY)
        name = self.rng.choice(names)
        arg, mag, err = self.expr(dtype, avail, depth - 1, must)
        if UNARY[name][2] and err > 0:
            name = "abs"
        bound, lipschitz, _ = UNARY[name]
        out = bound(mag)
        prop = math.sqrt(err) if lipschitz is None else lipschitz(mag) * err
        rounding = 0.0 if name in ("abs", "neg", "floor", "ceil") else 2 * EPS[dtype] * max(out, 1.0)
        return ("un", name, arg), out, prop + rounding

    def binary(self, dtype: str, avail: tuple[int, ...], depth: int, must: int | None) -> Gen:
        is_int = dtype in INT_DTYPES
        op = self.rng.choice(("add", "sub", "mul", "max", "min", "div", "mod") if is_int else
                             ("add", "sub", "mul", "max", "min", "div"))
        a, ma, ea = self.expr(dtype, avail, depth - 1, must)
        if is_int and op in ("div", "mod"):
            c = self.rng.choice((2, 3, 7))
            return self.bounded(dtype, ("bin", op, a, ("const", c)),
                                ma / c + 1 if op == "div" else c - 1.0, 0.0)
        b, mb, eb = self.expr(dtype, avail, depth - 1, None)
        if is_int and op == "mul" and ma * mb > _LIMIT[dtype]:
            # wrap the operands, not the product: the product itself would overflow
            a, b, ma, mb = ("bin", "mod", a, ("const", 97)), ("bin", "mod", b, ("const", 97)), 96.0, 96.0
        mag = {"add": ma + mb, "sub": ma + mb, "mul": ma * mb, "max": max(ma, mb), "min": max(ma, mb),
               "div": ma}[op]
        err = {"add": ea + eb, "sub": ea + eb, "mul": ea * mb + eb * ma + ea * eb, "max": max(ea, eb),
               "min": max(ea, eb), "div": ea + eb * ma}[op]
        if op not in ("max", "min"):
            err += EPS[dtype] * mag * (2 if op == "div" else 1)
        return self.bounded(dtype, ("bin", op, a, b), mag, err)

    def select(self, dtype: str, avail: tuple[int, ...], depth: int, must: int | None) -> Gen:
        # Compare exact values only (see the module docstring).
        ca = self.leaf(dtype, avail, None, exact=True)
        cb = self.leaf(dtype, avail, None, exact=True)
        if ca[2] or cb[2]:
            ca, cb = (("const", 0), 0.0, 0.0), (("const", 1), 1.0, 0.0)
        t, mt, et = self.expr(dtype, avail, depth - 1, must)
        f, mf, ef = self.expr(dtype, avail, depth - 1, None)
        return ("sel", self.rng.choice(CMPS), ca[0], cb[0], t, f), max(mt, mf), max(et, ef)

    def cast_roundtrip(self, dtype: str, avail: tuple[int, ...], depth: int, must: int | None) -> Gen:
        arg, mag, err = self.expr(dtype, avail, depth - 1, must)
        if dtype in INT_DTYPES:
            if mag > 1000:
                arg, mag = ("bin", "mod", arg, ("const", 97)), 96.0
            via = self.rng.choice(("float32", "float64", "float16"))
            return ("cast", dtype, via, ("cast", via, dtype, arg)), mag, 0.0
        exact_ok = err == 0 and mag < 1000
        via = self.rng.choice(FLOAT_DTYPES + ("int32",) if exact_ok else FLOAT_DTYPES)
        if via == "float16" and mag > 1000:
            via = "float32"
        # Rounding an exact value gives the same result in the kernel and the reference.
        rounding = 0.0 if err == 0 else EPS[via] * mag
        return ("cast", dtype, via, ("cast", via, dtype, arg)), mag, err + rounding

    def bounded(self, dtype: str, node: Node, mag: float, err: float) -> Gen:
        if mag <= _LIMIT[dtype]:
            return node, mag, err
        if dtype in INT_DTYPES:
            return ("bin", "mod", node, ("const", 97)), 96.0, 0.0
        return ("un", "tanh", node), 1.0, err + 2 * EPS[dtype]

    # -- tensors ---------------------------------------------------------------------------------
    def add_input(self, dtype: str) -> None:
        mag = 2.0 if dtype in FLOAT_DTYPES else 8.0
        self.tensors.append(TensorSpec(f"in{len(self.tensors)}", self.ordered_subset(), dtype, mag=mag))

    def input_symbols(self) -> set[str]:
        return ({d for t in self.tensors if t.is_input for d in (self.dims[a] for a in t.axes)
                 if isinstance(d, str)})

    def add_compute(self, dtype: str) -> None:
        k = len(self.tensors) - 1 if self.rng.random() < 0.6 else self.rng.randrange(len(self.tensors))
        primary = self.tensors[k]
        reduce = None
        if len(primary.axes) >= 2 and self.rng.random() < 0.4:
            r = self.rng.choice(primary.axes)
            axes = tuple(a for a in primary.axes if a != r)
            if self.rng.random() < 0.3:
                axes = tuple(self.rng.sample(axes, len(axes)))
            reduce = (self.rng.choice(REDUCE_KINDS), r)
            avail = axes + (r,)
        else:
            axes = primary.axes
            if self.rng.random() < 0.3:
                axes = tuple(self.rng.sample(axes, len(axes)))       # transpose
            # Broadcast to a new axis; a symbol must be bound by some input shape (kernels infer
            # symbolic dims from inputs only).
            known = self.input_symbols()
            extra = [a for a in range(len(self.dims)) if a not in axes
                     and (not isinstance(self.dims[a], str) or self.dims[a] in known)]
            if extra and self.rng.random() < 0.25:
                pos = self.rng.randint(0, len(axes))
                axes = axes[:pos] + (self.rng.choice(extra),) + axes[pos:]
            avail = axes
        body, mag, err = self.expr(dtype, avail, self.rng.randint(1, 3), must=k)
        if reduce is not None:
            body, mag, err = self.reduce_body(dtype, body, mag, err, reduce)
        err += EPS[dtype] * mag if err else 0.0   # the store rounds (exact values stay exact)
        self.tensors.append(TensorSpec(f"t{len(self.tensors)}", axes, dtype, body, reduce, mag, err))

    def reduce_body(self, dtype: str, body: Node, mag: float, err: float, reduce: tuple[str, int]) -> Gen:
        kind, r = reduce
        n = self.extent_bound(r)
        if kind in ("max", "min"):
            return body, mag, err
        is_int = dtype in INT_DTYPES
        if kind == "sum":
            if mag * n > _LIMIT[dtype]:
                body, mag, err = self.bounded(dtype, body, math.inf, err)
            # every partial sum rounds (the accumulator is the output tensor)
            return body, mag * n, 0.0 if is_int else n * err + n * EPS[dtype] * max(mag, 1.0) * n
        if mag > 1.0 and mag ** n > _LIMIT[dtype]:
            if is_int:
                # in {-1, 0, 1}
                body, mag = ("bin", "div", ("bin", "mod", body, ("const", 3)), ("const", 2)), 1.0
            else:
                body, mag, err = ("un", "tanh", body), 1.0, err + 2 * EPS[dtype]
        total = max(mag ** n, 1.0)
        return body, total, 0.0 if is_int else n * err * max(mag, 1.0) ** (n - 1) + n * EPS[dtype] * total


def generate_program(rng: random.Random) -> ProgramSpec:
    """A random, valid program: 1-3 axes (some symbolic), 1-2 inputs, 1-4 computes, whose
    symbolic dims are all bound by input shapes (compiled kernels infer them from inputs)."""
    while True:
        spec = _generate_once(rng)
        if symbols_bound_by_inputs(spec):
            return spec


def _generate_once(rng: random.Random) -> ProgramSpec:
    g = _Gen(rng)
    g.make_dims()
    main = rng.choices(("float32", "float16", "int32", "int64", "float64"), weights=(45, 20, 15, 10, 10))[0]
    for _ in range(rng.randint(1, 2)):
        g.add_input(main if rng.random() < 0.8 else rng.choice(FLOAT_DTYPES + INT_DTYPES))
    n_inputs = len(g.tensors)
    for _ in range(rng.randint(1, 4)):
        g.add_compute(main)
    spec = ProgramSpec(tuple(g.dims), tuple(g.tensors), (), tuple(g.symbols))
    used = consumers(spec)
    sinks = [k for k in range(n_inputs, len(g.tensors)) if not used[k]]
    extra = [k for k in range(n_inputs, len(g.tensors) - 1) if used[k] and rng.random() < 0.2]
    return prune(ProgramSpec(spec.dims, spec.tensors, tuple(sorted(set(sinks + extra))), spec.symbols))


def symbols_bound_by_inputs(spec: ProgramSpec) -> bool:
    """Every symbol of every tensor's shape appears in some input's shape."""
    def syms(t: TensorSpec) -> set[str]:
        return {d for d in (spec.dims[a] for a in t.axes + ((t.reduce[1],) if t.reduce else ()))
                if isinstance(d, str)}
    bound = set().union(*(syms(t) for t in spec.tensors if t.is_input))
    return all(syms(t) <= bound for t in spec.tensors)


# ---------------------------------------------------------------------------------------------
# Structure helpers (also used by shrinking)
# ---------------------------------------------------------------------------------------------
def loads_of(node: Node | None) -> set[int]:
    """Tensor indices an expression tree loads."""
    if node is None or not isinstance(node, tuple):
        return set()
    if node[0] == "load":
        return {node[1]}
    out: set[int] = set()
    for child in node[1:]:
        if isinstance(child, tuple):
            out |= loads_of(child)
    return out


def consumers(spec: ProgramSpec) -> list[bool]:
    used = [False] * len(spec.tensors)
    for t in spec.tensors:
        for k in loads_of(t.body):
            used[k] = True
    return used


def prune(spec: ProgramSpec) -> ProgramSpec:
    """Drop tensors no output needs (renumbering loads) and symbols no axis uses."""
    live: set[int] = set()
    stack = list(spec.outputs)
    while stack:
        k = stack.pop()
        if k not in live:
            live.add(k)
            stack.extend(loads_of(spec.tensors[k].body))
    keep = sorted(live)
    renum = {old: new for new, old in enumerate(keep)}
    tensors = tuple(_renumber(spec.tensors[k], renum, new) for new, k in enumerate(keep))
    symbols = tuple(s for s in spec.symbols if s in spec.dims)
    return ProgramSpec(spec.dims, tensors, tuple(renum[k] for k in spec.outputs), symbols)


def _renumber(t: TensorSpec, renum: dict[int, int], new_index: int) -> TensorSpec:
    def walk(node: Any) -> Any:
        if not isinstance(node, tuple):
            return node
        if node[0] == "load":
            return ("load", renum[node[1]])
        return tuple(walk(x) for x in node)
    prefix = "in" if t.is_input else "t"
    return TensorSpec(f"{prefix}{new_index}", t.axes, t.dtype, walk(t.body), t.reduce, t.mag, t.err)


def random_bindings(spec: ProgramSpec, rng: random.Random, count: int = 2) -> list[dict[str, int]]:
    """`count` distinct-ish bindings of the symbols (one empty binding for static programs)."""
    if not spec.symbols:
        return [{}]
    out = [{s: rng.choice((1, 2, 3, 5, 8, SYM_UPPER)) for s in spec.symbols} for _ in range(count)]
    return [dict(b) for b in {tuple(sorted(b.items())) for b in out}]


def shape_of(spec: ProgramSpec, t: TensorSpec, binding: dict[str, int]) -> tuple[int, ...]:
    return tuple(binding[d] if isinstance(d, str) else d for d in (spec.dims[a] for a in t.axes))


def random_inputs(spec: ProgramSpec, binding: dict[str, int],
                  rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Inputs keyed by tensor name: floats uniform in [-2, 2], ints in [-8, 8]."""
    out = {}
    for t in spec.tensors:
        if not t.is_input:
            continue
        shape = shape_of(spec, t, binding)
        if t.dtype in FLOAT_DTYPES:
            out[t.name] = rng.uniform(-2.0, 2.0, shape).astype(t.dtype)
        else:
            out[t.name] = rng.integers(-8, 9, shape).astype(t.dtype)
    return out
