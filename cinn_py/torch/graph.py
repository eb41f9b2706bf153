"""One FX graph of ATen ops (a partition of AOT autograd's forward or backward) as a compiled Program.

`unsupported_reason(node)` is the partitioner's test: a node converts when its op has a converter
(cinn_py/torch/converters/) that accepts this call, every tensor it reads or produces has a dtype
NetBuilder takes and sizes that are ints or symbolic dims cinn-py expresses (sums, products and
powers of torch's symbols, exact floor divisions), and a symbolic scalar operand only where the
op takes it as a 0-d input (`SCALAR_OPERAND_OPS`). `CompiledGraph.build(graph_module,
input_types)` converts the graph to a `Program` (tensor placeholders become inputs named after
them, SymInt placeholders the symbolic dims they hold, the output node's values its outputs) and
compiles it with the automatic schedule, once for all sizes (cinn_py/torch/symbolic.py); calling
it binds and checks the sizes, then runs the kernels on torch tensors through DLPack: CPU tensors
as zero-copy numpy views, CUDA tensors passed as they are (the CUDA kernels take
`__cuda_array_interface__` arrays and allocate torch outputs).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch  # pyright: ignore[reportMissingImports]
from torch.fx.node import map_aggregate, map_arg  # pyright: ignore[reportMissingImports]

from cinn_py.diagnostics import CinnError
from cinn_py.frontend.net_builder import NetBuilder
from cinn_py.frontend.ops.base import SUPPORTED_DTYPES
from cinn_py.frontend.ops.shapes import assumed_dims, fmt_shape, shapes_equal
from cinn_py.frontend.program import Program, Variable, bind_inputs
from cinn_py.pipeline import compile_program
from cinn_py.runtime.threadpool import num_threads_override
from cinn_py.target import Target, host
from cinn_py.torch.converters import CONVERTERS, Emitter
from cinn_py.torch.fast_call import REBUILDS, FastCall, make_fast_call, new_output, output_specs
from cinn_py.torch.function import to_numpy, to_torch
from cinn_py.torch.index_guards import IndexGuard, guards_for, unchecked_reason
from cinn_py.torch.layout import InputLayout, LayoutMismatch, OutputLayout, input_layout, output_layout
from cinn_py.torch.symbolic import (
    CARRIER_DTYPE, InputPlan, SymbolTable, SymIntInput, TensorInput, check_bindable, dim_reason, factors,
    is_symbolic,
)

# Ops that only re-view their input: a partition of these alone is not worth a kernel launch.
VIEW_OPS = frozenset({"aten.view.default", "aten._unsafe_view.default", "aten.reshape.default",
                      "aten.t.default",
                      "aten.transpose.int", "aten.permute.default", "aten.expand.default",
                      "aten.detach.default",
                      "aten.alias.default", "aten.squeeze.dim", "aten.squeeze.dims", "aten.unsqueeze.default",
                      "aten.clone.default", "_operator.getitem"})


class ConversionError(CinnError):
    """An FX node could not be expressed as NetBuilder ops (the op, the node and the mismatch)."""


@dataclass(frozen=True)
class TensorSpec:
    """dtype name (NetBuilder's), shape and device of one tensor; a symbolic size is a torch SymInt."""

    dtype: str
    shape: tuple[Any, ...]
    device: str
    layout: InputLayout | None = None
    """How a strided tensor (a transposed, expanded or sliced view) enters the Program in place
    (cinn_py/torch/layout.py); None: it is row-major."""

    @staticmethod
    def of(value: Any) -> TensorSpec:
        shape = tuple(s if is_symbolic(s) else int(s) for s in value.shape)
        return TensorSpec(str(value.dtype).removeprefix("torch."), shape, value.device.type,
                          input_layout(value))


@dataclass(frozen=True)
class SymIntSpec:
    """A SymInt placeholder (a size torch passes as an int argument)."""

    value: Any


InputSpec = TensorSpec | SymIntSpec


def input_spec(value: Any) -> InputSpec:
    """The spec of a placeholder's example value (a fake tensor or a SymInt)."""
    return TensorSpec.of(value) if isinstance(value, torch.Tensor) else SymIntSpec(value)


def op_name(node: Any) -> str:
    """`aten.add.Tensor`, `_operator.getitem`, ...: the name reports and converters use."""
    target = node.target
    return "_operator.getitem" if target is operator.getitem else str(target)


def _tensors(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    return [value] if isinstance(value, torch.Tensor) else []


def _value_reason(value: Any) -> str | None:
    names = {d.scalar_name() for d in SUPPORTED_DTYPES}
    for t in _tensors(value):
        spec_dtype = str(t.dtype).removeprefix("torch.")
        if spec_dtype not in names:
            return f"dtype {spec_dtype}"
        reason = next((r for r in map(dim_reason, t.shape) if r is not None), None)
        if reason is not None:
            return reason
        if t.device.type not in ("cpu", "cuda"):
            return f"device {t.device.type}"
    return None


def is_size_value(value: Any) -> bool:
    """A SymInt/SymFloat/SymBool or Python number: the value of a size computation, not a tensor."""
    return isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool, int, float, bool))


