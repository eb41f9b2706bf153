"""Declarative pattern rewrites on the op graph (CINN's `DRR`/`PatternRewriter`, MLIR's
`RewritePattern`, in small).

A `Rewrite` pairs a pattern with a builder:

    SILU = Rewrite("silu", op("multiply", var("x"), op("sigmoid", var("x")), commutative=True),
                   lambda nb, m: nb.emit("silu", [m["x"]], name=m.name))

- `op(types, *inputs, where=..., name=..., commutative=..., single_use=...)` matches an
  `Operator` of one of `types` (a name, a tuple of names, or None for any) whose attributes pass
  `where(op)`; `inputs` (if given) match its operands one to one, and `commutative=True` also
  tries a binary op's operands swapped. `name` captures the op (`m.op("inner")`).
- `var(name)` matches any variable and captures it (`m["x"]`); a name used twice must match the
  same variable (`x * sigmoid(x)` does not match `x * sigmoid(y)`).
- An op below the root must be single-use (read once, by its parent in the pattern, and not a
  program output) unless `single_use=False`: rewriting a multi-use intermediate would compute
  it twice. The root may have any number of uses: all of them read the replacement.

The builder gets a `NetBuilder` holding the rewritten program so far and the `Match` (captured
variables already mapped into that builder), emits ops and returns the variable that replaces
the root. A newly built variable must carry the root's name (`name=m.name`), so variable names
and program outputs survive; returning an existing variable (`x` for `transpose(transpose(x))`
with inverse perms) forwards the root's uses to it, and a program output becomes an `identity`
op of its old name. The replacement must have the root's shape and dtype (`RewriteError`
otherwise).

`apply_rewrites(program, rules)` sweeps the program (ops in order, the first rule that matches
an op fires) until no rule fires (a fixpoint; `RewriteError` after `max_sweeps`) and drops the
matched intermediates that became dead. Matching reads the sweep's input program, whose every
variable has the same value as its image in the rebuilt one, so rewrites in one sweep compose.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Union

from cinn_py.frontend.net_builder import NetBuilder
from cinn_py.frontend.ops.base import FrontendError
from cinn_py.frontend.ops.shapes import shapes_equal
from cinn_py.frontend.program import Operator, Program, Variable


class RewriteError(FrontendError):
    """A rewrite rule broke its contract (type of the replacement, naming) or did not converge."""


@dataclass(frozen=True)
class VarPat:
    """Any variable, captured as `name`."""

    name: str


@dataclass(frozen=True)
class OpPat:
    """An op of one of `types` (None: any), its operands matching `inputs` (None: any)."""

    types: tuple[str, ...] | None
    inputs: tuple[Pattern, ...] | None = None
    where: Callable[[Operator], bool] | None = None
    name: str | None = None
    commutative: bool = False
    single_use: bool = True

    def accepts(self, o: Operator) -> bool:
        if self.types is not None and o.type not in self.types:
            return False
        if self.inputs is not None and len(self.inputs) != len(o.inputs):
            return False
        return self.where is None or bool(self.where(o))


Pattern = Union[VarPat, OpPat]


def var(name: str) -> VarPat:
    """A pattern operand matching any variable, captured as `name`."""
    return VarPat(name)


def op(types: str | Sequence[str] | None, *inputs: Pattern, where: Callable[[Operator], bool] | None = None,
       name: str | None = None, commutative: bool = False, single_use: bool = True,
       any_inputs: bool = False) -> OpPat:
    """A pattern matching one op (see the module docstring); with no `inputs` the op's operands
    are not constrained only when `any_inputs=True` (else it must have none)."""
    kinds = (types,) if isinstance(types, str) else (tuple(types) if types is not None else None)
    if commutative and len(inputs) != 2:
        raise RewriteError(f"op pattern {kinds}: commutative matching needs exactly 2 operand patterns, "
                           f"got {len(inputs)}")
    return OpPat(kinds, None if any_inputs else tuple(inputs), where, name, commutative, single_use)


@dataclass(frozen=True)
class Match:
    """A match of a rule: the root op, captured variables (in the rebuilt program) and ops."""

    root: Operator
    vars: Mapping[str, Variable]
    ops: Mapping[str, Operator]
    operands: tuple[Variable, ...] = ()  # the root's operands (in the rebuilt program)

    @property
    def name(self) -> str:
        """The root's output name, which the replacement keeps."""
        return self.root.output.name

    def __getitem__(self, key: str) -> Variable:
        return self.vars[key]

    def op(self, key: str) -> Operator:
        return self.ops[key]


Builder = Callable[[NetBuilder, Match], Variable]


@dataclass(frozen=True)
class Rewrite:
    """A named rule: where `pattern` matches, the root's value is what `build` returns."""

    name: str
    pattern: OpPat
    build: Builder


@dataclass(frozen=True)
class _Graph:
    program: Program
    uses: Counter[int]
    outputs: frozenset[int]


@dataclass(frozen=True)
class _Binding:
    vars: dict[str, Variable] = field(default_factory=dict)
    ops: dict[str, Operator] = field(default_factory=dict)
    interior: tuple[Operator, ...] = ()


