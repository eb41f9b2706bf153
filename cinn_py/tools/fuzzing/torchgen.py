"""Random torch functions for the torch backend: stride-sensitive ones (`python -m cinn_py.tools.fuzz
--torch-strides`) and, with `values=True` (`--torch-values`), value-sensitive ones.

A case is a Python function of one to three strided tensors (contiguous, permuted, expanded,
narrowed or stepped views: `make_inputs`) that chains views (permute, transpose, t, expand,
slices with and without a step, select, unsqueeze, flatten, reshape, view) with ops cinn-py
converts (add, mul, neg, exp, tanh, sigmoid, relu, sum, mean, softmax, matmul) and ops it does not
(`torch.special.erfcx`, which runs eagerly between partitions) or a graph break, and returns one to
three of its values. The generator runs every line eagerly as it writes it, so every case is valid
in eager PyTorch (a `view` that eager refuses is written as `reshape`).

`check(case)` runs the function eagerly and compiled (`torch.compile(backend="cinn_py",
options={"strict": True})`, a quarter of the cases with `dynamic=True`) and compares each output:
shape, dtype, values (`torch.testing.assert_close`, default tolerances: the backend's math is
exact by default; where they are exceeded, both results are compared with a float64 reference and
the backend may be off by twice eager's own error, `as_accurate_as_eager`), strides (`.stride()` of
every dim longer than 1, where the output has elements: torch's fake tensors may stride size-1 dims
otherwise than eager), and `view(-1)` and a view merging the last two dims, attempted exactly when
eager's succeeds (a view that depends on eager's layout must work, and give the same elements).

`values=True` cases build their inputs with NaN, +-inf, -0.0 and 0.0 at random places (`sp`), and
add ops whose result depends on them as torch defines it: relu/clamp/hardtanh/maximum/minimum/amax/
amin/where (NaN propagates), division by tensors holding zeros, sqrt/log of negatives, and
data-dependent indexing (index_select, gather, x[idx], embedding) whose index may be out of range:
where eager raises, the case ends with that line and the compiled function must raise too (an
IndexError or RuntimeError, as eager); elsewhere outputs are compared with NaN positions
(`assert_close(..., equal_nan=True)`).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

_MAX_DIM = 4


@dataclass(frozen=True)
class TorchCase:
    """One generated function: its inputs' construction, its body and its returned values."""

    index: int
    seed: int
    inputs: tuple[str, ...]
    body: tuple[str, ...]
    outputs: tuple[str, ...]
    dynamic: bool
    values: bool = False
    """Special input values and value-sensitive ops (see the module doc)."""
    expects_error: bool = False
    """Eager raises at the last line (an out-of-range index): the compiled function must raise too."""

    def source(self) -> str:
        """A runnable definition of `make_inputs()` and `f(...)`."""
        args = ", ".join(f"a{k}" for k in range(len(self.inputs)))
        lines = ["import torch", "", ""]
        lines += _SPECIALS_SOURCE.splitlines() + ["", ""] if self.values else []
        lines += ["def make_inputs():", f"    g = torch.Generator().manual_seed({self.seed})"]
        lines += [f"    a{k} = {expr}" for k, expr in enumerate(self.inputs)]
        lines += [f"    return [{args}]", "", "", f"def f({args}):"]
        lines += [f"    {line}" for line in self.body]
        lines.append(f"    return ({', '.join(self.outputs)},)")
        return "\n".join(lines) + "\n"

    def script(self) -> str:
        """The reproducer: the function, then eager vs the backend."""
        if self.values:
            flag = "--torch-values"
            return self.source() + (
                f"\n\n# reproduce: python -m cinn_py.tools.fuzz {flag} --seed <seed> --case {self.index}\n"
                "x = make_inputs()\n"
                "compiled = torch.compile(f, backend='cinn_py', "
                f"dynamic={self.dynamic}, options={{'strict': True}})\n"
                + ("try:\n    f(*x)\nexcept (IndexError, RuntimeError) as exc:\n"
                   "    print('eager raises', exc)\n"
                   "compiled(*x)  # must raise as well\n" if self.expects_error else
                   "for g, w in zip(compiled(*x), f(*x)):\n"
                   "    torch.testing.assert_close(g, w, equal_nan=True)\n"))
        return self.source() + (
            f"\n\nx = make_inputs()\nwant = f(*x)  # (not clones: a clone of an expanded input is dense)\n"
            f"got = torch.compile(f, backend='cinn_py', dynamic={self.dynamic}, "
            f"options={{'strict': True}})(*x)\n"
            "for g, w in zip(got, want):  # strides of dims longer than 1, as `check`\n"
            "    torch.testing.assert_close(g, w)\n"
            "    assert w.numel() == 0 or [s for n, s in zip(g.shape, g.stride()) if n != 1] == "
            "[s for n, s in zip(w.shape, w.stride()) if n != 1]\n")