SCALAR_OPERAND_OPS = frozenset(
    f"aten.{op}.{overload}" for op
    in ("add", "sub", "rsub", "mul", "div", "maximum", "minimum", "gt", "ge", "lt",
                                       "le", "eq", "ne") for overload in ("Tensor", "Scalar")
) | {"aten.scalar_tensor.default", "aten.full.default"}
"""Ops that take a SymInt operand as a number (a 0-d int64 input of the Program, `is_scalar_use`)."""


def _symbolic_scalar_reason(node: Any) -> str | None:
    """Sizes may be symbolic (lists of SymInts: view/expand/full sizes, taken from the fake
    tensors); a SymInt used as a number only by the ops of `SCALAR_OPERAND_OPS`, a SymFloat or
    SymBool by none (NetBuilder's constants are numbers)."""
    for arg in (*node.args, *node.kwargs.values()):
        value = arg.meta.get("val") if isinstance(arg, torch.fx.Node) else arg
        if is_symbolic(value) and isinstance(arg, torch.fx.Node) and op_name(node) in SCALAR_OPERAND_OPS:
            continue
        if isinstance(value, (torch.SymFloat, torch.SymBool)) or is_symbolic(value):
            label = arg.name if isinstance(arg, torch.fx.Node) else "argument"
            return f"scalar {label} = {value} is symbolic (only sizes may be)"
    return None


def is_scalar_use(node: Any) -> bool:
    """Whether some user of the placeholder `node` takes it as an operand, not within a size list."""
    return any(node in (*user.args, *user.kwargs.values()) for user in node.users)


def unsupported_reason(node: Any) -> str | None:
    """Why `node` stays in eager PyTorch, or None when it converts."""
    if node.op != "call_function":
        return f"{node.op} node"
    if node.target is operator.getitem:
        return unsupported_reason(node.args[0])
    rule = CONVERTERS.get(op_name(node))
    if rule is None:
        return _effectful_reason(node) or "no converter"
    for value in (node.meta.get("val"), *[a.meta.get("val") for a in node.all_input_nodes]):
        reason = _value_reason(value)
        if reason is not None:
            return reason
    if node.meta.get("val") is None:
        return "no fake-tensor metadata"
    reason = _symbolic_scalar_reason(node)
    if reason is not None:
        return reason
    reason = rule.check(*node.args, **node.kwargs) if rule.check is not None else None
    return reason if reason is not None else unchecked_reason(node, op_name(node))


def _effectful_reason(node: Any) -> str | None:
    """A `with_effects` node (an op with side effects, ordered by a token: the error checks of
    LAPACK results, `_print`) is named by the op it calls: reports say what stayed eager."""
    if op_name(node) != "with_effects" or len(node.args) < 2:
        return None
    return f"no converter for the effectful call of {node.args[1]}"


def _var_of(env: dict[Any, Any], arg: Any) -> Any:
    if isinstance(arg, (list, tuple)):
        return type(arg)(_var_of(env, a) for a in arg)
    return env[arg] if isinstance(arg, torch.fx.Node) else arg


