"""How a partition's placeholders enter its `Program` (`InputPlan`), split from `symbolic.py`,
which translates torch's sizes (`SymbolTable`).

`InputPlan` decides how each tensor and SymInt placeholder enters (as it is, split into the
factors of a product dim, as a shape carrier, as a 0-d scalar) and `InputPlan.bind` binds the
symbols from the actual arguments before every call, checking every other dim against the value
its expression gives (the module docstring of `cinn_py.torch.symbolic` has the whole story).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch  # pyright: ignore[reportMissingImports]

from cinn_py.frontend.ops.base import Dim
from cinn_py.frontend.ops.shapes import fmt_dim
from cinn_py.ir import Expr, IntImm, Mul, Var, walk
from cinn_py.symbolic.integer import as_int, eval_int
from cinn_py.torch.layout import InputLayout
from cinn_py.torch.symbolic import _REMEMBERED, SymbolicShapeError


@dataclass(frozen=True)
class TensorInput:
    """A tensor placeholder: its dims (cinn-py's form of torch's) and the shape it enters with
    (`dims` with every product split into its factors)."""

    name: str
    dims: tuple[Dim, ...]
    factored: tuple[Dim, ...]
    layout: InputLayout | None = None
    """A tensor traced as a strided view (transposed, expanded, sliced): it enters in its memory
    layout, read in place, and the Program rebuilds its logical view (cinn_py/torch/layout.py)."""

    @property
    def entered(self) -> tuple[Dim, ...]:
        """The shape of the Program input it enters as."""
        return tuple(self.layout.entry_shape(self.dims)) if self.layout is not None else self.factored

    @property
    def is_factored(self) -> bool:
        return len(self.factored) != len(self.dims)


@dataclass(frozen=True)
class SymIntInput:
    """A SymInt placeholder: the value its expression says (an int when torch specialised it).
    `scalar`: the graph also uses it as a number (`x * x.shape[-1]`), so it enters the Program
    as a 0-d int64 tensor of its value too."""

    name: str
    value: Dim
    scalar: bool = False


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
        raise SymbolicShapeError(f"{graph}: input '{t.name}' has dim {bad[0]}, neither a symbol nor a "
                                 "product of "
                                 "symbols: cinn-py binds symbolic dims from input dims of that form only")


@dataclass(frozen=True)
class InputPlan:
    """The Program inputs of one partition (see the module docstring) and the per-call binding."""

    graph: str
    inputs: tuple[TensorInput | SymIntInput, ...]
    carriers: tuple[Var, ...]
    """Symbols bound by no tensor dim: one int8 input of each one's length, after the tensors."""
    symbols: tuple[Var, ...]
    definitions: tuple[tuple[Var, Expr], ...] = ()
    """(atom, the expression of other symbols it stands for), checked where those are bound."""
    facts: tuple[tuple[Expr, int], ...] = ()
    """(product of symbols, the int torch's guards pin it to): the Program relies on them."""
    _passed: dict[tuple[Any, ...], dict[str, int]] = field(default_factory=dict, compare=False, repr=False)
    """Size signature of a call that passed the checks -> its symbol values."""

    @staticmethod
    def make(graph: str, inputs: Sequence[TensorInput | SymIntInput], needed: Sequence[Var],
             definitions: Sequence[tuple[Var, Expr]] = (),
             facts: Sequence[tuple[Expr, int]] = ()) -> InputPlan:
        """The plan for `inputs` (checked with `check_bindable`) and the symbols the Program uses."""
        tensors = [i for i in inputs if isinstance(i, TensorInput)]
        bound = {d.name for t in tensors for d in t.entered if isinstance(d, Var)}
        carriers = tuple(s for s in needed if s.name not in bound)
        solved = _bound_by(inputs)
        unbound = [s.name for s in needed if s.name not in solved]
        if unbound:
            raise SymbolicShapeError(f"{graph}: symbolic dim(s) {unbound} occur only inside larger dim "
                                     "expressions: no input tensor dim or SymInt argument gives their value")
        names = {s.name for s in needed}
        used = tuple(f for f in facts if all(v.name in names for v in walk(f[0]) if isinstance(v, Var)))
        return InputPlan(graph, tuple(inputs), carriers, tuple(needed), tuple(definitions), used)

    @property
    def is_static(self) -> bool:
        return not self.symbols

    def bind(self, args: Sequence[Any]) -> list[Any]:
        """The Program's inputs for one call's arguments (tensors and ints, in placeholder order):
        symbols bound, every dim and SymInt argument checked against its expression. The symbol
        values of each size signature that passed are remembered: a repeated signature skips
        the checks (100 us on the BERT layer's backward graph)."""
        if len(args) != len(self.inputs):
            raise SymbolicShapeError(f"{self.graph}: {len(self.inputs)} arguments expected, got {len(args)}")
        key = tuple(tuple(a.shape) if isinstance(a, torch.Tensor) else a for a in args)
        env = self._passed.get(key)
        if env is None:
            env = self._checked(args)
            if len(self._passed) < _REMEMBERED:
                self._passed[key] = env
        device = next((a.device for a in args if isinstance(a, torch.Tensor)), torch.device("cpu"))
        tensors = [_factored(a, spec, env) if isinstance(spec, TensorInput)
                   else torch.tensor(a, device=device)
                   for spec, a in zip(self.inputs, args) if isinstance(spec, TensorInput) or spec.scalar]
        return tensors + [torch.empty(env[s.name], dtype=torch.int8, device=device) for s in self.carriers]

    def _checked(self, args: Sequence[Any]) -> dict[str, int]:
        """The symbol values of `args`, every assumption of the graph checked."""
        env: dict[str, int] = {}
        where: dict[str, str] = {}
        sizes = [size for spec, arg in zip(self.inputs, args) for size in _sizes(spec, arg)]
        for label, d, actual in sizes:
            if isinstance(d, Var):
                self._bind(env, where, d, actual, label)
        while any(self._solve(env, where, d, actual, label) for label, d, actual in sizes):
            pass  # `2*s27_div2`, the symbol a floor division made; `s77` of `s27*s77` once `s27` is known
        for label, d, actual in sizes:
            self._check(env, where, d, actual, label)
        for atom, definition in self.definitions:
            if atom.name in env and all(v.name in env for v in walk(definition) if isinstance(v, Var)):
                self._check(env, where, definition, env[atom.name],
                            f"symbolic dim '{atom.name}' (from {where[atom.name]})")
        for expr, value in self.facts:  # torch's guards check them too; a direct call has none
            self._check_fact(env, where, expr, value)
        return env

    def _check_fact(self, env: dict[str, int], where: dict[str, str], expr: Expr, value: int) -> None:
        actual = eval_int(expr, env)
        if actual == value:
            return
        names = sorted({n.name for n in walk(expr) if isinstance(n, Var)})
        detail = ", ".join(f"{n}={env[n]} (from {where[n]})" for n in names)
        raise SymbolicShapeError(f"{self.graph}: {fmt_dim(expr)} is {actual} with {detail}, but the graph "
                                 f"was traced with it equal to {value} (torch's guards pinned it)")

    def _bind(self, env: dict[str, int], where: dict[str, str], s: Var, actual: int, label: str) -> None:
        if s.name in env and env[s.name] != actual:
            raise SymbolicShapeError(f"{self.graph}: {label} is {actual}, but symbolic dim '{s.name}' is "
                                     f"{env[s.name]} from {where[s.name]}; the graph was traced with them "
                                     "equal")
        _check_range(self.graph, s, actual, label)
        env.setdefault(s.name, actual)
        where.setdefault(s.name, label)

    def _solve(self, env: dict[str, int], where: dict[str, str], d: Dim, actual: int, label: str) -> bool:
        """Bind the one unbound symbol of a product dim: the size divided by the other factors,
        which must divide it (the graph's floor divisions were made exact by assuming so).
        Whether a symbol was bound."""
        unknown = [f for f in factors(d) if isinstance(f, Var) and f.name not in env]
        if len(unknown) != 1 or not isinstance(d, Mul):  # (`s0*s0` has s0 twice: not solved)
            return False
        s = unknown[0]
        rest = eval_int(d, {**env, s.name: 1})
        if rest <= 0 or actual % rest:
            raise SymbolicShapeError(f"{self.graph}: {label} is {actual}, but the graph was traced with it "
                                     "equal to "
                                     f"{fmt_dim(d)}, a multiple of {rest} (a view divides it by {rest})")
        self._bind(env, where, s, actual // rest, label)
        return True

    def _check(self, env: dict[str, int], where: dict[str, str], d: Dim, actual: int, label: str) -> None:
        expected = d if isinstance(d, int) else eval_int(d, env)
        if expected == actual:
            return
        names = sorted({n.name for n in walk(d) if isinstance(n, Var)}) if isinstance(d, Expr) else []
        detail = ", ".join(f"{n}={env[n]} (from {where[n]})" for n in names)
        raise SymbolicShapeError(f"{self.graph}: {label} is {actual}, but the graph was traced with it equal "
                                 "to "
                                 f"{fmt_dim(d)} = {expected}" + (f" with {detail}" if detail else ""))


def _bound_by(inputs: Sequence[TensorInput | SymIntInput]) -> set[str]:
    """The symbols `InputPlan.bind` binds from these inputs' dims and values."""
    sizes = [d for i in inputs for d in (i.dims if isinstance(i, TensorInput) else (i.value,))]
    known = {d.name for d in sizes if isinstance(d, Var)}
    progress = True
    while progress:
        progress = False
        for d in sizes:
            unknown = [f.name for f in factors(d) if isinstance(f, Var) and f.name not in known]
            if len(unknown) == 1 and isinstance(d, Mul):
                known.add(unknown[0])
                progress = True
    return known


def _sizes(spec: TensorInput | SymIntInput, arg: Any) -> list[tuple[str, Dim, int]]:
    """(label, expected dim, actual size) of one argument."""
    if isinstance(spec, SymIntInput):
        if isinstance(arg, torch.Tensor) or not isinstance(arg, int):
            raise SymbolicShapeError(f"SymInt argument '{spec.name}' must be an int, got "
                                     f"{type(arg).__name__}")
        return [(f"SymInt argument '{spec.name}'", spec.value, int(arg))]
    if not isinstance(arg, torch.Tensor) or arg.dim() != len(spec.dims):
        shape = tuple(arg.shape) if isinstance(arg, torch.Tensor) else type(arg).__name__
        raise SymbolicShapeError(f"input '{spec.name}' must be a tensor of rank {len(spec.dims)}, got "
                                 f"{shape}")
    return [(f"input '{spec.name}' dim {k}", d, int(n)) for k, (d, n) in enumerate(zip(spec.dims, arg.shape))]


def _check_range(graph: str, s: Var, actual: int, label: str) -> None:
    lower = as_int(s.lower_bound) if s.lower_bound is not None else 1
    upper = as_int(s.upper_bound) if s.upper_bound is not None else None
    if lower is not None and actual < lower:
        raise SymbolicShapeError(f"{graph}: {label} is {actual}, below the lower bound {lower} of symbolic "
                                 "dim "
                                 f"'{s.name}' (torch specialises sizes 0 and 1: the graph was traced for "
                                 f"sizes >= {lower})")
    if upper is not None and actual >= upper:
        raise SymbolicShapeError(f"{graph}: {label} is {actual}, not below the upper bound {upper} of "
                                 f"symbolic dim '{s.name}'")


def _factored(t: Any, spec: TensorInput | SymIntInput, env: dict[str, int]) -> Any:
    assert isinstance(spec, TensorInput)
    if spec.layout is not None:  # in place when the layout is the traced one; else copied (or LayoutMismatch)
        return spec.layout.view(t)
    if not spec.is_factored:
        return t
    return t.contiguous().view([d if isinstance(d, int) else env[d.name] for d in spec.factored])  # type: ignore[union-attr]
