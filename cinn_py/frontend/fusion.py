"""Op fusion: partition a primitive `Program` into groups by `OpPatternKind` (CINN
`hlir/pass/op_fusion_pass.cc` producer -> consumer rules, with the group-level conditions of
`cinn_group_cluster_pass.cc`), each group lowering to one function.

Producer -> consumer rules (`can_fuse_edge`), for every edge between the two groups merged:

    ElementWise -> anything fusible (ElementWise, Broadcast, Injective, Reduction, OutFusible)
    Broadcast   -> ElementWise, Reduction, Injective
    Injective   -> ElementWise, Injective
    Reduction   -> ElementWise of the reduction's output size; Broadcast of the reduction's
                   output back to its input size; Reduction with the same reduce attrs
    OutFusible  -> ElementWise
    NonFusible  -> nothing (a NonFusible op is a group of its own), except matmul -> an
                   ElementWise op of the matmul's output shape (its epilogue: bias, activation)

Group conditions (`group_is_valid`), checked on the union before a merge:
- a NonFusible op is alone, except a matmul with its epilogue: ElementWise ops of its output
  shape that (transitively) read its output, and the Broadcasts that feed them (a bias); the
  matmul tactic computes the epilogue on the matmul's output tile (docs/auto_schedule.md);
- all reductions of a group share their reduce attrs (input shape and axes), and every op
  iterates over either the reduction's input domain or its output domain (same element count):
  the group is one `[spatial, reduce]` iteration space that the group scheduler can align
  (CINN: equal loop ranges and reduce axes, or Reduction -> ElementWise/Broadcast);
- a group with a reduction holds no Injective op (CINN: reductions never fuse into Injective).

A group holds at most `MAX_GROUP_OPS` ops (as TVM's `relay.FuseOps.max_depth`): a longer chain is
cut into several groups, so no lowered function (and no expression its inlining builds) grows
with the program: a 1,000-op elementwise chain compiles as ~16 kernels, not one 1,000-block
function whose scheduling is quadratic in its size.

Merging never creates a cycle between groups: two groups are not merged when a path leaves one
and reaches the other through a third group (then the merged group would both feed and consume
that third group).

The walk visits ops in topological order and tries to merge each op's group with the groups of
its producers, first operand first. So softmax (`reduce_max -> broadcast -> subtract -> exp ->
reduce_sum -> broadcast -> divide`) is ONE group: both reductions have the same input shape and
axes, and every other op runs over the input or the reduced domain. That is what CINN's current
fusion (ReduceTree + Trivial patterns) does for softmax; old CINN registered softmax as a
NonFusible op instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cinn_py.frontend.graph_passes import optimize
from cinn_py.frontend.ops import OpPatternKind as K
from cinn_py.frontend.ops import get_op
from cinn_py.frontend.ops.base import Dim, FrontendError
from cinn_py.frontend.ops.shapes import dims_equal, numel, shapes_equal, symbols_of
from cinn_py.frontend.program import Operator, Program, Variable
from cinn_py.frontend.checks import is_identifier
from cinn_py.ir import sanitize_identifier

_PRODUCER_TO_CONSUMER: dict[K, frozenset[K]] = {
    K.kElementWise: frozenset({K.kElementWise, K.kBroadcast, K.kInjective, K.kReduction, K.kOutFusible}),
    K.kBroadcast: frozenset({K.kElementWise, K.kReduction, K.kInjective}),
    K.kInjective: frozenset({K.kElementWise, K.kInjective}),
    K.kReduction: frozenset({K.kElementWise, K.kBroadcast, K.kReduction}),
    K.kOutFusible: frozenset({K.kElementWise}),
    K.kNonFusible: frozenset(),
}


def can_fuse_kinds(producer: K, consumer: K) -> bool:
    """The kind part of the producer -> consumer table (without the size conditions)."""
    return consumer in _PRODUCER_TO_CONSUMER[producer]


def _reduce_attrs(op: Operator) -> tuple[tuple[Dim, ...], tuple[int, ...]]:
    return tuple(op.inputs[0].shape), tuple(op.attrs["axes"])


def same_reduce_attrs(a: Operator, b: Operator) -> bool:
    (sa, xa), (sb, xb) = _reduce_attrs(a), _reduce_attrs(b)
    return xa == xb and shapes_equal(sa, sb)


def _domain(op: Operator) -> tuple[Dim, ...]:
    """The iteration domain of an op: its input shape for a reduction, else its output shape."""
    return tuple(op.inputs[0].shape) if op.pattern is K.kReduction else tuple(op.output.shape)


EPILOGUE_HOSTS = frozenset({"matmul"})
"""NonFusible ops that take elementwise consumers of their output shape into their group."""


def _is_epilogue_edge(producer: Operator, consumer: Operator) -> bool:
    return (producer.type in EPILOGUE_HOSTS and consumer.pattern is K.kElementWise
            and shapes_equal(tuple(consumer.output.shape), tuple(producer.output.shape)))


def _is_epilogue_group(ops: Sequence[Operator]) -> bool:
    """One matmul, then ElementWise ops of its output shape that read it (directly or through
    each other) and Broadcasts of that shape (operands such as a bias); ops in program order."""
    hosts = [op for op in ops if op.pattern is K.kNonFusible]
    if len(hosts) != 1 or hosts[0].type not in EPILOGUE_HOSTS:
        return False
    host = hosts[0]
    shape = tuple(host.output.shape)
    downstream = {id(host.output)}
    for op in ops:
        if op is host:
            continue
        if (op.pattern not in (K.kElementWise, K.kBroadcast)
            or not shapes_equal(tuple(op.output.shape), shape)):
            return False
        reads_host = any(id(v) in downstream for v in op.inputs)
        if op.pattern is K.kElementWise and not reads_host:
            return False  # a prologue op would be recomputed for every k step
        if reads_host:
            downstream.add(id(op.output))
    return True


def can_fuse_edge(producer: Operator, consumer: Operator) -> bool:
    """The producer -> consumer rule for one edge (kinds and the Reduction size conditions)."""
    pk, ck = producer.pattern, consumer.pattern
    if pk is K.kNonFusible:
        return _is_epilogue_edge(producer, consumer)
    if not can_fuse_kinds(pk, ck):
        return False
    if pk is not K.kReduction:
        return True
    reduced = numel(producer.output.shape)
    if ck is K.kElementWise:
        return dims_equal(numel(consumer.output.shape), reduced)
    if ck is K.kBroadcast:
        return dims_equal(numel(consumer.output.shape), numel(producer.inputs[0].shape))
    return same_reduce_attrs(producer, consumer)


def group_is_valid(ops: Sequence[Operator]) -> bool:
    """The group-level conditions of the module docstring."""
    kinds = [op.pattern for op in ops]
    if K.kNonFusible in kinds:
        return len(ops) == 1 or _is_epilogue_group(ops)
    reductions = [op for op in ops if op.pattern is K.kReduction]
    if not reductions:
        return True
    if K.kInjective in kinds or K.kOutFusible in kinds:
        return False
    first = reductions[0]
    if not all(same_reduce_attrs(first, r) for r in reductions[1:]):
        return False
    full, reduced = numel(first.inputs[0].shape), numel(first.output.shape)
    return all(dims_equal(n, full) or dims_equal(n, reduced) for n in (numel(_domain(op)) for op in ops))


@dataclass(eq=False)
class Group:
    """A fused group: ops in topological order, the variables it reads and writes.

    `inputs` are read from outside (program inputs or other groups' outputs); `outputs` are
    read by later groups or are program outputs; the rest are intermediates (temp buffers of the
    lowered function). `shape_inputs` are program inputs passed only so the kernel can bind a
    symbolic dim none of `inputs` has (CINN's `symbol_args_map` reads each symbol from an input).
    """

    name: str
    ops: tuple[Operator, ...]
    inputs: tuple[Variable, ...]
    outputs: tuple[Variable, ...]
    shape_inputs: tuple[Variable, ...] = ()

    @property
    def kind(self) -> K:
        return max(op.pattern for op in self.ops)

    @property
    def args(self) -> tuple[Variable, ...]:
        return self.inputs + self.shape_inputs

    def __str__(self) -> str:
        ins = ", ".join(v.name for v in self.args)
        outs = ", ".join(v.name for v in self.outputs)
        lines = [f"group {self.name} [{self.kind.name}] ({ins}) -> ({outs})"]
        return "\n".join(lines + [f"  {op}" for op in self.ops])


@dataclass(eq=False)
class FusionPlan:
    """The groups of a program, in an order that runs producers first."""

    program: Program
    groups: tuple[Group, ...]

    def __str__(self) -> str:
        return "\n".join(str(g) for g in self.groups)


MAX_GROUP_OPS = 64
"""Ops per fused group at most (the IR's MAX_EXPR_DEPTH bounds one expression the same way)."""


class _Partition:
    """Groups as sets of op indices with union; the group graph is derived on demand from the
    op-level producer/consumer lists (cost: the size of the groups visited)."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self.ops = list(program.ops)
        self.index = {id(op): k for k, op in enumerate(self.ops)}
        self.group_of = list(range(len(self.ops)))
        self.members: dict[int, list[int]] = {k: [k] for k in range(len(self.ops))}
        self.producers = [[self.index[id(p)] for v in op.inputs if (p := program.producer(v)) is not None]
                          for op in self.ops]
        self.consumers: list[list[int]] = [[] for _ in self.ops]
        for k, prods in enumerate(self.producers):
            for p in prods:
                self.consumers[p].append(k)

    def successors(self, g: int) -> set[int]:
        return {self.group_of[c] for m in self.members[g] for c in self.consumers[m]} - {g}

    def reaches_through_other(self, src: int, dst: int) -> bool:
        """A path src -> X -> ... -> dst with X neither src nor dst."""
        stack = [s for s in self.successors(src) if s != dst]
        seen = set(stack)
        while stack:
            g = stack.pop()
            for s in self.successors(g):
                if s == dst:
                    return True
                if s not in seen and s != src:
                    seen.add(s)
                    stack.append(s)
        return False

    def try_merge(self, pg: int, cg: int) -> bool:
        if pg == cg or len(self.members[pg]) + len(self.members[cg]) > MAX_GROUP_OPS:
            return False
        edges = [(p, c) for c in self.members[cg] for p in self.producers[c] if self.group_of[p] == pg]
        edges += [(p, c) for c in self.members[pg] for p in self.producers[c] if self.group_of[p] == cg]
        if not all(can_fuse_edge(self.ops[p], self.ops[c]) for p, c in edges):
            return False
        union = sorted(self.members[pg] + self.members[cg])
        if not group_is_valid([self.ops[k] for k in union]):
            return False
        if self.reaches_through_other(pg, cg) or self.reaches_through_other(cg, pg):
            return False
        for k in self.members.pop(cg):
            self.group_of[k] = pg
        self.members[pg] = union
        return True


def fuse(program: Program) -> FusionPlan:
    """Partition a decomposed program into fused groups (see the module docstring)."""
    for op in program.ops:
        if get_op(op.type).composite:
            raise FrontendError(f"fuse: op '{op.output.name}' ({op.type}) is composite; run decompose() "
                                "first "
                                "(cinn_py.frontend.graph_passes.optimize)")
    part = _Partition(program)
    for c in range(len(part.ops)):
        for p in part.producers[c]:
            part.try_merge(part.group_of[p], part.group_of[c])
    return FusionPlan(program, tuple(_groups(program, part)))


def _groups(program: Program, part: _Partition) -> list[Group]:
    order = _topological_groups(part)
    outputs = {id(v) for v in program.outputs}
    groups = []
    # A program's name is any string the user chose; its groups' kernels need an identifier.
    prefix = program.name if is_identifier(program.name) else sanitize_identifier(program.name)
    for n, g in enumerate(order):
        ops = tuple(part.ops[k] for k in part.members[g])
        produced = {id(op.output) for op in ops}
        inputs: dict[int, Variable] = {}
        for op in ops:
            for v in op.inputs:
                if id(v) not in produced:
                    inputs.setdefault(id(v), v)
        read_outside = {id(part.ops[m].output) for m in part.members[g]
                        if any(part.group_of[c] != g for c in part.consumers[m])}
        outs = tuple(op.output for op in ops if id(op.output) in outputs or id(op.output) in read_outside)
        groups.append(Group(f"{prefix}_group_{n}", ops, tuple(inputs.values()), outs,
                            _shape_inputs(program, ops, tuple(inputs.values()))))
    return groups


def _topological_groups(part: _Partition) -> list[int]:
    """Groups ordered by a Kahn walk; ties broken by the first op's position (deterministic)."""
    groups = sorted(part.members, key=lambda g: part.members[g][0])
    indegree = {g: 0 for g in groups}
    succ = {g: part.successors(g) for g in groups}
    for g in groups:
        for s in succ[g]:
            indegree[s] += 1
    ready = [g for g in groups if indegree[g] == 0]
    order: list[int] = []
    while ready:
        ready.sort(key=lambda g: part.members[g][0])
        g = ready.pop(0)
        order.append(g)
        for s in succ[g]:
            indegree[s] -= 1
            if indegree[s] == 0:
                ready.append(s)
    if len(order) != len(groups):  # try_merge keeps the group graph acyclic; this is a bug guard
        raise RuntimeError("fuse: the group graph has a cycle")
    return order


def _shape_inputs(program: Program, ops: Sequence[Operator],
                  inputs: Sequence[Variable]) -> tuple[Variable, ...]:
    bound = {d.name for v in inputs for d in v.shape if not isinstance(d, int) and hasattr(d, "name")}
    needed = {s.name for op in ops for v in (*op.inputs, op.output) for s in symbols_of(v.shape)}
    extra: list[Variable] = []
    for name in sorted(needed - bound):
        carrier = next(v for v in program.inputs if any(getattr(d, "name", None) == name for d in v.shape))
        if all(c is not carrier for c in extra) and all(c is not carrier for c in inputs):
            extra.append(carrier)
    return tuple(extra)


def plan(program: Program) -> FusionPlan:
    """The fused groups of `program` after the default graph passes (what `compile_program`
    builds; `cinn_py.lowering.group.lower_group` lowers one)."""
    if not isinstance(program, Program):
        raise TypeError(f"expected a Program (NetBuilder.build()), got {type(program).__name__}")
    return fuse(optimize(program))