REPLAYED_VIEWS = frozenset({"aten.view.default", "aten._unsafe_view.default", "aten.reshape.default",
                            "aten.t.default",
                            "aten.transpose.int", "aten.permute.default", "aten.expand.default",
                            "aten.squeeze.dim", "aten.squeeze.dims", "aten.unsqueeze.default",
                            "aten.alias.default",
                            "aten.detach.default", "aten.slice.Tensor", "aten.select.int"})
"""Views a graph output may end with that are applied to the result tensor by torch (`OutputView`)
instead of computed by a kernel: in eager they cost nothing, and the transposes AOT autograd saves
for the backward (`t(x)` for a weight gradient) were a kernel pass with strided stores each (one
fused into the forward's gelu kernel made it 7x slower). A slice or select at an output is a view
of the whole value too, as eager's: its strides are eager's (a kernel computing only the slice
would return it dense)."""


@dataclass(frozen=True)
class OutputView:
    """One graph output: `source` >= 0 is that Program output, -1 - k the graph's k-th argument;
    then `views` (aten op, its arguments after the tensor, its keyword arguments) in order."""

    source: int
    views: tuple[tuple[Any, tuple[Any, ...], dict[str, Any]], ...] = ()

    def __call__(self, outs: Sequence[Any], args: Sequence[Any]) -> Any:
        t = outs[self.source] if self.source >= 0 else args[-1 - self.source]
        sizes: dict[Any, Any] = {}

        def value(a: Any) -> Any:
            return a(args, sizes) if isinstance(a, SizeArg) else a

        for op, rest, kwargs in self.views:
            rest, kwargs = map_aggregate((rest, kwargs), value)
            t = op(t, *rest, **kwargs)
        return t


@dataclass(frozen=True)
class SizeArg:
    """A size argument of an output view that is a node of the graph: a SymInt under dynamic shapes
    (`view(x, [s0, s1*s2])`, its sizes read by `sym_size` and multiplied). It is computed at each
    call from the graph's arguments by those size ops, so the view is still torch's: an output that
    aliases an input must have its real strides (AOT autograd rebuilds it with `as_strided` of the
    input from them)."""

    node: Any
    placeholders: tuple[Any, ...]

    def __call__(self, args: Sequence[Any], sizes: dict[Any, Any]) -> Any:
        if not sizes:
            sizes.update(zip(self.placeholders, args))
        return _evaluated(self.node, sizes)


def _evaluated(node: Any, values: dict[Any, Any]) -> Any:
    if node not in values:
        args, kwargs = map_arg((node.args, node.kwargs), lambda n: _evaluated(n, values))
        values[node] = node.target(*args, **kwargs)
    return values[node]


def _sized(value: Any, placeholders: Sequence[Any]) -> Any:
    """`value` (a view's arguments) with each node in it a `SizeArg`."""
    if isinstance(value, torch.fx.Node):
        return SizeArg(value, tuple(placeholders))
    if isinstance(value, (list, tuple)):
        return type(value)(_sized(v, placeholders) for v in value)
    if isinstance(value, dict):
        return {k: _sized(v, placeholders) for k, v in value.items()}
    return value


def _size_computable(node: Any) -> bool:
    """Whether `node` is a size computed from the graph's arguments alone (`_evaluated` runs it)."""
    if node.op == "placeholder":
        return True
    if node.op != "call_function" or not is_size_value(node.meta.get("val")):
        return False
    found: list[Any] = []
    map_arg((node.args, node.kwargs), found.append)
    return all(n.op == "placeholder" or _size_computable(n) for n in found)


def _replayable(node: Any) -> bool:
    found: list[Any] = []
    map_arg((node.args[1:], node.kwargs), found.append)
    return all(is_size_value(n.meta.get("val")) and _size_computable(n) for n in found)


