"""Torch's symbolic sizes as cinn-py symbolic dims (`torch.compile(dynamic=True)`, `mark_dynamic`).

A graph traced with symbolic shapes describes its sizes with sympy expressions of the ShapeEnv's
symbols (`s77`, `s27*s77`); SymInt placeholders carry sizes as values. `SymbolTable` translates
them: each torch symbol becomes a `cp.sym` of the same name with torch's value range as its
bounds, `+`, `*` and integer powers become int64 expressions, an integer stays an int. What has
no cinn-py dim form (floor division, modulo, min/max, which `view(-1)` or slicing make) is
reported by `dim_reason` and the op stays in eager PyTorch.

`InputPlan` decides how the placeholders of one partition enter its `Program`, whose inputs
must have int or bare-symbol dims (symbols bind from them at run time):

- a tensor whose dims are ints and bare symbols enters as it is;
- a dim that is a product (`s27*s77`, `2*s0`) is split into its factors (a free view of the
  contiguous tensor, `[s27, s77, s51]`) and the Program reshapes it back: the relation between
  the product and its factors survives, which later views (`[s77, s27, s51]`) rely on;
- a symbol that no input tensor has as a dim (only a SymInt placeholder says it) enters as a
  *shape carrier*: a 1-d int8 input of that length, never read, whose dim binds the symbol.

`InputPlan.bind` runs before every call: it binds the symbols from the tensors' dims and the
SymInt arguments, checks that every other dim and SymInt argument has the value its expression
gives (an error names the placeholder, the dim and the symbols' values), and returns the
Program's inputs. One compiled Program thus serves every size torch's guards let through.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sympy
import torch  # pyright: ignore[reportMissingImports]

from cinn_py.diagnostics import CinnError
from cinn_py.frontend.compute import sym
from cinn_py.frontend.ops.base import Dim
from cinn_py.frontend.ops.shapes import fmt_dim, simplify_dim
from cinn_py.ir import Expr, IntImm, Mul, Var, const, int64, walk
from cinn_py.symbolic.integer import as_int, eval_int

CARRIER_DTYPE = "int8"


class SymbolicShapeError(CinnError):
    """A symbolic size cinn-py cannot express, or a call whose sizes break what the graph assumed."""


def is_symbolic(value: Any) -> bool:
    """A torch SymInt whose value is not a known constant."""
    return isinstance(value, torch.SymInt) and not _is_number(_expr_of(value))


def _is_number(expr: Any) -> bool:
    return isinstance(expr, sympy.Integer) or isinstance(expr, int)


def _expr_of(value: Any) -> Any:
    """The simplified sympy expression of a SymInt (the ShapeEnv's replacements applied)."""
    node = value.node
    env = getattr(node, "shape_env", None)
    return env.simplify(node.expr) if env is not None else node.expr


def _unsupported(expr: Any) -> str | None:
    """Why the sympy expression `expr` has no cinn-py dim form, or None."""
    if isinstance(expr, (sympy.Symbol, sympy.Integer)):
        return None
    if isinstance(expr, (sympy.Add, sympy.Mul)):
        return next((r for r in map(_unsupported, expr.args) if r is not None), None)
    if isinstance(expr, sympy.Pow):
        exponent = expr.args[1]
        if not (isinstance(exponent, sympy.Integer) and int(exponent) >= 1):
            return f"power {expr}"
        return _unsupported(expr.args[0])
    return f"{type(expr).__name__} in {expr}"


def dim_reason(value: Any) -> str | None:
    """Why the size `value` (an int or a SymInt) cannot be a cinn-py dim, or None."""
    if not is_symbolic(value):
        return None
    reason = _unsupported(_expr_of(value))
    return None if reason is None else f"symbolic dim {_expr_of(value)}: {reason} has no cinn-py dim form"


class SymbolTable:
    """Torch symbols -> `cp.sym` Vars for one Program (one Var per name, with torch's range)."""

    def __init__(self) -> None:
        self.symbols: dict[str, Var] = {}

    def dim(self, value: Any) -> Dim:
        """A size (int or SymInt) as a cinn-py dim: an int, a symbol or an int64 expression."""
        if not isinstance(value, torch.SymInt):
            return int(value)
        expr = _expr_of(value)
        return self.expr_dim(expr, value.node.shape_env)

    def shape(self, sizes: Sequence[Any]) -> tuple[Dim, ...]:
        return tuple(self.dim(s) for s in sizes)

    def expr_dim(self, expr: Any, shape_env: Any = None) -> Dim:
        if _is_number(expr):
            return int(expr)
        reason = _unsupported(expr)
        if reason is not None:
            raise SymbolicShapeError(f"symbolic dim {expr}: {reason} has no cinn-py dim form")
        return simplify_dim(self._translate(expr, shape_env), f"symbolic dim {expr}")

    def _translate(self, expr: Any, shape_env: Any) -> Expr:
        if isinstance(expr, sympy.Integer):
            return const(int(expr), int64)
        if isinstance(expr, sympy.Symbol):
            return self._symbol(expr, shape_env)
        parts = [self._translate(a, shape_env) for a in expr.args]
        if isinstance(expr, sympy.Add):
            return _fold(parts, lambda a, b: a + b)
        if isinstance(expr, sympy.Mul):
            return _fold(parts, lambda a, b: a * b)
        return _fold([parts[0]] * int(expr.args[1]), lambda a, b: a * b)  # Pow (checked by _unsupported)

    def _symbol(self, symbol: Any, shape_env: Any) -> Var:
        name = str(symbol)
        if name not in self.symbols:
            lower, upper = _torch_range(symbol, shape_env)
            self.symbols[name] = sym(name, lower=lower, upper=upper)
        return self.symbols[name]


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


# -- how a partition's placeholders enter the Program ----------------------------------------------------------
@dataclass(frozen=True)
class TensorInput:
    """A tensor placeholder: its dims (cinn-py's form of torch's) and the shape it enters with
    (`dims` with every product split into its factors)."""

    name: str
    dims: tuple[Dim, ...]
    factored: tuple[Dim, ...]

    @property
    def is_factored(self) -> bool:
        return len(self.factored) != len(self.dims)


@dataclass(frozen=True)
class SymIntInput:
    """A SymInt placeholder: the value its expression says (an int when torch specialised it)."""

    name: str
    value: Dim


def factors(d: Dim) -> tuple[Dim, ...]:
    """A product dim as its factors (`s27*s77` -> `(s27, s77)`, `2*s0` -> `(2, s0)`); any other dim
    as itself. Splitting one dim of a contiguous tensor into factors, in any order, is a view."""
    if isinstance(d, IntImm):
        return (int(d.value),)
    if isinstance(d, Mul):
        return factors(d.a) + factors(d.b)
    return (d,)


def check_bindable(graph: str, t: TensorInput) -> None:
    """Program inputs take int and bare-symbol dims only: a dim such as `s0 + 1` cannot enter."""
    bad = [d for d in t.factored if not isinstance(d, (int, Var))]
    if bad:
        raise SymbolicShapeError(f"{graph}: input '{t.name}' has dim {bad[0]}, neither a symbol nor a product of "
                                 "symbols: cinn-py binds symbolic dims from input dims of that form only")


@dataclass(frozen=True)
class InputPlan:
    """The Program inputs of one partition (see the module docstring) and the per-call binding."""

    graph: str
    inputs: tuple[TensorInput | SymIntInput, ...]
    carriers: tuple[Var, ...]
    """Symbols bound by no tensor dim: one int8 input of each one's length, after the tensors."""
    symbols: tuple[Var, ...]

    @staticmethod
    def make(graph: str, inputs: Sequence[TensorInput | SymIntInput], needed: Sequence[Var]) -> InputPlan:
        """The plan for `inputs` (checked with `check_bindable`) and the symbols the Program uses."""
        tensors = [i for i in inputs if isinstance(i, TensorInput)]
        bound = {d.name for t in tensors for d in t.factored if isinstance(d, Var)}
        carriers = tuple(s for s in needed if s.name not in bound)
        given = {i.value.name for i in inputs if isinstance(i, SymIntInput) and isinstance(i.value, Var)}
        unbound = [s.name for s in carriers if s.name not in given]
        if unbound:
            raise SymbolicShapeError(f"{graph}: symbolic dim(s) {unbound} occur only inside larger dim "
                                     "expressions: no input tensor dim or SymInt argument gives their value")
        return InputPlan(graph, tuple(inputs), carriers, tuple(needed))

    @property
    def is_static(self) -> bool:
        return not self.symbols

    def bind(self, args: Sequence[Any]) -> list[Any]:
        """The Program's inputs for one call's arguments (tensors and ints, in placeholder order):
        symbols bound, every dim and SymInt argument checked against its expression."""
        if len(args) != len(self.inputs):
            raise SymbolicShapeError(f"{self.graph}: {len(self.inputs)} arguments expected, got {len(args)}")
        env: dict[str, int] = {}
        where: dict[str, str] = {}
        for spec, arg in zip(self.inputs, args):
            for label, d, actual in _sizes(spec, arg):
                if isinstance(d, Var):
                    self._bind(env, where, d, actual, label)
        for spec, arg in zip(self.inputs, args):
            for label, d, actual in _sizes(spec, arg):
                self._check(env, where, d, actual, label)
        tensors = [_factored(a, spec, env) for spec, a in zip(self.inputs, args) if isinstance(spec, TensorInput)]
        device = next((t.device for t in tensors), torch.device("cpu"))
        return tensors + [torch.empty(env[s.name], dtype=torch.int8, device=device) for s in self.carriers]

    def _bind(self, env: dict[str, int], where: dict[str, str], s: Var, actual: int, label: str) -> None:
        if s.name in env and env[s.name] != actual:
            raise SymbolicShapeError(f"{self.graph}: {label} is {actual}, but symbolic dim '{s.name}' is "
                                     f"{env[s.name]} from {where[s.name]}; the graph was traced with them equal")
        _check_range(self.graph, s, actual, label)
        env.setdefault(s.name, actual)
        where.setdefault(s.name, label)

    def _check(self, env: dict[str, int], where: dict[str, str], d: Dim, actual: int, label: str) -> None:
        expected = d if isinstance(d, int) else eval_int(d, env)
        if expected == actual:
            return
        names = sorted({n.name for n in walk(d) if isinstance(n, Var)}) if isinstance(d, Expr) else []
        detail = ", ".join(f"{n}={env[n]} (from {where[n]})" for n in names)
        raise SymbolicShapeError(f"{self.graph}: {label} is {actual}, but the graph was traced with it equal to "
                                 f"{fmt_dim(d)} = {expected}" + (f" with {detail}" if detail else ""))


def _sizes(spec: TensorInput | SymIntInput, arg: Any) -> list[tuple[str, Dim, int]]:
    """(label, expected dim, actual size) of one argument."""
    if isinstance(spec, SymIntInput):
        if isinstance(arg, torch.Tensor) or not isinstance(arg, int):
            raise SymbolicShapeError(f"SymInt argument '{spec.name}' must be an int, got {type(arg).__name__}")
        return [(f"SymInt argument '{spec.name}'", spec.value, int(arg))]
    if not isinstance(arg, torch.Tensor) or arg.dim() != len(spec.dims):
        shape = tuple(arg.shape) if isinstance(arg, torch.Tensor) else type(arg).__name__
        raise SymbolicShapeError(f"input '{spec.name}' must be a tensor of rank {len(spec.dims)}, got {shape}")
    return [(f"input '{spec.name}' dim {k}", d, int(n)) for k, (d, n) in enumerate(zip(spec.dims, arg.shape))]


def _check_range(graph: str, s: Var, actual: int, label: str) -> None:
    lower = as_int(s.lower_bound) if s.lower_bound is not None else 1
    upper = as_int(s.upper_bound) if s.upper_bound is not None else None
    if lower is not None and actual < lower:
        raise SymbolicShapeError(f"{graph}: {label} is {actual}, below the lower bound {lower} of symbolic dim "
                                 f"'{s.name}' (torch specialises sizes 0 and 1: the graph was traced for sizes >= {lower})")
    if upper is not None and actual >= upper:
        raise SymbolicShapeError(f"{graph}: {label} is {actual}, not below the upper bound {upper} of "
                                 f"symbolic dim '{s.name}'")


def _factored(t: Any, spec: TensorInput | SymIntInput, env: dict[str, int]) -> Any:
    assert isinstance(spec, TensorInput)
    if not spec.is_factored:
        return t
    return t.contiguous().view([d if isinstance(d, int) else env[d.name] for d in spec.factored])  # type: ignore[union-attr]