def match(pattern: OpPat, root: Operator, program: Program) -> Match | None:
    """The first match of `pattern` rooted at `root` in `program` (captures are `program`'s)."""
    g = _graph(program)
    b = next(_match_op(pattern, root, g, _Binding(), root=True), None)
    return None if b is None else Match(root, b.vars, b.ops, root.inputs)


def _graph(program: Program) -> _Graph:
    uses = Counter(id(v) for o in program.ops for v in o.inputs)
    return _Graph(program, uses, frozenset(id(v) for v in program.outputs))


def _match_op(p: OpPat, o: Operator, g: _Graph, b: _Binding, root: bool = False) -> Iterator[_Binding]:
    if not p.accepts(o):
        return
    if not root and p.single_use and (g.uses[id(o.output)] != 1 or id(o.output) in g.outputs):
        return
    b = _Binding(b.vars, {**b.ops, p.name: o} if p.name else b.ops, b.interior if root else (*b.interior, o))
    if p.inputs is None:
        yield b
        return
    orders = [o.inputs, o.inputs[::-1]] if p.commutative else [o.inputs]
    for operands in orders:
        yield from _match_all(p.inputs, operands, g, b)


def _match_all(ps: Sequence[Pattern], vs: Sequence[Variable], g: _Graph, b: _Binding) -> Iterator[_Binding]:
    if not ps:
        yield b
        return
    for b1 in _match_operand(ps[0], vs[0], g, b):
        yield from _match_all(ps[1:], vs[1:], g, b1)


def _match_operand(p: Pattern, v: Variable, g: _Graph, b: _Binding) -> Iterator[_Binding]:
    if isinstance(p, VarPat):
        bound = b.vars.get(p.name)
        if bound is None:
            yield _Binding({**b.vars, p.name: v}, b.ops, b.interior)
        elif bound is v:
            yield b
        return
    producer = g.program.producer(v)
    if producer is not None:
        yield from _match_op(p, producer, g, b)


def apply_rewrites(program: Program, rules: Sequence[Rewrite], max_sweeps: int = 64) -> Program:
    """`program` with `rules` applied until none matches (see the module docstring)."""
    fired: list[str] = []
    for _ in range(max_sweeps):
        program, fired = _sweep(program, rules)
        if not fired:
            return program
    raise RewriteError(f"program '{program.name}': rewrites did not reach a fixpoint in {max_sweeps} sweeps "
                       f"(last sweep fired {sorted(set(fired))})")


def _sweep(program: Program, rules: Sequence[Rewrite]) -> tuple[Program, list[str]]:
    g = _graph(program)
    nb = NetBuilder(program.name)
    mapping: dict[int, Variable] = {id(v): nb.create_input(v.dtype, v.shape, v.name) for v in program.inputs}
    nb.reserve_names([o.output.name for o in program.ops])
    fired: list[str] = []
    absorbed: set[str] = set()
    for o in program.ops:
        hit = _first_match(o, rules, g)
        if hit is None:
            ins = [mapping[id(v)] for v in o.inputs]
            mapping[id(o.output)] = nb.emit(o.type, ins, dict(o.attrs), name=o.output.name)
            continue
        rule, b = hit
        m = Match(o, {k: mapping[id(v)] for k, v in b.vars.items()}, b.ops,
                  tuple(mapping[id(v)] for v in o.inputs))
        mapping[id(o.output)] = _replace(nb, rule, m, id(o.output) in g.outputs)
        fired.append(rule.name)
        absorbed.update(i.output.name for i in b.interior)
    if not fired:
        return program, fired
    rebuilt = nb.build([mapping[id(v)] for v in program.outputs])
    return _drop_dead(rebuilt, absorbed), fired


def _first_match(o: Operator, rules: Sequence[Rewrite], g: _Graph) -> tuple[Rewrite, _Binding] | None:
    for rule in rules:
        b = next(_match_op(rule.pattern, o, g, _Binding(), root=True), None)
        if b is not None:
            return rule, b
    return None


def _replace(nb: NetBuilder, rule: Rewrite, m: Match, is_output: bool) -> Variable:
    before = len(nb.ops)
    new = rule.build(nb, m)
    want = m.root.output
    if new.dtype != want.dtype or not shapes_equal(new.shape, want.shape):
        raise RewriteError(f"rewrite '{rule.name}' at {m.root}: the replacement '{new.name}' is "
                           f"{new.type_str()}, expected {want.type_str()}")
    fresh = any(o.output is new for o in nb.ops[before:])
    if fresh and new.name != m.name:
        raise RewriteError(f"rewrite '{rule.name}' at {m.root}: the new op returned must keep the root's "
                           "name "
                           f"'{m.name}' (emit it with name=m.name), got '{new.name}'")
    if not fresh and is_output:  # a program output keeps its name
        return nb.emit("identity", [new], name=m.name)
    return new


def _drop_dead(program: Program, candidates: set[str]) -> Program:
    """Remove the ops named in `candidates` that nothing reads any more (and their dead inputs
    among the candidates); other ops, dead or not, are left to DCE."""
    live = {id(v) for v in program.outputs}
    kept: list[Operator] = []
    for o in reversed(program.ops):
        if o.output.name in candidates and id(o.output) not in live:
            continue
        kept.append(o)
        live.update(id(v) for v in o.inputs)
    return Program(program.name, program.inputs, list(reversed(kept)), program.outputs)