def _view_chain(node: Any) -> tuple[Any, list[Any]]:
    """The node an output is a chain of views of (the output itself when it is none), and the views
    from that node to the output. A size argument that is a node must be computable from the
    graph's arguments (`SizeArg`)."""
    chain: list[Any] = []
    while (node.op == "call_function" and op_name(node) in REPLAYED_VIEWS and node.args
           and isinstance(node.args[0], torch.fx.Node) and _replayable(node)):
        chain.append(node)
        node = node.args[0]
    return node, chain[::-1]


def _output_views(flat: Sequence[Any], placeholders: Sequence[Any], tensor_args: set[Any]
                  ) -> tuple[list[Any], tuple[OutputView, ...]]:
    """The nodes the Program computes and how each graph output is made from them: a view chain at
    the end of an output is left to torch (`REPLAYED_VIEWS`); a view of an argument is taken of the
    argument itself. No views (`()`): the Program computes every output as it is (also when it
    would compute nothing)."""
    computed: list[Any] = []
    views: list[OutputView] = []

    for out in flat:
        base, chain = _view_chain(out)
        steps = tuple((n.target, _sized(tuple(n.args[1:]), placeholders),
                       _sized(dict(n.kwargs), placeholders)) for n in chain)
        if chain and base in tensor_args:
            views.append(OutputView(-1 - placeholders.index(base), steps))
            continue
        if chain and base in computed:  # `x` and a view of it: one Program output
            views.append(OutputView(computed.index(base), steps))
            continue
        views.append(OutputView(len(computed), steps))
        computed.append(base)
    if not computed or all(v.source == k and not v.views for k, v in enumerate(views)):
        return list(flat), ()
    return computed, tuple(views)


def _checked(node: Any, value: Any, nb: NetBuilder, table: SymbolTable, fake: Any = None) -> Any:
    """`value` against the node's fake tensor(s): a cast where torch's dtype differs (type
    promotion, float32 statistics of low-precision inputs), an error on shape."""
    fake = node.meta["val"] if fake is None else fake
    if isinstance(value, tuple):
        return tuple(v if v is None or f is None else _checked(node, v, nb, table, f) for v,
                     f in zip(value, fake))
    spec = TensorSpec.of(fake)
    expected = table.shape(spec.shape)
    if not shapes_equal(value.shape, expected):
        raise ConversionError(f"{op_name(node)} ({node.format_node()}): converted to shape "
                              f"{fmt_shape(value.shape)}, "
                              f"torch says {fmt_shape(expected)}")
    return value if str(value.dtype) == spec.dtype else nb.cast(value, spec.dtype)


def _placeholder(nb: NetBuilder, table: SymbolTable, node: Any, spec: InputSpec, name: str
                 ) -> tuple[Any, TensorInput | SymIntInput]:
    """A placeholder's value in the Program (a Variable, or a dim for a SymInt) and how it enters.
    A tensor dim that is a product enters split into its factors and is reshaped back."""
    if isinstance(spec, SymIntSpec):
        value = table.dim(spec.value)
        if not is_scalar_use(node):
            return value, SymIntInput(node.name, value)
        return nb.create_input("int64", [], f"in_{node.name}"), SymIntInput(node.name, value, scalar=True)
    dims = table.shape(spec.shape)
    entry = TensorInput(node.name, dims, tuple(f for d in dims for f in factors(d)))
    check_bindable(name, entry)
    if spec.layout is not None and not entry.is_factored:
        entry = TensorInput(node.name, dims, entry.factored, spec.layout)
        var = nb.create_input(spec.dtype, spec.layout.entry_shape(dims), f"in_{node.name}")
        return spec.layout.build(nb, var, dims), entry
    var = nb.create_input(spec.dtype, list(entry.factored), f"in_{node.name}")
    return (nb.reshape(var, list(dims)) if entry.is_factored else var), entry