_SPECIALS_SOURCE = '''def sp(t, g):
    """t with NaN, +-inf, -0.0 or 0.0 at about a fifth of its elements (drawn from g)."""
    specials = torch.tensor([float("nan"), float("inf"), float("-inf"), -0.0, 0.0])
    which = torch.randint(0, 5, t.shape, generator=g)
    return torch.where(torch.rand(t.shape, generator=g) < 0.2, specials[which], t)'''


class _Writer:
    """Writes lines of a function while running them eagerly (their values give the shapes)."""

    def __init__(self, rng: random.Random, env: dict[str, Any]) -> None:
        self.rng = rng
        self.env = env
        self.lines: list[str] = []
        self.values: list[str] = list(k for k in env if k.startswith("a"))

    def emit_raising(self, expr: str) -> bool:
        """Keep `name = expr` as the case's last line when eager raises on it (an out-of-range
        index); True when it did."""
        import torch  # noqa: PLC0415  # pyright: ignore[reportMissingImports]

        try:
            eval(expr, {"torch": torch}, self.env)  # noqa: S307 - our own generated expression
        except (IndexError, RuntimeError):
            self.lines.append(f"v{len(self.lines)} = {expr}")
            return True
        except (ValueError, TypeError):
            return False
        return False

    def emit(self, expr: str) -> str | None:
        """Run `name = expr`; keep the line when eager accepts it."""
        import torch  # noqa: PLC0415  # pyright: ignore[reportMissingImports]

        name = f"v{len(self.lines)}"
        try:
            value = eval(expr, {"torch": torch}, self.env)  # noqa: S307 - our own generated expression
        except (RuntimeError, IndexError, ValueError, TypeError):
            return None
        if not isinstance(value, torch.Tensor) or not 0 < value.numel() <= 4096:
            return None  # (an empty value would leave later slices and selects nothing to pick)
        self.env[name] = value
        self.lines.append(f"{name} = {expr}")
        self.values.append(name)
        return name


def _shape(rng: random.Random, rank: int) -> list[int]:
    return [rng.choice((1, 2, 3, 4, 5)) for _ in range(rank)]


def _input(rng: random.Random, values: bool = False) -> str:
    """An expression building a strided input tensor (`g` is the case's generator; with `values`,
    its base tensor holds special values, `sp`)."""
    expr = _strided_input(rng)
    if not values:
        return expr
    end = expr.index("generator=g)") + len("generator=g)")
    return f"sp({expr[:end]}, g){expr[end:]}"


