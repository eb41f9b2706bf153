"""The static memory plan of a compiled program run as one native call (`cinn_py.runtime.native`).

`plan_graph(fusion, funcs)` decides, once at compile time, where every value between kernels
lives and what each kernel call receives:

- a program input or output lives in the caller's array (`Slot("input", k)`, `Slot("output", k)`);
- a value only kernels read lives in one arena (`Slot("temp", j)`), at an offset that temporaries
  whose lifetimes do not overlap share (liveness-based reuse: a temporary is live from the call
  that writes it to the last call that reads it, both included, since a kernel's buffers are
  `noalias`);
- a group of reshapes only is no call at all: its output is the same memory as its input (every
  value is a dense row-major buffer), and a temporary reshaped into a program output is written
  by its producer straight into the output array. A program output never shares memory with an
  input or another output (a caller may write one in place), so such a reshape stays a kernel.

Sizes are expressions of the program's symbolic dims: `GraphPlan.layout(env)` evaluates them for
one call's symbol values (the same shape functions the kernels' infer-shape code computes) and
places the temporaries (greedy by size, largest first, at the lowest offset no live-overlapping
temporary occupies), which the caller caches per size signature. A program the plan cannot
express (an output that is an input or repeats another, a kernel whose signature differs from its
group's values) gets the reason instead, and runs kernel by kernel.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cinn_py.frontend.fusion import FusionPlan, Group
from cinn_py.frontend.program import Variable
from cinn_py.ir import ArgIO, Expr, IntImm, LoweredFunc, Var, walk
from cinn_py.runtime.args import eval_int_expr, storage_dtype

ALIGNMENT = 64
"""Byte alignment of every temporary in the arena (a cache line; the widest vector loads)."""


@dataclass(frozen=True)
class Slot:
    """Where one argument of a kernel call comes from: `kind` is "input"/"output" (the caller's
    k-th array), "temp" (the arena, at the j-th temporary's offset) or "symbol" (the value of the
    i-th symbolic dim of `GraphPlan.symbols`)."""

    kind: str
    index: int


@dataclass(frozen=True)
class PlannedCall:
    """One kernel call: the group's index (the kernel's) and a slot per argument of its function,
    in the function's argument order."""

    group: int
    args: tuple[Slot, ...]


@dataclass(frozen=True)
class Temp:
    """A temporary: its dtype's size and shape (expressions of symbolic dims), and the first and
    last call (indices into `GraphPlan.calls`) that use it."""

    itemsize: int
    shape: tuple[Expr | int, ...]
    first: int
    last: int

    def nbytes(self, env: Mapping[str, int]) -> int:
        return self.itemsize * math.prod(_dims(self.shape, env))


@dataclass(frozen=True)
class Layout:
    """A plan's placement for one set of symbol values: each temporary's offset, the arena size,
    the output shapes and the symbol values in `GraphPlan.symbols` order."""

    offsets: tuple[int, ...]
    arena_bytes: int
    output_shapes: tuple[tuple[int, ...], ...]
    symbol_values: tuple[int, ...]


@dataclass(frozen=True)
class GraphPlan:
    """The calls of a program and its temporaries (see the module docstring)."""

    calls: tuple[PlannedCall, ...]
    temps: tuple[Temp, ...]
    symbols: tuple[str, ...]
    n_inputs: int
    output_shapes: tuple[tuple[Expr | int, ...], ...]
    checks: tuple[tuple[tuple[Expr | int, ...], tuple[Expr | int, ...], str], ...]
    """(the shape a kernel argument declares, the shape of the value passed, what it is): equal
    for every symbol value the program admits, checked per size signature in `layout`."""

    @property
    def n_outputs(self) -> int:
        return len(self.output_shapes)

    def layout(self, env: Mapping[str, int]) -> Layout:
        """Offsets, arena size and output shapes for one call's symbol values; ValueError when a
        kernel would see a shape other than its declared one (the caller runs kernel by kernel)."""
        for declared, given, what in self.checks:
            want, got = _dims(declared, env), _dims(given, env)
            if want != got:
                raise ValueError(f"{what}: the kernel declares shape {want}, the graph passes {got}")
        offsets, total = place(self.temps, [t.nbytes(env) for t in self.temps])
        shapes = tuple(_dims(shape, env) for shape in self.output_shapes)
        return Layout(offsets, total, shapes, tuple(env[name] for name in self.symbols))


