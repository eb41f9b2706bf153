"""The `torch.compile` backend: `torch.compile(model, backend="cinn_py")`.

Registered under the name `cinn_py` by the `torch_dynamo_backends` entry point (pyproject.toml).
TorchDynamo hands the backend an FX graph of torch calls; AOT autograd (`aot_autograd` with our
forward and backward compilers) traces it to ATen ops, functionalised, and splits it into a
forward and a backward graph, its min-cut partitioner choosing what the forward saves for the
backward. Each graph is then partitioned (`CapabilityBasedPartitioner`) into the largest
subgraphs of ops cinn-py converts (`graph.unsupported_reason`); every such subgraph becomes a
Program compiled with `schedule="auto"`, and the ops outside them run in eager PyTorch. What was
compiled and what fell back, per graph, is in `reports()` / `last_report()` (and logged at INFO on
the `cinn_py.torch` logger).

Shapes: with `dynamic=False` each new input shape is a new Dynamo graph, compiled again
(compiled kernels are cached on disk). A graph traced with symbolic shapes (`dynamic=True`,
`torch._dynamo.mark_dynamic`, or Dynamo's automatic dynamic shapes after a shape change) is
compiled once with cinn-py symbolic dims and serves every size torch's guards let through; the
size arithmetic between partitions (`operator.mul` of SymInts, `sym_size`) stays in Python and
reaches the partitions as int arguments (cinn_py/torch/symbolic.py). An op whose call needs a
size cinn-py cannot express (a floor division torch does not guarantee exact, a SymInt operand
of an op other than arithmetic, comparisons and `full`, a slice along a symbolic dim) stays
eager, reported with the reason.

Errors are never silent: a partition whose conversion or compilation raises (an internal error,
not an op without a converter) runs eagerly, but is recorded in the graph's report with its
traceback (`GraphReport.errors`, counted apart from `fallback`) and logged at WARNING; in strict
mode (option `strict`, or the environment variable `CINN_PY_TORCH_STRICT=1`, which the test suite
sets) it is raised instead. The reports of the last `REPORTS_KEPT` graphs are kept (`reports()`,
`last_report()`, `reset_reports()` clears them).

Random ops: a training graph's `native_dropout` is rewritten into `cinn_py::seeded_dropout` with
a seed drawn from torch's generator at each call (`converters/random.py`), so a compiled graph
draws a new mask per call and `torch.manual_seed` reproduces them.

Options (`torch.compile(..., options={...})`): `schedule` ("auto", or None for unscheduled
loop nests), `strict` (True: a partition that fails to compile raises instead of running eagerly;
default: `CINN_PY_TORCH_STRICT=1` in the environment) and `fast_math` (default False, as
Inductor: exact float semantics, libm's `expf`/`erff`/... and no reassociation, so results match
eager to rounding (PyTorch's OpInfo gradient samples pass `assert_close`'s default tolerances); True: float32
exp/log/tanh/erf/sigmoid/rsqrt as the
vectorised polynomials of `codegen.llvm.fastmath` (a few ulp) and reassociable float arithmetic,
much faster where those dominate: libm's scalar `erff` made a gelu kernel 4-10x slower).

Layouts: every tensor a partition returns has the strides eager gives it (the output node's fake
tensor), and strided inputs (transposed, expanded, sliced) are read in place
(cinn_py/torch/layout.py).
"""

from __future__ import annotations

import functools
import itertools
import logging
import os
import traceback
from collections import Counter, deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch  # pyright: ignore[reportMissingImports]
from torch.fx.passes.operator_support import OperatorSupportBase  # pyright: ignore[reportMissingImports]

from cinn_py.torch.converters.random import SEED_MARK, seed_dropout
from cinn_py.torch.graph import CompiledGraph, require_cuda
from cinn_py.torch.output_views import REPLAYED_VIEWS
from cinn_py.torch.support import VIEW_OPS, input_spec, is_size_value, op_name, unsupported_reason
from cinn_py.torch.symbolic import input_symbols, read_sizes_from_inputs

log = logging.getLogger("cinn_py.torch")

_GRAPH_IDS = itertools.count()
REPORTS_KEPT = 256
"""How many graph reports `reports()` keeps (the oldest are dropped first): a long-running
process compiling many graphs must not grow without bound."""
_REPORTS: deque[GraphReport] = deque(maxlen=REPORTS_KEPT)
STRICT_ENV = "CINN_PY_TORCH_STRICT"


