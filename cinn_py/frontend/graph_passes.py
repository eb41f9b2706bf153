"""Graph passes on a `Program`, run after decomposition and before fusion (`optimize`); the
first is `cinn_py.frontend.simplify` (pattern rewrites: dropout_infer, scale chains, silu,
transpose/reshape chains), then:

- `fold_constants`: an op whose inputs are all uniform constants (`fill_constant`, or ops folded
  before it) and that maps uniform inputs to a uniform output (elementwise ops, broadcast_to,
  reshape, transpose, slice, concat of equal values, reductions with a static count) becomes a
  `fill_constant` of its output's shape holding the value numpy computes in the op's dtype. So
  `broadcast_to(fill_constant([1], 2.0), [S0, 768])` becomes `fill_constant([S0, 768], 2.0)`.
- `eliminate_common_subexpressions` (CSE): two ops of one type on the same input variables with
  equal attributes compute the same value; later uses read the first one. Floats in attributes
  are compared by their exact value and sign (0.0 and -0.0 differ), NaNs never merge.
- `eliminate_dead_code` (DCE): ops whose output no program output depends on are removed.

Every pass returns a new Program; variables keep their names and types. CINN runs the same
passes on its graph (`ConstantFolding`, `CommonSubexpressionElimination`, `DeadCodeElimination`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from cinn_py.frontend.decompose import decompose
from cinn_py.frontend.ops import get_op
from cinn_py.frontend.ops.base import FrontendError, suggest
from cinn_py.frontend.ops.elementwise_base import scalar_of
from cinn_py.frontend.program import Operator, Program, Variable
from cinn_py.frontend.rewrite import Rewrite, apply_rewrites
from cinn_py.frontend.simplify import RULES, simplify

Pass = Callable[[Program], Program]


def _with_inputs(op: Operator, subst: dict[int, Variable]) -> Operator:
    ins = tuple(subst.get(id(v), v) for v in op.inputs)
    if all(a is b for a, b in zip(ins, op.inputs)):
        return op
    return Operator(op.type, ins, op.outputs, op.attrs)


def fold_constants(program: Program) -> Program:
    """Replace ops of uniform constant inputs by `fill_constant` ops (see the module docstring)."""
    consts: dict[int, Any] = {}
    ops: list[Operator] = []
    for op in program.ops:
        if op.type == "fill_constant":
            consts[id(op.output)] = op.attrs["value"]
            ops.append(op)
            continue
        value = _folded_value(op, consts)
        if value is None:
            ops.append(op)
            continue
        out = op.output
        consts[id(out)] = value
        ops.append(Operator("fill_constant", (), (out,),
                            {"shape": out.shape, "value": value, "dtype": out.dtype}))
    return Program(program.name, program.inputs, ops, program.outputs)


def _folded_value(op: Operator, consts: dict[int, Any]) -> Any:
    opdef = get_op(op.type)
    if opdef.fold is None or not op.inputs or not all(id(v) in consts for v in op.inputs):
        return None
    value = opdef.fold([consts[id(v)] for v in op.inputs], op.attrs, [v.type for v in op.inputs],
                       op.output.type)
    if value is None:
        return None
    return scalar_of(value, op.output.dtype, op.type)


def _freeze(value: Any) -> Any:
    """A hashable key for an attribute value that tells 0.0 from -0.0 (and 1 from 1.0)."""
    if isinstance(value, float):
        return (("float", math.copysign(1.0, value), abs(value)) if not math.isnan(value)
                else ("nan", id(value)))
    if isinstance(value, (tuple, list)):
        return tuple(_freeze(v) for v in value)
    return (type(value).__name__, value)


def eliminate_common_subexpressions(program: Program) -> Program:
    """Reuse the first of several identical ops (same type, inputs and attributes)."""
    seen: dict[Any, Variable] = {}
    subst: dict[int, Variable] = {}
    ops: list[Operator] = []
    for op in program.ops:
        op = _with_inputs(op, subst)
        key = (op.type, tuple(id(v) for v in op.inputs),
               tuple(sorted((k, _freeze(v)) for k, v in op.attrs.items())))
        first = seen.get(key)
        if first is not None and first.type == op.output.type:
            subst[id(op.output)] = first
            continue
        seen[key] = op.output
        ops.append(op)
    outputs = [subst.get(id(v), v) for v in program.outputs]
    return Program(program.name, program.inputs, ops, outputs)


def eliminate_dead_code(program: Program) -> Program:
    """Drop ops whose outputs no program output depends on."""
    live = {id(v) for v in program.outputs}
    kept: list[Operator] = []
    for op in reversed(program.ops):
        if id(op.output) in live:
            kept.append(op)
            live.update(id(v) for v in op.inputs)
    return Program(program.name, program.inputs, list(reversed(kept)), program.outputs)


DEFAULT_PASSES: tuple[Pass, ...] = (decompose, simplify, fold_constants, eliminate_common_subexpressions,
                                    eliminate_dead_code)


def _rule_pass(rule: Rewrite) -> Pass:
    return lambda program: apply_rewrites(program, [rule])


NAMED_PASSES: dict[str, Pass] = {
    "decompose": decompose, "simplify": simplify, "fold_constants": fold_constants,
    "eliminate_common_subexpressions": eliminate_common_subexpressions,
    "eliminate_dead_code": eliminate_dead_code,
    # CINN's names of the same graph passes
    "Decomposer": decompose, "ConstantFolding": fold_constants,
    "CommonSubexpressionElimination": eliminate_common_subexpressions,
    "DeadCodeElimination": eliminate_dead_code,
    # each rewrite of `simplify` on its own
    **{rule.name: _rule_pass(rule) for rule in RULES},
}
"""Passes a user may name (`cinn_py.build_and_get_output(..., passes=[...])`, `named_passes`)."""


def named_passes(names: Sequence[str], what: str) -> list[Pass]:
    """The passes of `NAMED_PASSES` called `names`; a FrontendError for an unknown name lists
    the available ones."""
    unknown = [n for n in names if n not in NAMED_PASSES]
    if unknown:
        raise FrontendError(f"{what}: argument 'passes': unknown pass(es) "
                            f"{unknown}{suggest(unknown[0], list(NAMED_PASSES))}"
                            f" (available graph passes and rewrites: {', '.join(NAMED_PASSES)})")
    return [NAMED_PASSES[n] for n in names]


def optimize(program: Program, passes: Sequence[Pass] = DEFAULT_PASSES) -> Program:
    """Run `passes` in order (default: decompose, the pattern rewrites of `simplify`, constant
    folding, CSE, DCE)."""
    for p in passes:
        program = p(program)
    return program