def _dims(shape: Sequence[Expr | int], env: Mapping[str, int]) -> tuple[int, ...]:
    """A shape of ints and dim expressions (a Variable's static dims are ints) for `env`."""
    return tuple(d if isinstance(d, int) else int(d.value) if isinstance(d, IntImm)
                 else eval_int_expr(d, dict(env))
                 for d in shape)


def place(temps: Sequence[Temp], sizes: Sequence[int]) -> tuple[tuple[int, ...], int]:
    """Offsets of `temps` of byte `sizes` in one arena, and its size: largest first, each at the
    lowest aligned offset where it overlaps no placed temporary whose lifetime overlaps its own
    (TFLite's greedy-by-size arena planner)."""
    order = sorted(range(len(temps)), key=lambda k: (-sizes[k], temps[k].first, k))
    offsets = [0] * len(temps)
    placed: list[int] = []
    total = 0
    for k in order:
        size = _aligned(sizes[k])
        busy = sorted((offsets[j], offsets[j] + _aligned(sizes[j])) for j in placed
                      if temps[j].first <= temps[k].last and temps[k].first <= temps[j].last)
        offset = 0
        for start, end in busy:
            if offset + size <= start:
                break
            offset = max(offset, end)
        offsets[k] = offset
        placed.append(k)
        total = max(total, offset + size)
    return tuple(offsets), total