@dataclass(frozen=True)
class PartitionError:
    """A partition that raised while being converted or compiled (its ops ran eagerly)."""

    partition: str
    ops: Counter[str]
    error: str
    """`ExceptionType: message`."""
    traceback: str
    """The formatted traceback, innermost frame last (where the internal error is)."""

    def __str__(self) -> str:
        return f"{self.partition} ({sum(self.ops.values())} ops): {self.error}"


@dataclass(frozen=True)
class GraphReport:
    """What the backend did with one AOT graph (a forward, backward or inference graph)."""

    name: str
    compiled: Counter[str]
    """Op name -> count of nodes running in cinn-py kernels."""
    fallback: Counter[str]
    """Op name -> count of nodes left to eager PyTorch (views between partitions excluded)."""
    reasons: dict[str, str]
    """Op name -> why it fell back (the first reason met)."""
    partitions: int
    kernels: int
    errors: tuple[PartitionError, ...] = ()
    """Partitions that raised while converting or compiling (their ops ran eagerly, not counted
    in `fallback`): internal errors, each with its traceback."""
    symbols: tuple[str, ...] = ()
    """The symbolic sizes of the graph's inputs (torch's names): compiled once for all their values."""

    @property
    def failed(self) -> Counter[str]:
        """Op name -> count of nodes that ran eagerly because their partition raised."""
        return sum((e.ops for e in self.errors), Counter())

    def __str__(self) -> str:
        total = sum(self.compiled.values()) + sum(self.fallback.values()) + sum(self.failed.values())
        sizes = f" (symbolic sizes {', '.join(self.symbols)})" if self.symbols else ""
        head = (f"cinn_py {self.name}{sizes}: {sum(self.compiled.values())} of {total} compute ops compiled "
                "in "
                f"{self.partitions} partition(s), {self.kernels} kernel(s)")
        lines = [head]
        lines += [f"  eager: {op} x{n} ({self.reasons.get(op, '?')})" for op,
                  n in sorted(self.fallback.items())]
        lines += [f"  error: {e}" for e in self.errors]
        return "\n".join(lines)


def reports() -> list[GraphReport]:
    """The reports of the graphs compiled since `reset_reports()` (oldest first), the last
    `REPORTS_KEPT` of them."""
    return list(_REPORTS)


def last_report() -> GraphReport | None:
    """The report of the graph compiled last (a backward graph is compiled at the first backward)."""
    return _REPORTS[-1] if _REPORTS else None


def reset_reports() -> None:
    """Forget every kept report."""
    _REPORTS.clear()


def strict_from_env() -> bool:
    """`CINN_PY_TORCH_STRICT=1` (or true/yes/on): partitions that fail to compile raise."""
    return os.environ.get(STRICT_ENV, "").strip().lower() in ("1", "true", "yes", "on")


@dataclass(frozen=True)
class Options:
    schedule: str | None = "auto"
    strict: bool = field(default_factory=strict_from_env)
    fast_math: bool = False

    @staticmethod
    def parse(options: Mapping[str, Any] | None) -> Options:
        given = dict(options or {})
        unknown = sorted(set(given) - {"schedule", "strict", "fast_math"})
        if unknown:
            raise TypeError(f"cinn_py backend: unknown options {unknown} (expected 'schedule', 'strict', "
                            "'fast_math')")
        return Options(**given)


def cinn_py_backend(gm: Any, example_inputs: Sequence[Any], **kwargs: Any) -> Any:
    """The Dynamo backend: AOT autograd with cinn-py compiling the forward and backward graphs."""
    from functorch.compile import min_cut_rematerialization_partition  # noqa: PLC0415
    from torch._dynamo.backends.common import aot_autograd  # noqa: PLC0415

    options = Options.parse(kwargs.get("options"))
    graph_id = next(_GRAPH_IDS)

    def compiler(kind: str) -> Any:
        return functools.partial(compile_graph, name=f"{kind} graph {graph_id}", options=options)

    backend = aot_autograd(fw_compiler=compiler("forward"), bw_compiler=compiler("backward"),
                           inference_compiler=compiler("inference"),
                           partition_fn=min_cut_rematerialization_partition)
    return backend(gm, example_inputs)


class _Support(OperatorSupportBase):
    """`unsupported_reason` of each node, asked once per node (the partitioner asks again)."""

    def __init__(self, reasons: Mapping[Any, str | None]) -> None:
        super().__init__()
        self.reasons = reasons

    def is_node_supported(self, submodules: Mapping[str, Any], node: Any) -> bool:
        reason = self.reasons[node] if node in self.reasons else unsupported_reason(node)
        return reason is None