def to_program(gm: Any, inputs: Sequence[InputSpec], name: str
               ) -> tuple[Program, InputPlan, tuple[OutputView, ...], tuple[OutputLayout | None, ...]]:
    """The FX graph `gm` (every call_function node supported) as a NetBuilder Program, how the
    graph's arguments become the Program's inputs (symbolic sizes: cinn_py/torch/symbolic.py), how
    the graph's outputs are made from the Program's (`OutputView`), and the layout eager gives
    each Program output (`OutputLayout`: the Program computes it in eager's memory order)."""
    nb = NetBuilder(name)
    table = SymbolTable()
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(inputs):
        raise ConversionError(f"{name}: {len(placeholders)} placeholders, {len(inputs)} input types")
    table.plan_divisions(_sizes_of(inputs, gm))
    table.plan_atoms([d for spec in inputs if isinstance(spec, TensorSpec) for d in spec.shape],
                     [spec.value for spec in inputs if isinstance(spec, SymIntSpec)])
    facts = table.facts()
    with assumed_dims(facts):  # torch's guards pin products of symbols (`s0*s1 == 20`)
        return _convert(gm, nb, table, placeholders, inputs, name, facts)


def _convert(gm: Any, nb: NetBuilder, table: SymbolTable, placeholders: list[Any],
             inputs: Sequence[InputSpec], name: str, facts: Sequence[tuple[Any, int]]
             ) -> tuple[Program, InputPlan, tuple[OutputView, ...], tuple[OutputLayout | None, ...]]:
    env: dict[Any, Any] = {}
    entries: list[TensorInput | SymIntInput] = []
    for node, spec in zip(placeholders, inputs):
        env[node], entry = _placeholder(nb, table, node, spec, name)
        entries.append(entry)
    outputs: Any = None
    for node in gm.graph.nodes:
        if node.op == "output":
            outputs = node.args[0]
        elif node.op == "call_function" and node.target is operator.getitem:
            env[node] = env[node.args[0]][node.args[1]]
        elif node.op == "call_function":
            env[node] = _converted(nb, table, env, node, name)
        elif node.op != "placeholder":
            raise ConversionError(f"{name}: {node.op} node {node.format_node()} cannot be converted")
    plan = InputPlan.make(name, entries, list(table.symbols.values()), table.definitions(), facts)
    for s in plan.carriers:  # after the tensors, as InputPlan.bind passes them
        nb.create_input(CARRIER_DTYPE, [s], f"carrier_{s.name}")
    flat = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    tensor_args = {p for p, e in zip(placeholders, entries) if isinstance(e, TensorInput)}
    computed, views = _output_views(flat, placeholders, tensor_args)
    tensor_inputs = {env[p].name for p in tensor_args}
    layouts = tuple(output_layout(n.meta.get("val")) for n in computed)
    values = [nb.transpose(env[n], list(lay.order)) if lay is not None and lay.order is not None else env[n]
              for n, lay in zip(computed, layouts)]
    return nb.build(_distinct_outputs(nb, values, tensor_inputs)), plan, views, layouts


def _sizes_of(inputs: Sequence[InputSpec], gm: Any) -> list[Any]:
    """Every size of the graph: its inputs' and each node's (SymInts and ints)."""
    sizes = [d for spec in inputs for d in (spec.shape if isinstance(spec, TensorSpec) else (spec.value,))]
    for node in gm.graph.nodes:
        if node.op == "call_function":
            sizes += [d for t in _tensors(node.meta.get("val")) for d in t.shape]
    return sizes


def _converted(nb: NetBuilder, table: SymbolTable, env: dict[Any, Any], node: Any, name: str) -> Any:
    rule = CONVERTERS[op_name(node)]
    spec = TensorSpec.of(_tensors(node.meta["val"])[0])
    emitter = Emitter(nb, table.shape(spec.shape), spec.dtype)
    try:
        value = rule.convert(emitter, *_var_of(env, node.args),
                             **{k: _var_of(env, v) for k, v in node.kwargs.items()})
    except CinnError as exc:
        raise ConversionError(f"{name}: {op_name(node)} ({node.format_node()}): {exc}") from exc
    return _checked(node, value, nb, table)


def _distinct_outputs(nb: NetBuilder, values: list[Variable], input_names: set[str]) -> list[Variable]:
    """Program outputs are computed values, each once: inputs and repeats go through `identity`."""
    seen: set[str] = set()
    result = []
    for v in values:
        out = nb.identity(v) if v.name in seen or v.name in input_names else v
        seen.add(out.name)
        result.append(out)
    return result