def _aligned(nbytes: int) -> int:
    return -(-max(nbytes, 1) // ALIGNMENT) * ALIGNMENT


def is_reshape_group(group: Group) -> bool:
    """A group of reshapes of one array: its output is its input's memory, reinterpreted."""
    return len(group.args) == 1 and len(group.outputs) == 1 and all(op.type == "reshape" for op in group.ops)


def plan_graph(fusion: FusionPlan, funcs: Sequence[LoweredFunc]) -> GraphPlan | str:
    """The plan of running `fusion`'s groups with the kernels of `funcs` (one per group, the
    functions as compiled), or why there is none."""
    program = fusion.program
    inputs = {id(v): k for k, v in enumerate(program.inputs)}
    outputs: dict[int, int] = {}
    for k, v in enumerate(program.outputs):
        if id(v) in inputs or id(v) in outputs:
            return f"program output {k} ('{v.name}') is an input or another output"
        outputs[id(v)] = k
    if not fusion.groups:
        return "no kernels"
    symbols = tuple(sorted({n.name for v in program.inputs for d in v.shape for n in walk(d)
                            if isinstance(n, Var)}))
    storage = _Storage(inputs, outputs)
    calls: list[tuple[int, Group, LoweredFunc]] = []
    for index, (group, func) in enumerate(zip(fusion.groups, funcs)):
        if is_reshape_group(group) and storage.alias(group.args[0], group.outputs[0]):
            continue
        reason = _signature_problem(group, func, symbols)
        if reason is not None:
            return reason
        calls.append((index, group, func))
    return storage.plan(calls, symbols, program.inputs, program.outputs)


def _signature_problem(group: Group, func: LoweredFunc, symbols: tuple[str, ...]) -> str | None:
    """Why `func` cannot take the group's values as they are, or None."""
    if len(func.inputs) != len(group.args) or len(func.outputs) != len(group.outputs):
        return (f"kernel '{func.name}' takes {len(func.inputs)} input(s) and {len(func.outputs)} output(s), "
                f"its group {len(group.args)} and {len(group.outputs)}")
    for tensor, var in zip((*func.inputs, *func.outputs), (*group.args, *group.outputs)):
        if storage_dtype(tensor.dtype) != storage_dtype(var.dtype) or tensor.ndim != len(var.shape):
            return (f"kernel '{func.name}': argument '{tensor.name}' is {tensor.dtype}[{tensor.ndim}-d], "
                    f"the value '{var.name}' {var.dtype}[{len(var.shape)}-d]")
    unknown = [v.name for v in func.scalar_args if v.name not in symbols]
    if unknown:
        return f"kernel '{func.name}': symbolic dims {unknown} are not dims of the program's inputs"
    return None


class _Storage:
    """Which memory each value uses: aliases of reshapes, then temporaries with their lifetimes."""

    def __init__(self, inputs: dict[int, int], outputs: dict[int, int]) -> None:
        self.inputs = inputs
        self.outputs = outputs
        self.root: dict[int, Variable] = {}
        """A reshape's output -> the value whose memory it is."""
        self.bound_output: dict[int, int] = {}
        """A temporary's root -> the program output it is written into."""

    def find(self, var: Variable) -> Variable:
        while id(var) in self.root:
            var = self.root[id(var)]
        return var

    def alias(self, source: Variable, result: Variable) -> bool:
        """Make `result` the memory of `source` when no program output would share memory with
        an input or another output; False when the reshape must copy."""
        root = self.find(source)
        if id(result) not in self.outputs:
            self.root[id(result)] = root
            return True
        if id(root) in self.inputs or id(root) in self.outputs or id(root) in self.bound_output:
            return False
        self.root[id(result)] = root
        self.bound_output[id(root)] = self.outputs[id(result)]
        return True

    def slot_of_root(self, root: Variable, temps: dict[int, int]) -> Slot:
        if id(root) in self.inputs:
            return Slot("input", self.inputs[id(root)])
        if id(root) in self.outputs:
            return Slot("output", self.outputs[id(root)])
        if id(root) in self.bound_output:
            return Slot("output", self.bound_output[id(root)])
        return Slot("temp", temps[id(root)])

    def plan(self, calls: list[tuple[int, Group, LoweredFunc]], symbols: tuple[str, ...],
             inputs: Sequence[Variable], outputs: Sequence[Variable]) -> GraphPlan:
        temps: dict[int, int] = {}
        spans: list[list[int]] = []
        roots: list[Variable] = []
        for step, (_, group, _) in enumerate(calls):
            for var in group.args:
                root = self.find(var)
                if id(root) in temps:
                    spans[temps[id(root)]][1] = step
            for var in group.outputs:
                root = self.find(var)
                if self.slot_of_root(root, {id(root): -1}).kind == "temp":
                    temps[id(root)] = len(spans)
                    spans.append([step, step])
                    roots.append(root)
        planned = []
        checks = []
        for index, group, func in calls:
            values = {t.name: v for t, v in zip((*func.inputs, *func.outputs), (*group.args, *group.outputs))}
            args = []
            for arg in func.args:
                if arg.tensor is None:
                    args.append(Slot("symbol", symbols.index(arg.var.name)))  # type: ignore[union-attr]
                    continue
                var = values[arg.tensor.name]
                args.append(self.slot_of_root(self.find(var), temps))
                if arg.io is ArgIO.INPUT or arg.io is ArgIO.OUTPUT:
                    checks.append((tuple(arg.tensor.shape), tuple(var.shape),
                                   f"kernel '{func.name}' argument '{arg.tensor.name}' (value '{var.name}')"))
            planned.append(PlannedCall(index, tuple(args)))
        temp_list = tuple(Temp(storage_dtype(r.dtype).itemsize, tuple(r.shape), first, last)
                          for r, (first, last) in zip(roots, spans))
        return GraphPlan(tuple(planned), temp_list, symbols, len(inputs),
                         tuple(tuple(v.shape) for v in outputs),
                         tuple(checks))


__all__ = ["ALIGNMENT", "GraphPlan", "Layout", "PlannedCall", "Slot", "Temp", "is_reshape_group", "place",
           "plan_graph"]