def _strided_input(rng: random.Random) -> str:
    shape = _shape(rng, rng.randint(1, _MAX_DIM))
    kind = rng.choice(("contiguous", "permuted", "expanded", "narrowed", "stepped"))
    if kind == "permuted" and len(shape) > 1:
        perm = list(range(len(shape)))
        rng.shuffle(perm)
        inverse = [perm.index(k) for k in range(len(shape))]
        return f"torch.randn({[shape[p] for p in perm]}, generator=g).permute({inverse})"
    if kind == "expanded":
        small = [1 if rng.random() < 0.5 else n for n in shape]
        return f"torch.randn({small}, generator=g).expand({shape})"
    if kind == "narrowed":
        d = rng.randrange(len(shape))
        big = list(shape)
        big[d] += rng.randint(1, 3)
        return f"torch.randn({big}, generator=g).narrow({d}, {big[d] - shape[d]}, {shape[d]})"
    if kind == "stepped":
        d = rng.randrange(len(shape))
        big = list(shape)
        big[d] *= 2
        return f"torch.randn({big}, generator=g)[{':, ' * d}::2]"
    return f"torch.randn({shape}, generator=g)"


def _view(rng: random.Random, v: str, shape: list[int]) -> str:
    rank = len(shape)
    choices = ["unsqueeze", "reshape", "view", "flatten"]
    if rank >= 2:
        choices += ["permute", "transpose", "transpose"]
    if rank == 2:
        choices.append("t")
    if rank >= 1:
        choices += ["slice", "step", "select", "expand"]
    kind = rng.choice(choices)
    d = rng.randrange(rank) if rank else 0
    if kind == "unsqueeze":
        return f"{v}.unsqueeze({rng.randint(-rank - 1, rank)})"
    if kind in ("reshape", "view"):
        return f"{v}.{kind}({_regrouped(rng, shape)})"
    if kind == "flatten":
        return f"{v}.flatten({rng.randrange(rank)})" if rank else f"{v}.flatten()"
    if kind == "permute":
        perm = list(range(rank))
        rng.shuffle(perm)
        return f"{v}.permute({perm})"
    if kind == "transpose":
        return f"{v}.transpose({rng.randrange(rank)}, {rng.randrange(-rank, rank)})"
    if kind == "t":
        return f"{v}.t()"
    if kind == "slice":
        start = rng.randrange(shape[d])
        return f"{v}[{':, ' * d}{start}:{rng.randint(start + 1, shape[d])}]"
    if kind == "step":
        return f"{v}[{':, ' * d}{rng.randrange(2)}::2]"
    if kind == "select":
        return f"{v}.select({d}, {rng.randrange(-shape[d], shape[d])})"
    sizes = [rng.choice((2, 3)) if n == 1 else n for n in shape]
    return f"{v}.expand({[rng.choice((2, 3))] + sizes if rng.random() < 0.3 else sizes})"