def _is_compute(node: Any) -> bool:
    """A node computing tensors; views, size arithmetic on SymInts (`operator.mul`, `sym_size`)
    and run-time assertions on sizes are not counted (they stay in Python, between kernels)."""
    if node.op != "call_function" or op_name(node) in VIEW_OPS:
        return False
    if any(word in op_name(node) for word in ("_assert", "sym_constrain")) or node.meta.get(SEED_MARK):
        return False
    return not is_size_value(node.meta.get("val"))


def _needs_kernel(node: Any) -> bool:
    """A node that makes a partition worth compiling: a computation other than a slice or select,
    which eager returns as views. A partition of views alone stays eager: with symbolic strides
    (`[s0, 1, 1]` of stride `(s1, 1, 1)`) its kernels would return row-major copies."""
    return _is_compute(node) and op_name(node) not in REPLAYED_VIEWS


def _call_directly(fused: Any, node: Any, graph: CompiledGraph) -> None:
    """Replace the partition's submodule call by a call of the compiled graph itself: the
    generated forward then calls `CompiledGraph.__call__` without nn.Module's `__call__` machinery
    (hooks, forward dispatch: ~1.5 us a call)."""
    with fused.graph.inserting_before(node):
        direct = fused.graph.call_function(graph.__call__, node.args, node.kwargs)
    direct.meta = dict(node.meta)
    node.replace_all_uses_with(direct)
    fused.graph.erase_node(node)
    fused.delete_submodule(str(node.target))


def compile_graph(gm: Any, example_inputs: Sequence[Any], name: str, options: Options) -> Any:
    """One AOT graph: supported partitions compiled by cinn-py, the rest left to eager PyTorch."""
    from functorch.compile import make_boxed_func  # noqa: PLC0415
    from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner  # noqa: PLC0415

    if any(isinstance(t, torch.Tensor) and t.device.type == "cuda" for t in example_inputs):
        require_cuda(name)  # a clear error, not a silent eager fallback of every partition
    if read_sizes_from_inputs(gm.graph) | seed_dropout(gm):
        gm.recompile()
    fallback: Counter[str] = Counter()
    reasons: dict[str, str] = {}
    node_reasons: dict[Any, str | None] = {}
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        reason = node_reasons[node] = unsupported_reason(node)
        if reason is not None and _is_compute(node):
            fallback[op_name(node)] += 1
            reasons.setdefault(op_name(node), reason)
    partitioner = CapabilityBasedPartitioner(gm, _Support(node_reasons), allows_single_node_partition=True)
    partitions = [p for p in partitioner.propose_partitions() if any(_needs_kernel(n) for n in p.nodes)]
    fused = partitioner.fuse_partitions(partitions, prefix="cinn_")
    compiled: Counter[str] = Counter()
    kernels, errors = 0, []
    for node in list(fused.graph.nodes):
        if node.op != "call_module" or not str(node.target).startswith("cinn_"):
            continue
        sub: Any = fused.get_submodule(node.target)
        ops = Counter(op_name(n) for n in sub.graph.nodes if _is_compute(n))
        try:
            graph = CompiledGraph.build(sub, [input_spec(a.meta["val"]) for a in node.args],
                                        f"{name.replace(' ', '_')}_{node.target}", options.schedule,
                                        options.fast_math)
        except Exception as exc:  # an internal error: recorded with its traceback, raised when strict
            error = PartitionError(str(node.target), ops, f"{type(exc).__name__}: {exc}",
                                   traceback.format_exc())
            errors.append(error)
            log.warning("cinn_py %s: %s runs eagerly after an internal error:\n%s", name, node.target,
                        error.traceback)
            if options.strict:
                _REPORTS.append(GraphReport(name, compiled, fallback, reasons, len(partitions), kernels,
                                            tuple(errors), input_symbols(gm.graph)))
                raise
            continue
        _call_directly(fused, node, graph)
        compiled.update(ops)
        kernels += graph.kernels
    fused.recompile()
    real_recompile = getattr(fused, "real_recompile", None)
    if real_recompile is not None:  # a lazy GraphModule would route every call through __call__
        real_recompile()
    report = GraphReport(name, compiled, fallback, reasons, len(partitions) - len(errors), kernels,
                         tuple(errors),
                         input_symbols(gm.graph))
    _REPORTS.append(report)
    log.info("%s", report)
    return make_boxed_func(fused.forward)
