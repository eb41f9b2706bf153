"""One FX graph of ATen ops (a partition of AOT autograd's forward or backward) as a compiled Program.

Which nodes a partition holds is `cinn_py.torch.support.unsupported_reason`'s decision. Here,
`CompiledGraph.build(graph_module, input_types)` converts the graph to a `Program` (tensor
placeholders become inputs named after them, SymInt placeholders the symbolic dims they hold, the
output node's values its outputs, view chains at the outputs left to torch:
cinn_py/torch/output_views.py) and compiles it with the automatic schedule, once for all sizes
(cinn_py/torch/symbolic.py); calling it binds and checks the sizes, then runs the kernels on torch
tensors: on the CPU as one native call on the tensors' memory (a repeated signature through
cinn_py/torch/fast_call.py), CUDA tensors passed as they are (the CUDA kernels take
`__cuda_array_interface__` arrays and allocate torch outputs).
"""
from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch  # pyright: ignore[reportMissingImports]

from cinn_py.diagnostics import CinnError
from cinn_py.frontend.net_builder import NetBuilder
from cinn_py.frontend.ops.shapes import assumed_dims, fmt_shape, shapes_equal
from cinn_py.frontend.program import Program, Variable, bind_inputs
from cinn_py.pipeline import compile_program
from cinn_py.runtime.threadpool import num_threads_override
from cinn_py.target import Target, host
from cinn_py.torch.converters import CONVERTERS, Emitter
from cinn_py.torch.fast_call import REBUILDS, FastCall, make_fast_call, new_output, output_specs
from cinn_py.torch.function import to_numpy, to_torch
from cinn_py.torch.index_guards import IndexGuard, guards_for
from cinn_py.torch.layout import LayoutMismatch, OutputLayout, output_layout
from cinn_py.torch.output_views import OutputView, output_views
from cinn_py.torch.support import (
    ConversionError, InputSpec, SymIntSpec, TensorSpec, is_scalar_use, op_name, tensors_of,
)
from cinn_py.torch.input_plan import InputPlan, SymIntInput, TensorInput, check_bindable, factors
from cinn_py.torch.symbolic import CARRIER_DTYPE, SymbolTable

def _var_of(env: dict[Any, Any], arg: Any) -> Any:
    if isinstance(arg, (list, tuple)):
        return type(arg)(_var_of(env, a) for a in arg)
    return env[arg] if isinstance(arg, torch.fx.Node) else arg


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
    computed, views = output_views(flat, placeholders, tensor_args)
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
            sizes += [d for t in tensors_of(node.meta.get("val")) for d in t.shape]
    return sizes


def _converted(nb: NetBuilder, table: SymbolTable, env: dict[Any, Any], node: Any, name: str) -> Any:
    rule = CONVERTERS[op_name(node)]
    spec = TensorSpec.of(tensors_of(node.meta["val"])[0])
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