def _regrouped(rng: random.Random, shape: list[int]) -> list[int]:
    """A shape of the same number of elements: adjacent dims merged, or one split, or -1."""
    if rng.random() < 0.25 or not shape:
        return [-1]
    out = list(shape)
    if len(out) >= 2 and rng.random() < 0.5:
        k = rng.randrange(len(out) - 1)
        out[k:k + 2] = [out[k] * out[k + 1]]
        return out
    k = rng.randrange(len(out))
    factor = next((f for f in (2, 3) if out[k] % f == 0 and out[k] > f), None)
    if factor is None:
        return out[:k] + [1] + out[k:]
    return out[:k] + [factor, out[k] // factor] + out[k + 1:]


def _compute(rng: random.Random, w: _Writer, v: str, shape: list[int]) -> str:
    rank = len(shape)
    kind = rng.choice(("add", "mul", "neg", "exp", "tanh", "sigmoid", "relu", "sum", "mean",
                       "softmax", "matmul",
                       "eager_op", "eager_op", "binary"))
    d = rng.randrange(rank) if rank else 0
    if kind == "add":
        return f"{v} + {rng.choice((1.0, 0.5, -2.0))}"
    if kind == "mul":
        return f"{v} * {rng.choice((2.0, 0.5, -1.5))}"
    if kind == "neg":
        return f"-{v}"
    if kind in ("exp", "tanh", "sigmoid", "relu"):
        return f"torch.{kind}({v})"
    if kind in ("sum", "mean") and rank:
        return f"{v}.{kind}({d}, keepdim={rng.random() < 0.5})"
    if kind == "softmax" and rank:
        return f"torch.softmax({v}, {d})"
    if kind == "matmul" and rank >= 2:
        return f"{v} @ {v}.transpose(-1, -2)"
    if kind == "binary":
        partner = rng.choice(w.values)
        return f"{v} * {partner} + {v}" if tuple(w.env[partner].shape) == tuple(shape) else f"{v} - {partner}"
    return f"torch.special.erfcx(torch.tanh({v}))"  # no converter (erfinv has one since 17d5df2)


def generate(seed: int, index: int, values: bool = False) -> TorchCase:
    """The case `index` of a run with `seed` (deterministic); `values`: see the module doc."""
    import torch  # noqa: PLC0415  # pyright: ignore[reportMissingImports]

    rng = random.Random(f"cinn-py-fuzz-torch-{'values' if values else 'strides'}:{seed}:{index}")
    inputs = tuple(_input(rng, values) for _ in range(rng.randint(1, 3)))
    input_seed = rng.randrange(2 ** 31)
    g = torch.Generator().manual_seed(input_seed)
    env: dict[str, Any] = {}
    if values:
        exec(compile(_SPECIALS_SOURCE, "<sp>", "exec"), {"torch": torch}, env)  # noqa: S102 - our own helper
    for k, expr in enumerate(inputs):
        env[f"a{k}"] = eval(expr, {"torch": torch, "g": g, "sp": env.get("sp")})  # noqa: S307 - ours
    env.pop("sp", None)
    w = _Writer(rng, env)
    expects_error = False
    steps = rng.randint(3, 9)
    while len(w.lines) < steps:
        if rng.random() < 0.08 and w.lines and not w.lines[-1].startswith("torch._dynamo"):
            w.lines.append("torch._dynamo.graph_break()")
            continue
        v = rng.choice(w.values[-3:])
        shape = list(w.env[v].shape)
        if values and rng.random() < 0.12 and shape:
            expr = _indexing(rng, v, shape)
            if w.emit_raising(expr):  # returned below: a dead read would be dropped by any compiler
                expects_error = True
                break
            w.emit(expr)
            continue
        roll = rng.random()
        expr = _view(rng, v, shape) if roll < (0.3 if values else 0.5) else \
            _value_op(rng, w, v, shape) if values and roll < 0.7 else _compute(rng, w, v, shape)
        w.emit(expr)
    made = [v for v in w.values if v.startswith("v") and v in w.env] or w.values
    outputs = [made[-1]] + rng.sample(made[:-1], min(len(made) - 1, rng.randint(0, 2)))
    if expects_error:
        outputs = [w.lines[-1].split(" = ")[0]] + outputs[:2]
    return TorchCase(index, input_seed, inputs, tuple(w.lines), tuple(outputs), rng.random() < 0.25, values,
                     expects_error)


def _value_op(rng: random.Random, w: _Writer, v: str, shape: list[int]) -> str:
    """An op whose result depends on NaN, infinities, signed zeros or zero divisors (torch's rules)."""
    rank = len(shape)
    d = rng.randrange(rank) if rank else 0
    same = [p for p in w.values if tuple(w.env[p].shape) == tuple(shape)]
    partner = rng.choice(same) if same else v
    kind = rng.choice(("relu", "clamp", "hardtanh", "maximum", "minimum", "amax", "amin", "where", "div",
                       "div_zero", "sqrt", "log", "abs"))
    if kind == "relu":
        return f"torch.relu({v})"
    if kind == "clamp":
        return f"torch.clamp({v}, {rng.choice((-1.0, -0.5))}, {rng.choice((0.5, 1.0))})"
    if kind == "hardtanh":
        return f"torch.nn.functional.hardtanh({v})"
    if kind in ("maximum", "minimum"):
        return f"torch.{kind}({v}, {partner})"
    if kind in ("amax", "amin") and rank:
        return f"{v}.{kind}({d}, keepdim={rng.random() < 0.5})"
    if kind == "where":
        return f"torch.where({v} > 0, {v}, {partner} * 2.0)"
    if kind == "div":
        return f"{v} / {partner}"
    if kind == "div_zero":
        return f"{v} / ({partner} * 0.0)"
    if kind in ("sqrt", "log", "abs"):
        return f"torch.{kind}({v})"
    return f"torch.relu({v})"


def _indexing(rng: random.Random, v: str, shape: list[int]) -> str:
    """A data-dependent read whose index may be out of range (about one case in three)."""
    rank = len(shape)
    d = rng.randrange(rank)
    n = shape[d]
    count = rng.randint(1, 4)
    bad = rng.random() < 0.35
    index = [rng.randrange(n) for _ in range(count)]
    if bad:
        index[rng.randrange(count)] = rng.choice((n, n + 3, -n - 1, 2 ** 31 + 5))
    kind = rng.choice(("index_select", "subscript", "gather", "embedding"))
    if kind == "index_select":
        return f"torch.index_select({v}, {d}, torch.tensor({index}))"
    if kind == "subscript":
        return f"{v}[{':, ' * d}torch.tensor({index})]"
    if kind == "gather":
        shape_i = [1 if k == d else rng.randint(1, shape[k]) for k in range(rank)]
        flat = [index[k % count] for k in range(math.prod(shape_i))]
        return f"torch.gather({v}, {d}, torch.tensor({flat}).reshape({shape_i}))"
    table = f"{v}.reshape({v}.shape[0], -1)" if rank > 1 else f"{v}.reshape(-1, 1)"
    rows = shape[0]
    if bad:
        index = [i if 0 <= i < n else rows + 2 for i in index]
    else:
        index = [rng.randrange(rows) for _ in range(count)]
    return f"torch.nn.functional.embedding(torch.tensor({index}), {table})"


def _views_of(t: Any) -> list[tuple[str, Any]]:
    views: list[tuple[str, Any]] = [("view(-1)", lambda x: x.view(-1))]
    if t.dim() >= 2:
        views.append(("view merging the last two dims", lambda x: x.view(*x.shape[:-2], -1)))
    return views


def _strides(t: Any) -> tuple[int | None, ...]:
    """The strides torch guarantees: those of dims longer than 1. A size-1 dim's stride is never
    used to address an element, and torch's fake tensors, whose strides every backend is given
    (Inductor's too), may differ there from eager (a product of a permuted [5, 4, 1, 5] tensor:
    fake strides (20, 1, 20, 4), eager (20, 1, 4, 4))."""
    return tuple(s if n != 1 else None for n, s in zip(t.shape, t.stride()))


def check(case: TorchCase) -> str | None:
    """Eager vs the backend for one case: None when they agree, else what differed."""
    import torch  # noqa: PLC0415  # pyright: ignore[reportMissingImports]

    namespace: dict[str, Any] = {}
    exec(compile(case.source(), f"<torch strides case {case.index}>", "exec"), namespace)  # noqa: S102
    args = namespace["make_inputs"]()
    torch._dynamo.reset()
    compiled = torch.compile(namespace["f"], backend="cinn_py", dynamic=case.dynamic,
                             options={"strict": True})
    if case.expects_error:
        return _check_raises(namespace["f"], compiled, args)
    want = namespace["f"](*args)
    got = compiled(*args)
    for k, (g, e) in enumerate(zip(got, want, strict=True)):
        what = f"output {k} ({case.outputs[k]})"
        if g.shape != e.shape or g.dtype != e.dtype:
            return f"{what}: {g.dtype}{list(g.shape)}, eager {e.dtype}{list(e.shape)}"
        try:
            torch.testing.assert_close(g, e, equal_nan=case.values)
        except AssertionError as exc:
            reference = _float64_reference(namespace, args)[k]
            accuracy = as_accurate_as_eager(g, e, reference)
            if accuracy is not None:
                return f"{what}: values differ: {exc}\n{accuracy}"
        if e.numel() and _strides(g) != _strides(e):
            return f"{what}: strides {g.stride()}, eager {e.stride()} (shape {list(e.shape)})"
        for label, view in _views_of(e):
            try:
                expected = view(e)
            except RuntimeError:
                continue
            try:
                got_view = view(g)
            except RuntimeError as exc:
                return f"{what}: {label} fails ({exc}) where eager's works"
            try:  # the values were compared above: the view must give the output's elements in order
                torch.testing.assert_close(got_view, g.reshape(expected.shape), rtol=0, atol=0,
                                           equal_nan=True)
            except AssertionError as exc:
                return f"{what}: {label} gives other elements than the output's: {exc}"
    return None


_ATOL, _RTOL = 1e-5, 1.3e-6
"""`torch.testing.assert_close`'s float32 tolerances."""


def _float64_reference(namespace: dict[str, Any], args: list[Any]) -> tuple[Any, ...]:
    """The case's outputs computed eagerly in float64 from the same input values."""
    return tuple(namespace["f"](*[a.double() for a in args]))


def as_accurate_as_eager(got: Any, eager: Any, reference: Any) -> str | None:
    """None when `got` is as accurate as eager against the float64 `reference`, else why not.

    Eager float32 has rounding errors too, and some ops amplify them: `exp` of a matmul's ~27
    turns its inputs' 1-ulp rounding into a 3e-6 relative error, twice `assert_close`'s float32
    rtol, whichever of two valid summation orders rounded. So the allowance at each element is
    the default tolerance plus twice eager's own worst error over the tensor, measured relative
    to the magnitude (`|e - r| / (|r| + atol)`: relative for large values, absolute in units of
    atol near zero). An op eager computes to the ulp leaves the allowance at the default; only
    the elements' error scale eager itself shows widens it, never a wrong element's size."""
    import torch  # noqa: PLC0415  # pyright: ignore[reportMissingImports]

    r = reference.detach().to(torch.float64)
    finite = eager.isfinite() & r.isfinite()  # an overflow or NaN of eager's must be matched exactly
    scale = r.abs() + _ATOL
    eager_error = torch.where(finite, (eager.detach().to(torch.float64) - r).abs() / scale, 0.0)
    error = (got.detach().to(torch.float64) - r).abs()
    eager_worst = float(eager_error.max()) if eager_error.numel() else 0.0
    allowed = _ATOL + _RTOL * r.abs() + 2.0 * eager_worst * scale
    exact = (got == eager) | (got.isnan() & eager.isnan())
    bad = ~torch.where(finite, (error <= allowed) | exact, exact)
    if not bool(bad.any()):
        return None
    k = int(bad.flatten().to(torch.int8).argmax())
    return (f"vs the float64 reference: {int(bad.sum())} element(s) beyond the allowance (the default "
            f"tolerance + 2 x eager's own worst relative error {eager_worst:.2e}); at flat index {k}: "
            f"got {float(got.flatten()[k])!r}, eager {float(eager.flatten()[k])!r}, "
            f"float64 {float(r.flatten()[k])!r}")


def _check_raises(f: Any, compiled: Any, args: list[Any]) -> str | None:
    """Eager raises on an out-of-range index: the compiled function must raise IndexError or
    RuntimeError too (not return values, not fail inside the backend)."""
    from torch._dynamo.exc import BackendCompilerFailed  # noqa: PLC0415  # pyright: ignore[reportMissingImports]

    try:
        f(*args)
    except (IndexError, RuntimeError) as exc:
        eager = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    else:
        return "the case expects eager to raise, but it returned (generator bug)"
    try:
        compiled(*args)
    except BackendCompilerFailed as exc:
        return f"eager raises {eager}; the backend failed to compile: {str(exc).splitlines()[0]}"
    except (IndexError, RuntimeError):
        return None
    return f"eager raises {eager}; the compiled function returned values"
