"""Reverse-mode autodiff of NetBuilder programs: `grad(program, outputs, wrt)`.

Each differentiable op declares its rule on its `OpDef.grad` (registered by the `rules_*`
modules of this package through `define_grad`, so the rules sit beside the op set without
editing the op modules). A rule gets a `GradContext` (the backward builder, the op's forward
inputs and output as variables of the backward program, and the output's cotangent) and
returns one cotangent per forward input (None: no gradient flows, e.g. an integer operand or a
comparison). Ops that pass no gradient at all are declared with `define_no_grad(names, why=...)`,
which records them in `NON_DIFFERENTIABLE` with the reason; every registered op has a rule, is
composite, or is declared there (tests/autodiff/test_grad_ops.py checks it).

Save-vs-recompute policy: **recompute** (full rematerialisation). The backward program takes the
forward program's inputs plus one cotangent per differentiated output (`<name>_grad`) and
re-emits the forward ops it needs; nothing is saved between two compiled programs. The graph
passes then fuse the recomputed elementwise chains into the backward kernels (an elementwise
forward value is cheaper to recompute inside the consuming fusion group than to write and read
back), and dead forward ops (those no rule reads) are dropped (`eliminate_dead_code`). Reductions and
matmuls that a rule needs are recomputed too; a caller that wants them saved passes the forward
value in as an input of the backward program instead (`saved=`).

Composite ops (softmax, gelu, layer_norm, rms_norm) without a rule of their own are
differentiated through their decomposition into primitive ops (Paddle's prim approach).
Cotangents that meet at a variable read by several ops are summed (`add`); `broadcast_to`'s rule
sums over the broadcast axes (unbroadcasting), which is where numpy-style broadcasting of binary
operands is undone, since NetBuilder makes it explicit.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from cinn_py.frontend.decompose import RULES as DECOMPOSE_RULES
from cinn_py.frontend.graph_passes import eliminate_dead_code
from cinn_py.frontend.net_builder import NetBuilder
from cinn_py.frontend.ops import get_op
from cinn_py.frontend.ops.base import REGISTRY, FrontendError
from cinn_py.frontend.program import Operator, Program, Variable

GradRule = Callable[["GradContext"], Sequence[Variable | None]]


class AutodiffError(FrontendError):
    """`grad` cannot differentiate the program (an op without a rule, a bad output/wrt)."""


@dataclass(frozen=True)
class GradContext:
    """What a gradient rule sees: `nb` builds the backward program; `inputs`/`out` are the forward
    op's operands and output as variables of `nb`; `dout` is the output's cotangent."""

    nb: NetBuilder
    op: Operator
    inputs: tuple[Variable, ...]
    out: Variable
    dout: Variable

    @property
    def attrs(self) -> Any:
        return self.op.attrs


def define_grad(*names: str) -> Callable[[GradRule], GradRule]:
    """Attach the decorated rule to the ops `names` (OpDef.grad)."""

    def attach(rule: GradRule) -> GradRule:
        for name in names:
            op = get_op(name)
            if op.grad is not None:
                raise ValueError(f"op '{name}' already has a gradient rule")
            REGISTRY[name] = dataclasses.replace(op, grad=rule)
        return rule
    return attach


NON_DIFFERENTIABLE: dict[str, str] = {}
"""Op name -> why it passes no gradient (`define_no_grad`): integer or bool results, or values
that are piecewise constant (zero derivative almost everywhere)."""


def define_no_grad(*names: str, why: str) -> None:
    """Declare the ops `names` non-differentiable (`why`: the reason, recorded in
    `NON_DIFFERENTIABLE`): their rule passes no gradient to any input."""
    define_grad(*names)(_no_gradient)
    NON_DIFFERENTIABLE.update((name, why) for name in names)


def _no_gradient(c: GradContext) -> list[Variable | None]:
    return [None] * len(c.inputs)


def is_differentiable(var: Variable) -> bool:
    return var.dtype.is_float


def grad(program: Program, outputs: Sequence[Variable] | None = None, wrt: Sequence[Variable] | None = None,
         *, name: str | None = None) -> Program:
    """The backward program of `program`: inputs are the forward inputs, then one cotangent per
    output in `outputs` (default: all outputs; named `<output>_grad`, same type); outputs are
    the gradients of the sum of <output, cotangent> with respect to each variable in `wrt`
    (default: every floating-point input), in order, of the same types (zeros where no path)."""
    outs = list([v for v in program.outputs if is_differentiable(v)] if outputs is None else outputs)
    if not outs:
        raise AutodiffError(f"grad: program '{program.name}' has no floating-point output to differentiate")
    targets = list([v for v in program.inputs if is_differentiable(v)] if wrt is None else wrt)
    _check_vars(program, outs, "outputs")
    _check_vars(program, targets, "wrt")
    for v in outs + targets:
        if not is_differentiable(v):
            raise AutodiffError(f"grad: '{v.name}' has dtype {v.dtype}; only floating-point variables have "
                                "gradients")
    nb = NetBuilder(name or f"{program.name}_grad")
    env: dict[int, Variable] = {id(v): nb.create_input(v.dtype, v.shape, v.name) for v in program.inputs}
    nb.reserve_names([op.output.name for op in program.ops])
    cot: dict[int, Variable] = {}
    created = set(map(id, env.values()))
    for v in outs:
        _check_cotangent_shape(v)
        d = nb.create_input(v.dtype, v.shape, f"{v.name}_grad")
        created.add(id(d))
        _accumulate(nb, cot, v, d)
    needed = _needed(program, outs, targets)
    for op in program.ops:  # recompute policy: the forward values the rules may read
        env[id(op.output)] = nb.emit(op.type, [env[id(v)] for v in op.inputs], dict(op.attrs),
                                     name=op.output.name)
    for op in reversed(program.ops):
        if id(op.output) not in needed or id(op.output) not in cot:
            continue
        _backprop(nb, op, env, cot)
    results = [cot.get(id(v)) or _zeros(nb, v) for v in targets]
    results = [nb.identity(r) if id(r) in created else r for r in results]  # an output is never an input
    return eliminate_dead_code(nb.build(results))  # recomputed values no rule read


def _check_vars(program: Program, vs: Sequence[Variable], what: str) -> None:
    known = {id(v) for v in program.inputs} | {id(op.output) for op in program.ops}
    for v in vs:
        if id(v) not in known:
            raise AutodiffError(f"grad: {what} entry '{getattr(v, 'name', v)}' is not a variable of program "
                                f"'{program.name}'")


def _check_cotangent_shape(v: Variable) -> None:
    from cinn_py.ir import Var  # noqa: PLC0415

    for k, d in enumerate(v.shape):
        if not isinstance(d, (int, Var)):
            raise AutodiffError(f"grad: output '{v.name}' has the derived dim {d} at axis {k}; its cotangent "
                                "would be an input of the backward program, whose dims must be ints or bare "
                                "symbolic dims (differentiate a reshape of it to such a shape)")


def _needed(program: Program, outs: Sequence[Variable], targets: Sequence[Variable]) -> set[int]:
    """Ids of variables on a path from a wrt variable to an output (the ops to differentiate)."""
    reach = {id(v) for v in targets}
    for op in program.ops:
        if any(id(v) in reach for v in op.inputs):
            reach.add(id(op.output))
    live = {id(v) for v in outs}
    for op in reversed(program.ops):
        if id(op.output) in live:
            live.update(id(v) for v in op.inputs)
    return reach & live


def _backprop(nb: NetBuilder, op: Operator, env: dict[int, Variable], cot: dict[int, Variable]) -> None:
    opdef = get_op(op.type)
    ins = tuple(env[id(v)] for v in op.inputs)
    dout = cot[id(op.output)]
    if opdef.grad is not None:
        grads = list(opdef.grad(GradContext(nb, op, ins, env[id(op.output)], dout)))
    elif opdef.composite:
        grads = _through_decomposition(nb, op, ins, dout)
    else:
        raise AutodiffError(f"grad: op '{op.type}' ({op}) has no gradient rule "
                            "(OpDef.grad); it is not differentiable")
    if len(grads) != len(op.inputs):
        raise AutodiffError(f"grad: the rule of '{op.type}' returned {len(grads)} gradients for "
                            f"{len(op.inputs)} inputs")
    for v, g in zip(op.inputs, grads):
        if g is None or not is_differentiable(v):
            continue
        if g.dtype != v.dtype or tuple(map(str, g.shape)) != tuple(map(str, v.shape)):
            raise AutodiffError(f"grad: the rule of '{op.type}' gave {g.type_str()} for input '{v.name}' "
                                f"of type {v.type_str()}")
        _accumulate(nb, cot, v, g)


def _through_decomposition(nb: NetBuilder, op: Operator, ins: tuple[Variable, ...],
                           dout: Variable) -> list[Variable | None]:
    """Differentiate a composite op by building its decomposition as a small program and
    differentiating that; its backward program is inlined into `nb`."""
    rule = DECOMPOSE_RULES.get(op.type) or get_op(op.type).decompose
    if rule is None:
        raise AutodiffError(f"grad: composite op '{op.type}' has neither a gradient rule nor a decomposition")
    sub = NetBuilder(f"{op.type}_decomposed")
    sub_ins = [sub.create_input(v.dtype, v.shape, f"in{k}") for k, v in enumerate(op.inputs)]
    y = rule(sub, sub_ins, dict(op.attrs), "out")
    sub_program = sub.build([y])
    wrt = [v for v in sub_program.inputs if is_differentiable(v)]
    back = grad(sub_program, [sub_program.outputs[0]], wrt)
    values = inline(nb, back, list(ins) + [dout])
    by_input = dict(zip((id(v) for v in wrt), values))
    return [by_input.get(id(v)) for v in sub_program.inputs]


def inline(nb: NetBuilder, program: Program, args: Sequence[Variable]) -> list[Variable]:
    """Emit `program`'s ops into `nb` with its inputs bound to `args`; its outputs' variables."""
    env = {id(p): a for p, a in zip(program.inputs, args)}
    for op in program.ops:
        env[id(op.output)] = nb.emit(op.type, [env[id(v)] for v in op.inputs], dict(op.attrs))
    return [env[id(v)] for v in program.outputs]


def _accumulate(nb: NetBuilder, cot: dict[int, Variable], v: Variable, g: Variable) -> None:
    prev = cot.get(id(v))
    cot[id(v)] = g if prev is None else nb.add(prev, g)


def _zeros(nb: NetBuilder, like: Variable) -> Variable:
    return nb.fill_constant(list(like.shape), 0.0, dtype=like.dtype)