@dataclass
class CompiledGraph:
    """A converted and compiled FX graph; `compiled(*args)` returns what the graph returns.

    Its arguments are the graph's placeholders in order: tensors, and ints for SymInt
    placeholders. With symbolic sizes one compiled Program serves every size: each call binds
    the symbols from the arguments and checks what the graph assumed (`InputPlan.bind`)."""

    program: Program
    compiled: Any
    device: str
    tuple_output: bool
    plan: InputPlan
    views: tuple[OutputView, ...] = ()
    """How each graph output is made from the Program's outputs (empty: they are the outputs)."""
    layouts: tuple[OutputLayout | None, ...] = ()
    """Per Program output, how it gets eager's strides (None: row-major, as computed)."""
    eager: Any = None
    """The graph module itself: it runs a call whose tensors cannot enter in the traced layout."""
    index_guards: tuple[IndexGuard, ...] = ()
    """Range checks of the graph's data-dependent indices, run before the kernels (index_guards.py)."""
    _native_sizes: dict[tuple[Any, ...], Any] = field(default_factory=dict, repr=False, compare=False)
    """Tensor signatures (dtype, shape, strides) that passed the checks -> the native layout."""
    _torch_dtypes: tuple[Any, ...] = field(init=False, repr=False, compare=False)
    """The torch dtype of each Program output (what the native call allocates)."""
    _fast: FastCall | None = field(default=None, repr=False, compare=False)
    """The last native signature's ready-made call (cinn_py/torch/fast_call.py)."""
    _fast_built: int = field(default=0, repr=False, compare=False)
    _plain_outputs: bool = field(init=False, repr=False, compare=False)
    """The Program's outputs are the graph's, as they are (no layouts, no views, a tuple)."""

    def __post_init__(self) -> None:
        self._torch_dtypes = tuple(getattr(torch, v.dtype.scalar_name()) for v in self.program.outputs)
        self._plain_outputs = not any(self.layouts) and not self.views and self.tuple_output

    @staticmethod
    def build(gm: Any, inputs: Sequence[InputSpec], name: str, schedule: str | None = "auto",
              fast_math: bool = False) -> CompiledGraph:
        devices = {s.device for s in inputs if isinstance(s, TensorSpec)}
        if len(devices) > 1:
            raise ConversionError(f"{name}: inputs on several devices {sorted(devices)}")
        device = devices.pop() if devices else "cpu"
        if device == "cuda":
            require_cuda(name)
        program, plan, views, layouts = to_program(gm, inputs, name)
        with assumed_dims(plan.facts):
            compiled = compile_program(program, device_target(device), schedule=schedule, fast_math=fast_math)
        output = next(n for n in gm.graph.nodes if n.op == "output")
        return CompiledGraph(program, compiled, device, isinstance(output.args[0], (list, tuple)),
                             plan, views,
                             layouts, gm, guards_for(gm))

    @property
    def kernels(self) -> int:
        return len(self.compiled.kernels)

    def __call__(self, *args: Any) -> Any:
        for guard in self.index_guards:  # before any kernel reads or writes through an index
            guard.check(args)
        fast = self._fast
        if fast is not None and fast.guards.check(*args):
            outs = fast.run(self.compiled.native, args)
            return outs if self._plain_outputs else self._finish(outs, args)
        try:
            tensors = self.plan.bind(args)
        except LayoutMismatch:
            if self.eager is None:
                raise
            return self.eager(*args)
        if self.device == "cuda":  # the CUDA kernels take the tensors and allocate torch outputs
            bound = {v.name: t.detach().contiguous() for v, t in zip(self.program.inputs, tensors)}
            result = self.compiled.run_bound(bound)
            outs = result if isinstance(result, tuple) else (result,)
        else:
            outs = self._run_cpu(tensors, args)
        return self._finish(outs, args)

    def _finish(self, outs: tuple[Any, ...], args: Sequence[Any]) -> Any:
        """The graph's outputs from the Program's: eager's strides, then the output views."""
        if any(self.layouts):
            outs = tuple(o if lay is None else lay(o) for o, lay in zip(outs, self.layouts))
        if self.views:
            outs = tuple(view(outs, args) for view in self.views)
        return outs if self.tuple_output else outs[0]

    def _run_cpu(self, tensors: Sequence[Any], args: Sequence[Any]) -> tuple[Any, ...]:
        """The Program's outputs for CPU tensors: one native call on the tensors' memory
        (`_run_native`) where the compiled program has its native graph, else the kernels one by
        one on zero-copy numpy views."""
        outs = self._run_native(tensors, args)
        if outs is not None:
            return outs
        with num_threads_override(torch.get_num_threads()):
            result = self.compiled(*[to_numpy(t) for t in tensors])
        arrays = result if isinstance(result, tuple) else (result,)
        return tuple(to_torch(o, v.dtype) for o, v in zip(arrays, self.program.outputs))

    def _run_native(self, tensors: Sequence[Any], args: Sequence[Any]
                    ) -> tuple[Any, ...] | None:
        """One native call (cinn_py/runtime/native.py): inputs passed by data pointer, outputs
        allocated with `new_output` (torch's `empty_strided`) and written in place, parallel
        loops on torch's intra-op thread count (`torch.get_num_threads()`: the two pools then use
        the cores torch was told to use, not both all of them). The first call of a (dtype,
        shape, strides) signature is checked as numpy arrays (`CompiledProgram.size_native`);
        later ones only look it up, and the call's arguments get a `FastCall` that skips even
        that. None when the program has no native graph or these sizes do not fit its plan."""
        native = self.compiled.native
        if native is None:
            return None
        key = tuple([(t.dtype, t.shape, t.stride(), t.is_cpu) for t in tensors])
        sized = self._native_sizes.get(key)
        pointers = None
        if sized is None:
            arrays = [to_numpy(t) for t in tensors]  # contiguous: a strided tensor is copied once here
            bound, env = bind_inputs(self.compiled.program, arrays)
            sized = self.compiled.size_native(env)
            if sized is None:
                return None
            if all(t.is_contiguous() for t in tensors) and len(self._native_sizes) < NATIVE_SIGNATURES:
                self._native_sizes[key] = sized
            else:  # this call runs on the contiguous copies
                pointers = [int(bound[v.name].ctypes.data) for v in self.compiled.plan.program.inputs]
        outs = tuple([new_output(shape, strides, dtype)
                      for shape, strides, dtype in output_specs(sized.output_shapes, self._torch_dtypes)])
        if pointers is None:
            pointers = [tensors[k].data_ptr() for k in self.compiled.input_positions]
        native.launch(sized, pointers + [o.data_ptr() for o in outs], torch.get_num_threads())
        if key in self._native_sizes and self._fast_built < REBUILDS:
            self._fast_built += 1
            self._fast = make_fast_call(args, tensors, self.compiled.input_positions, sized,
                                        self._torch_dtypes)
        return outs

NATIVE_SIGNATURES = 64
"""(dtype, shape, strides) signatures of tensors a CompiledGraph remembers for its native call."""


def device_target(device: str) -> Target:
    """The Target of the tensors' device type: the host CPU, or the GPU torch runs on (its compute
    capability from torch, so the kernels compile for the device the tensors live on)."""
    if device != "cuda":
        return host()
    major, minor = torch.cuda.get_device_capability()
    return Target.cuda(f"sm_{major}{minor}")


def require_cuda(name: str) -> None:
    """CUDA tensors run CUDA kernels launched through PyCUDA: both must be there."""
    if not torch.cuda.is_available():
        raise ConversionError(f"{name}: the graph's tensors are on CUDA but torch sees no CUDA device")
    try:
        import pycuda.driver  # noqa: F401, PLC0415  # pyright: ignore[reportMissingImports]
    except ImportError as exc:
        raise ConversionError(f"{name}: CUDA tensors need PyCUDA to launch cinn-py's CUDA kernels "
                              "(pip install 'cinn-py[cuda]')") from exc
