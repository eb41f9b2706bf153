"""Torch's symbolic sizes as cinn-py symbolic dims (`torch.compile(dynamic=True)`, `mark_dynamic`).

A graph traced with symbolic shapes describes its sizes with sympy expressions of the ShapeEnv's
symbols (`s77`, `s27*s77`); SymInt placeholders carry sizes as values. `SymbolTable` translates
them: each torch symbol becomes a `cp.sym` of the same name with torch's value range as its
bounds, `+`, `*` and integer powers become int64 expressions, an integer stays an int. What has
no cinn-py dim form (floor division, modulo, min/max, which `view(-1)` or slicing make) is
reported by `dim_reason` and the op stays in eager PyTorch.

`InputPlan` (`cinn_py.torch.input_plan`) decides how the placeholders of one partition enter its
`Program`, whose inputs must have int or bare-symbol dims (symbols bind from them at run time):

- a tensor whose dims are ints and bare symbols enters as it is;
- a dim that is a product (`s27*s77`, `2*s0`) is split into its factors (a free view of the
  contiguous tensor, `[s27, s77, s51]`) and the Program reshapes it back: the relation between
  the product and its factors survives, which later views (`[s77, s27, s51]`) rely on; where no
  input gives the factors apart (no `s27` dim or SymInt argument), the product is one fresh
  symbol (`s27_s77`) in that Program instead (`SymbolTable.plan_atoms`);
- a symbol that no input tensor has as a dim (only a SymInt placeholder says it) enters as a
  *shape carrier*: a 1-d int8 input of that length, never read, whose dim binds the symbol;
- a SymInt placeholder the graph uses as a number (`x * x.shape[-1]`) also enters as a 0-d
  int64 input holding its value (`SymIntInput.scalar`).

`InputPlan.bind` runs before every call: it binds the symbols from the tensors' dims and the
SymInt arguments, checks that every other dim and SymInt argument has the value its expression
gives (an error names the placeholder, the dim and the symbols' values), and returns the
Program's inputs. One compiled Program thus serves every size torch's guards let through.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Any

import sympy
import torch  # pyright: ignore[reportMissingImports]
from torch.fx.experimental.symbolic_shapes import statically_known_true  # pyright: ignore[reportMissingImports]

from cinn_py.diagnostics import CinnError
from cinn_py.frontend.compute import sym
from cinn_py.frontend.ops.base import Dim
from cinn_py.frontend.ops.shapes import simplify_dim
from cinn_py.ir import Expr, Var, const, int64

CARRIER_DTYPE = "int8"
_REMEMBERED = 256
"""Size signatures an `InputPlan` remembers as checked (a model sees a few shapes, not thousands)."""


class SymbolicShapeError(CinnError):
    """A symbolic size cinn-py cannot express, or a call whose sizes break what the graph assumed."""


def is_symbolic(value: Any) -> bool:
    """A torch SymInt whose value is not a known constant."""
    return isinstance(value, torch.SymInt) and not _is_number(_expr_of(value))


def _is_number(expr: Any) -> bool:
    return isinstance(expr, sympy.Integer) or isinstance(expr, int)


def _expr_of(value: Any) -> Any:
    """The simplified sympy expression of a SymInt (the ShapeEnv's replacements applied), or the
    integer torch's guards pin it to (`_pinned_value`)."""
    node = value.node
    env = getattr(node, "shape_env", None)
    if env is None:
        return node.expr
    expr = env.simplify(node.expr)
    if _is_number(expr) or isinstance(expr, sympy.Symbol):
        return expr
    pinned = _pinned_value(value)
    return expr if pinned is None else sympy.Integer(pinned)


def _pinned_value(value: Any) -> int | None:
    """The value of a compound size (`s0*s1`, `s0**2`) that torch's guards fix, or None.

    A traced op can pin a product without pinning its factors: `flat.expand(20)` of a `[s0*s1]`
    tensor guards `Eq(s0*s1, 20)`, `view(16, 3)` of `[s0, s0, 3]` guards `Eq(s0**2, 16)`. Torch
    cannot express that as a replacement of one symbol, so the graph keeps `[s0*s1]` next to `[20]`
    and cinn-py could not prove the two equal. The guards hold on every call torch lets reach the
    graph, so where they imply the expression equals its traced value, the value is the dim."""
    hint = getattr(value.node, "hint", None)
    if hint is None:  # an unbacked size (data-dependent): no traced value to compare with
        return None
    return int(hint) if statically_known_true(value == int(hint)) else None


_DIVISIONS = frozenset({"FloorDiv", "CleanDiv", "Mod", "PythonMod"})


def _is_division(expr: Any) -> bool:
    return type(expr).__name__ in _DIVISIONS


def _unsupported(expr: Any, divisions: bool = False) -> str | None:
    """Why the sympy expression `expr` has no cinn-py dim form, or None. `divisions`: floor
    division and modulo are accepted too (`SymbolTable.plan_divisions` may make them exact)."""
    if isinstance(expr, (sympy.Symbol, sympy.Integer)):
        return None
    if isinstance(expr, (sympy.Add, sympy.Mul)) or divisions and _is_division(expr):
        return next((r for r in (_unsupported(a, divisions) for a in expr.args) if r is not None), None)
    if isinstance(expr, sympy.Pow):
        exponent = expr.args[1]
        if not (isinstance(exponent, sympy.Integer) and int(exponent) >= 1):
            return f"power {expr}"
        return _unsupported(expr.args[0], divisions)
    return f"{type(expr).__name__} in {expr}"


def dim_reason(value: Any) -> str | None:
    """Why the size `value` (an int or a SymInt) cannot be a cinn-py dim, or None."""
    if not is_symbolic(value):
        return None
    table = SymbolTable()
    table.plan_divisions([value])
    expr = _expr_of(value)
    reason = _unsupported(table.substituted(expr))
    if reason is None:
        return None
    if any(_is_division(n) for n in sympy.preorder_traversal(expr)):
        reason += " (cinn-py makes a floor division exact only where torch guarantees one symbol divisible)"
    return f"symbolic dim {expr}: {reason} has no cinn-py dim form"


def _divisions_of(expr: Any) -> list[tuple[Any, int]]:
    """The floor divisions and moduli in `expr` of a multiple of one symbol by an integer that
    does not divide it yet, as (the symbol, the factor it would have to be a multiple of)."""
    found = []
    for node in sympy.preorder_traversal(expr):
        if not _is_division(node) or not isinstance(node.args[1], sympy.Integer):
            continue
        numerator: Any = node.args[0]
        coefficient, symbol = numerator.as_coeff_Mul()
        if isinstance(coefficient, sympy.Integer) and isinstance(symbol, sympy.Symbol):
            factor = int(node.args[1]) // math.gcd(int(coefficient), int(node.args[1]))
            if factor > 1:
                found.append((symbol, factor))
    return found


class SymbolTable:
    """Torch symbols -> `cp.sym` Vars for one Program (one Var per name, with torch's range).

    Floor divisions (`view(b, -1, 2)` makes `s27//2`) are made exact before translation: a symbol
    divided by `c` is replaced by `c * q` with a fresh symbol `q` (`s27_div2`) everywhere in the
    Program (`plan_divisions`), so the division cancels; `InputPlan.bind` then solves `q` from
    the input dim and refuses a size that is not a multiple of `c`."""

    def __init__(self) -> None:
        self.symbols: dict[str, Var] = {}
        self.substitutions: dict[Any, Any] = {}
        self.atoms: dict[Any, Any] = {}
        self._lower: dict[str, int] = {}
        self._shape_env: Any = None

    def plan_divisions(self, values: Sequence[Any]) -> None:
        """Choose the substitutions that make the floor divisions among the sizes `values` exact,
        where torch guarantees they are (its ShapeEnv's `divisible` facts, which its guards check:
        `view(b, -1, 2)` of `[s0, s1]` records `s0*s1 % (2*s0) == 0`). A division torch does not
        guarantee (`x[:, :n // 2]` of an odd `n` is valid) is left alone, and stays unsupported."""
        self._shape_env = self._shape_env or next(
            (v.node.shape_env for v in values if isinstance(v, torch.SymInt)), None)
        exprs = [_expr_of(v) for v in values if is_symbolic(v)]
        for _ in range(64):  # each round replaces one symbol; a partition has far fewer divisions
            found = next((d for e in exprs for d in _divisions_of(self.substituted(e))
                          if self._guaranteed(*d)), None)
            if found is None:
                return
            symbol, factor = found
            fresh = sympy.Symbol(f"{symbol}_div{factor}", integer=True, positive=True)
            lower = self._lower.get(str(symbol), _torch_range(symbol, self._shape_env)[0])
            self._lower[str(fresh)] = max(1, -(-lower // factor))
            self.substitutions = ({k: v.xreplace({symbol: factor * fresh}) for k,
                                   v in self.substitutions.items()})
            self.substitutions[symbol] = factor * fresh

    def _guaranteed(self, symbol: Any, factor: int) -> bool:
        """Whether torch knows `symbol` (after the substitutions so far) is a multiple of `factor`."""
        for fact in getattr(self._shape_env, "divisible", ()):
            a, b = (self.substituted(x) for x in fact.args)
            num, den = sympy.fraction(sympy.cancel(a / b))
            coefficient, rest = num.as_coeff_Mul()
            if (rest != symbol or not isinstance(den, sympy.Integer)
                or not isinstance(coefficient, sympy.Integer)):
                continue
            if (int(den) // math.gcd(int(den), int(coefficient))) % factor == 0:
                return True
        return False

    def plan_atoms(self, tensor_dims: Sequence[Any], symint_values: Sequence[Any]) -> None:
        """An input dim the Program cannot bind as it is becomes one fresh symbol there, bound
        from that dim as a whole: a product of symbols that the inputs never give apart (only
        `[s27*s77, 64]` tensors, no `s27` dim or SymInt argument: `s27_s77`), or any other
        expression (`s27 - 1`, the length of `x[:, 1:]`: `s27_minus_1`). Where the symbols of
        its definition are bound too, each call checks the two agree (`definitions`)."""
        dims = [self.substituted(_expr_of(d)) for d in tensor_dims if is_symbolic(d)]
        values = [self.substituted(_expr_of(v)) for v in symint_values if is_symbolic(v)]
        known = _solvable(dims + values)
        for d in dims:
            target = d.as_coeff_Mul()[1] if isinstance(d, sympy.Mul) else d
            if (isinstance(target, sympy.Symbol) or isinstance(target, sympy.Mul)
                and target.free_symbols <= known):
                continue  # bound, or split into factors that are
            if target not in self.atoms:
                self.atoms[target] = sympy.Symbol(_atom_name(target), integer=True, positive=True)

    def definitions(self) -> list[tuple[Var, Expr]]:
        """(atom, its definition in the symbols it stands for) of each atom the Program uses."""
        out = []
        for expr, atom in self.atoms.items():
            if str(atom) in self.symbols and _unsupported(expr) is None:
                definition = simplify_dim(self._translate(expr, lambda v: sym(str(v))),
                                          f"symbolic dim {expr}")
                if isinstance(definition, Expr):
                    out.append((self.symbols[str(atom)], definition))
        return out

    def facts(self) -> list[tuple[Expr, int]]:
        """The equalities torch's guards hold between a product (or power) of symbols and an int
        (`Eq(s0*s1, 20)`: `flat.expand(20)` of a `[s0*s1]` tensor), in cinn-py's form. Torch
        checks them before every call but cannot replace one symbol by them, so the graph keeps
        `[s0, s1]` inputs next to `[20]` sizes; the frontend needs them to see the two agree."""
        found = []
        for guard in getattr(self._shape_env, "guards", ()):
            pinned = _pinned_fact(self._shape_env, getattr(guard, "expr", guard))
            if pinned is None:
                continue
            expr = self.substituted(pinned[0])
            if not _is_number(expr) and _unsupported(expr) is None:
                found.append((self._translate(expr, lambda v: sym(str(v))), pinned[1]))
        return found

    def substituted(self, expr: Any) -> Any:
        exact = expr.xreplace(self.substitutions) if self.substitutions else expr
        return exact.subs(self.atoms) if self.atoms else exact

    def dim(self, value: Any) -> Dim:
        """A size (int or SymInt) as a cinn-py dim: an int, a symbol or an int64 expression."""
        if not isinstance(value, torch.SymInt):
            return int(value)
        self._shape_env = self._shape_env or value.node.shape_env
        return self.expr_dim(_expr_of(value))

    def shape(self, sizes: Sequence[Any]) -> tuple[Dim, ...]:
        return tuple(self.dim(s) for s in sizes)

    def expr_dim(self, expr: Any) -> Dim:
        exact = self.substituted(expr)
        if _is_number(exact):
            return int(exact)
        reason = _unsupported(exact)
        if reason is not None:
            raise SymbolicShapeError(f"symbolic dim {expr}: {reason} has no cinn-py dim form")
        return simplify_dim(self._translate(exact), f"symbolic dim {expr}")

    def _translate(self, expr: Any, symbol: Any = None) -> Expr:
        if isinstance(expr, sympy.Integer):
            return const(int(expr), int64)
        if isinstance(expr, sympy.Symbol):
            return (symbol or self._symbol)(expr)
        parts = [self._translate(a, symbol) for a in expr.args]
        if isinstance(expr, sympy.Add):
            return _fold(parts, lambda a, b: a + b)
        if isinstance(expr, sympy.Mul):
            return _fold(parts, lambda a, b: a * b)
        return _fold([parts[0]] * int(expr.args[1]), lambda a, b: a * b)  # Pow (checked by _unsupported)

    def _symbol(self, symbol: Any) -> Var:
        name = str(symbol)
        if name not in self.symbols:
            lower, upper = ((self._lower[name], None) if name in self._lower
                            else _torch_range(symbol, self._shape_env))
            self.symbols[name] = sym(name, lower=lower, upper=upper)
        return self.symbols[name]


def _pinned_fact(shape_env: Any, guard: Any) -> tuple[Any, int] | None:
    """(expression, int) of a guard `Eq(expression, int)` whose expression is not one symbol
    (torch turns those into replacements), else None."""
    if not isinstance(guard, sympy.Eq):
        return None
    a, b = (shape_env.simplify(x) for x in guard.args)
    expr, value = (a, b) if isinstance(b, sympy.Integer) else (b, a)
    if not isinstance(value, sympy.Integer) or _is_number(expr) or isinstance(expr, sympy.Symbol):
        return None
    return expr, int(value)


def _atom_name(expr: Any) -> str:
    """A readable identifier for an atom: `s27*s77` -> `s27_s77`, `s27 - 1` -> `s27_minus_1`."""
    text = str(expr)
    for old, new in (("**", "_pow_"), ("//", "_fdiv_"), ("*", "_"), (" - ", "_minus_"), (" + ", "_plus_"),
                     ("-", "minus_"), ("/", "_div_")):
        text = text.replace(old, new)
    text = re.sub(r"\W+", "_", text).strip("_")
    return text if text[:1].isalpha() else f"d_{text}"


def _solvable(exprs: Sequence[Any]) -> set[Any]:
    """The symbols a call can bind from sizes of these forms: bare symbols, then repeatedly the
    one unknown symbol (of degree 1) of a product (as `InputPlan.bind` solves them)."""
    known = {e for e in exprs if isinstance(e, sympy.Symbol)}
    products = [e for e in exprs if isinstance(e, sympy.Mul)]
    progress = True
    while progress:
        progress = False
        for p in products:
            unknown = [f for f in sympy.Mul.make_args(p) if f.free_symbols and not f.free_symbols <= known]
            if len(unknown) == 1 and isinstance(unknown[0], sympy.Symbol):  # (not `s0**2`)
                known.add(unknown[0])
                progress = True
    return known


def _fold(parts: list[Expr], combine: Any) -> Expr:
    out = parts[0]
    for p in parts[1:]:
        out = combine(out, p)
    return out


def _torch_range(symbol: Any, shape_env: Any) -> tuple[int, int | None]:
    """Torch's value range of `symbol` as `cp.sym` bounds (inclusive lower, exclusive upper):
    what torch's guards let through, so a kernel may assume it and checks it per call."""
    ranges = getattr(shape_env, "var_to_range", {}) if shape_env is not None else {}
    bounds = ranges.get(symbol)
    if bounds is None:
        return 1, None
    lower = _finite(bounds.lower)
    upper = _finite(bounds.upper)
    return max(1, lower if lower is not None else 1), None if upper is None else upper + 1


def _finite(value: Any) -> int | None:
    """A bound as an int; None for torch's infinities (`int_oo`, sympy's `oo`)."""
    return int(value) if isinstance(value, (int, sympy.Integer)) else None


def input_symbols(graph: Any) -> tuple[str, ...]:
    """The symbols in the sizes of the graph's placeholders (tensor dims, SymInt values), sorted."""
    found: set[str] = set()
    for p in (n for n in graph.nodes if n.op == "placeholder"):
        value = p.meta.get("val")
        sizes = ([value] if isinstance(value, torch.SymInt) else list(value.shape)
                 if isinstance(value, torch.Tensor) else [])
        found.update(str(s) for size in sizes if is_symbolic(size) for s in _expr_of(size).free_symbols)
    return tuple(sorted(found))


# -- size reads ----------------------------------------------------------------------------------------------
def read_sizes_from_inputs(graph: Any) -> int:
    """Rewrite `sym_size(t, d)` of a tensor the graph computes into Python arithmetic on the
    graph's input sizes (SymInt placeholders, dims of input tensors), where those give its
    symbols: a compiled partition computing `t` would otherwise output it only for its size
    (`view(b, -1, 2)`'s `s1//2`); a size torch's guards pin (`_pinned_value`) becomes its
    constant. Returns the number of rewritten reads."""
    symbols: dict[Any, tuple[Any, int | None]] = {}
    for p in (n for n in graph.nodes if n.op == "placeholder"):
        value = p.meta.get("val")
        sizes = [(value, None)] if isinstance(value, torch.SymInt) else \
            list(zip(value.shape, range(value.dim()))) if isinstance(value, torch.Tensor) else []
        for size, dim in sizes:
            if is_symbolic(size) and isinstance(_expr_of(size), sympy.Symbol):
                symbols.setdefault(_expr_of(size), (p, dim))
    first = next((n for n in graph.nodes if n.op != "placeholder"), None)
    rewritten = 0
    for node in list(graph.nodes):
        if (node.target is not torch.ops.aten.sym_size.int or node.args[0].op == "placeholder"
            or first is None):
            continue
        value = node.meta.get("val")
        expr = _expr_of(value) if isinstance(value, torch.SymInt) else None  # (a pinned size: an Integer)
        names = sorted(expr.free_symbols, key=str) if expr is not None else []
        if expr is None or not all(s in symbols for s in names) or _size_evaluator(expr, names) is None:
            continue
        with graph.inserting_before(first):
            reads = [_read(graph, *symbols[s]) for s in names]
            bare = bool(names) and expr == names[0]
            size = reads[0] if bare else graph.call_function(_size_function(expr, names), tuple(reads))
        size.meta["val"] = value
        node.replace_all_uses_with(size)
        graph.erase_node(node)
        rewritten += 1
    return rewritten


def _read(graph: Any, source: Any, dim: int | None) -> Any:
    """A SymInt placeholder, or a new read of dim `dim` of an input tensor."""
    if dim is None:
        return source
    read = graph.call_function(torch.ops.aten.sym_size.int, (source, dim))
    read.meta["val"] = source.meta["val"].shape[dim]
    return read


_SizeFn = Callable[[Sequence[int]], int]
_COMBINE: dict[str, Callable[[list[int]], int]] = {
    "Add": sum, "Mul": math.prod, "Pow": lambda v: v[0] ** v[1], "FloorDiv": lambda v: v[0] // v[1],
    "CleanDiv": lambda v: v[0] // v[1], "Mod": lambda v: v[0] % v[1], "PythonMod": lambda v: v[0] % v[1],
}


def _size_evaluator(expr: Any, names: list[Any]) -> _SizeFn | None:
    """`expr` as a function of the values of `names` (in order), or None for another form."""
    if isinstance(expr, sympy.Integer):
        constant = int(expr)
        return lambda _: constant
    if isinstance(expr, sympy.Symbol):
        k = names.index(expr)
        return lambda values: values[k]
    combine = _COMBINE.get(type(expr).__name__)
    parts = [_size_evaluator(a, names) for a in expr.args]
    if combine is None or any(p is None for p in parts):
        return None
    return lambda values: combine([p(values) for p in parts if p is not None])


def _size_function(expr: Any, names: list[Any]) -> Callable[..., int]:
    evaluate = _size_evaluator(expr, names)
    assert evaluate is not None

    def size(*values: int) -> int:
        return evaluate(values)

    size.__name__ = "cinn_size_" + re.sub(r"\W+", "_", str(expr)).strip("_")
    return size
