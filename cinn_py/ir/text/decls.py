"""The `// decl` header: what CINN's text leaves out, so the parser can rebuild the exact tree.

CINN's printer omits tensor dtypes and shapes, buffer names and memory scopes, the dtypes of loop
and iter vars, symbolic-dim bounds, reduce flags, call dtypes, `reduce_method`, and it prints some
literals ambiguously (`7` is int32 or uint32, `inf` is float32 or float64, `0.100000001f` is the
9-digit rounding of any nearby double). `print_ir(node, decls=True)` prepends one `// decl` line
per missing fact; the IR text after the header stays byte-identical to CINN's format. The grammar
is documented (EBNF) in `docs/ir.md`. Example:

    // decl func fn(input A, output B, scalar S0)
    // decl var S0 : int64 symbolic lower=1ll
    // decl tensor A : float32[S0, 32] global
    // decl tensor B : float32[S0, 32] global

A header switches the parser to *exact mode*: every tensor must be declared, and every var that
is not declared is a plain int32. Without a header the parser uses inference defaults (see
`parser.py`). This module also holds the defaults shared by the printer side (which emits a decl
only where the default would be wrong) and the parser side: `decode_literal`,
`default_call_signature`, `default_reduce_axes`, `decode_attr_value`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cinn_py.ir import dtype as dt
from cinn_py.ir import expr as E
from cinn_py.ir import stmt as S
from cinn_py.ir.buffer import Buffer, BufferRange, MemoryType, Tensor
from cinn_py.ir.dtype import DType
from cinn_py.ir.func import ArgIO, LoweredFunc, Module
from cinn_py.ir.intrinsics import lookup as lookup_intrinsic
from cinn_py.ir.text.names import format_name as _n
from cinn_py.ir.text.printer import IrPrinter, format_attr_value, print_ir

LITERAL_PREFIXES: dict[str, DType] = {
    "int8_t": dt.int8, "int16_t": dt.int16, "uint8_t": dt.uint8, "uint16_t": dt.uint16,
    "float16": dt.float16, "bfloat16": dt.bfloat16,
}
RAW_HALF_FUNCS: dict[str, DType] = {
    "cinn::common::raw_uint16_to_float16": dt.float16,
    "cinn::common::raw_uint16_to_bfloat16": dt.bfloat16,
}
_INT_RE = re.compile(r"-?\d+")
_FLOAT_RE = re.compile(r"-?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|inf|nan)")


# --------------------------------------------------------------------------------------------
# Defaults shared by the printer side and the parser side
# --------------------------------------------------------------------------------------------
def decode_literal(text: str, prefix: str | None = None) -> E.Expr:
    """The immediate a literal token denotes by default (`text` may start with `-`).

    `7` int32, `7ll` int64, `7ull` uint64, `2.5f` float32, `2.5` float64, `inf`/`nan` float32,
    `true`/`false` bool; `prefix` is a C cast prefix such as `int8_t` or `float16`.
    Raises ValueError when the text does not fit the prefix.
    """
    if text in ("true", "false"):
        if prefix is not None:
            raise ValueError(f"'({prefix})' cannot prefix '{text}'")
        return E.UIntImm(dt.bool_, int(text == "true"))
    body = text.lstrip("-")
    negative = text.startswith("-")
    if prefix is not None:
        target = LITERAL_PREFIXES[prefix]
        if target.is_float:
            if not body.endswith("f") and body not in ("inf", "nan"):
                raise ValueError(f"'({prefix})' needs a float literal with an 'f' suffix, got '{text}'")
            return E.FloatImm(target, _float_value(body.rstrip("f"), negative))
        if not body.isdigit():
            raise ValueError(f"'({prefix})' needs a plain integer literal, got '{text}'")
        value = -int(body) if negative else int(body)
        return E.IntImm(target, value) if target.is_int else E.UIntImm(target, value)
    if body in ("inf", "nan"):
        return E.FloatImm(dt.float32, _float_value(body, negative))
    if body.endswith("ull"):
        return E.UIntImm(dt.uint64, _int_value(body[:-3], negative))
    if body.endswith("ll"):
        return E.IntImm(dt.int64, _int_value(body[:-2], negative))
    if body.endswith("f"):
        return E.FloatImm(dt.float32, _float_value(body[:-1], negative))
    if any(c in body for c in ".eE") and not body.lower().startswith("0x"):
        return E.FloatImm(dt.float64, _float_value(body, negative))
    return E.IntImm(dt.int32, _int_value(body, negative))


def _int_value(body: str, negative: bool) -> int:
    value = int(body, 16) if body.lower().startswith("0x") else int(body)
    return -value if negative else value


def _float_value(body: str, negative: bool) -> float:
    value = float(body)
    return -value if negative else value


def half_from_bits(bits: int, dtype: DType) -> float:
    """The value of a float16/bfloat16 bit pattern (`raw_uint16_to_float16(0x7c00)` is inf)."""
    if not 0 <= bits <= 0xFFFF:
        raise ValueError(f"0x{bits:x} is not a 16-bit pattern")
    if dtype.kind == "bfloat":
        return float(np.frombuffer(np.uint32(bits << 16).tobytes(), np.float32)[0])
    return float(np.frombuffer(np.uint16(bits).tobytes(), np.float16)[0])


_INTRINSIC_CALLS = frozenset({"__syncthreads", "__syncwarp", "__threadfence", "__threadfence_block"})


def default_call_signature(name: str, args: tuple[E.Expr, ...]) -> tuple[DType, E.CallType]:
    """(dtype, call type) the parser gives `name(args)` when no decl says otherwise.

    `__`-prefixed names are intrinsics; `isnan`-like predicates return bool; otherwise the call
    has the dtype of its first non-string argument (float32 when it has none).
    """
    call_type = (E.CallType.INTRINSIC if name in _INTRINSIC_CALLS or name.startswith("__")
                 else E.CallType.EXTERN)
    typed = [a for a in args if not isinstance(a, E.StringImm)]
    if not typed:
        return (dt.int32 if call_type is E.CallType.INTRINSIC else dt.float32), call_type
    intrinsic = lookup_intrinsic(name)
    if intrinsic is not None:
        return intrinsic.result_dtype(typed[0].dtype), call_type
    return typed[0].dtype, call_type


def default_reduce_axes(body: E.Expr) -> tuple[E.Var, ...]:
    """The reduce-flagged vars of `body` in order of first use (the parser's default axes)."""
    from cinn_py.ir.visitor import walk

    seen: dict[str, E.Var] = {}
    for node in walk(body):
        if isinstance(node, E.Var) and node.is_reduce_axis and node.name not in seen:
            seen[node.name] = node
    return tuple(seen.values())


def decode_attr_value(text: str) -> Any:
    """A printed attr value read back by default: an int, a float, else the text as a string."""
    if _INT_RE.fullmatch(text):
        return int(text)
    if _FLOAT_RE.fullmatch(text):
        return float(text)
    return text


def attr_value_equal(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a) and math.isnan(b):
        return True
    return bool(a == b)


def format_decl_value(value: Any) -> str:
    """An attr or literal value in decl syntax: `true`, `3`, `0.1`, `"text"`."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ("nan" if math.isnan(value) else
                                                          ("inf" if value > 0 else "-inf"))
    if isinstance(value, int):
        return str(value)
    escaped = str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


# --------------------------------------------------------------------------------------------
# Tables filled by the parser from decl lines
# --------------------------------------------------------------------------------------------
@dataclass
class FuncDecl:
    """`func name(input A, output B, scalar S0) temp(_C)` plus an optional cuda_axis line."""

    name: str
    args: list[tuple[ArgIO, str]]
    temps: list[str]
    cuda_axis: tuple[tuple[E.Expr, ...], tuple[E.Expr, ...]] | None = None


@dataclass
class Section:
    """Declarations of one function (or of the whole text when it is not a Module)."""

    func: FuncDecl | None = None
    vars: dict[str, E.Var] = field(default_factory=dict)
    buffers: dict[str, Buffer] = field(default_factory=dict)
    tensors: dict[str, Tensor] = field(default_factory=dict)


@dataclass
class DeclTable:
    """All decls of a text: a global section, per-function sections, occurrence overrides."""

    global_section: Section = field(default_factory=Section)
    func_sections: list[Section] = field(default_factory=list)
    literals: dict[int, E.Expr] = field(default_factory=dict)
    calls: dict[int, tuple[DType, E.CallType]] = field(default_factory=dict)
    reduce_axes: dict[int, tuple[str, ...]] = field(default_factory=dict)
    block_methods: dict[int, tuple[str, S.ReduceMethod]] = field(default_factory=dict)
    """n-th schedule block (document order) -> (its name, its reduce_method)."""
    attrs: dict[int, dict[str, tuple[str, Any]]] = field(default_factory=dict)
    """n-th schedule block -> attr key -> (block name, exact value)."""
    root_is_stmt: bool = False
    present: bool = False
    """True when the text has at least one decl line (exact mode)."""


# --------------------------------------------------------------------------------------------
# Printing
# --------------------------------------------------------------------------------------------
class _Recorder(IrPrinter):
    """Prints like `IrPrinter` and records literals, calls and reduces in print order, so the
    header can name the n-th occurrence exactly as the parser counts them."""

    def __init__(self) -> None:
        super().__init__()
        self.literal_lines: list[str] = []
        self.call_lines: list[str] = []
        self.reduce_lines: list[str] = []
        self.block_lines: list[str] = []
        self.n_literals = self.n_calls = self.n_reduces = self.n_blocks = 0

    def _literal(self, node: E.IntImm | E.UIntImm | E.FloatImm, emit: Any) -> None:
        start = len(self.out)
        emit(node)
        text = "".join(self.out[start:])
        index = self.n_literals
        self.n_literals += 1
        if not structural_literal_equal(_reread_literal(text), node):
            value = format_decl_value(node.value if not node.dtype.is_bool else bool(node.value))
            self.literal_lines.append(f"literal #{index} : {node.dtype} = {value}")

    def print_IntImm(self, node: E.IntImm) -> None:
        self._literal(node, super().print_IntImm)

    def print_UIntImm(self, node: E.UIntImm) -> None:
        self._literal(node, super().print_UIntImm)

    def print_FloatImm(self, node: E.FloatImm) -> None:
        self._literal(node, super().print_FloatImm)

    def print_Call(self, node: E.Call) -> None:
        index = self.n_calls
        self.n_calls += 1
        if default_call_signature(node.name, node.args) != (node.dtype, node.call_type):
            self.call_lines.append(f"call #{index} : {node.dtype} {node.call_type.value}")
        super().print_Call(node)

    def print_ScheduleBlockRealize(self, node: S.ScheduleBlockRealize) -> None:
        index, block = self.n_blocks, node.schedule_block
        self.n_blocks += 1
        if block.reduce_method is not S.ReduceMethod.NONE:
            self.block_lines.append(f"block #{index} {_n(block.name)} "
                                    f"reduce_method={block.reduce_method.value}")
        for key, value in block.attrs:
            if not attr_value_equal(decode_attr_value(format_attr_value(value)), value):
                self.block_lines.append(f"attr #{index} {_n(block.name)} {key} = {format_decl_value(value)}")
        super().print_ScheduleBlockRealize(node)

    def print_Reduce(self, node: E.Reduce) -> None:
        index = self.n_reduces
        self.n_reduces += 1
        if default_reduce_axes(node.body) != node.reduce_axis:
            names = ", ".join(_n(v.name) for v in node.reduce_axis)
            self.reduce_lines.append(f"reduce #{index} axes({names})")
        super().print_Reduce(node)


def structural_literal_equal(a: E.Expr | None, b: E.Expr) -> bool:
    return a is not None and type(a) is type(b) and a == b


def _reread_literal(text: str) -> E.Expr | None:
    """What the parser reads for a printed literal (None if it would not read it back)."""
    try:
        for func, dtype in RAW_HALF_FUNCS.items():
            if text.startswith(func + "("):
                return E.FloatImm(dtype, half_from_bits(int(text[len(func) + 1:-1], 16), dtype))
        if text.startswith("("):
            prefix, rest = text[1:].split(")", 1)
            return decode_literal(rest, prefix)
        return decode_literal(text)
    except (ValueError, KeyError, TypeError):
        return None


class _Collector:
    """Gathers tensors, buffers, vars, blocks of a tree in first-seen order."""

    def __init__(self) -> None:
        self.tensors: dict[str, Tensor] = {}
        self.buffers: dict[str, Buffer] = {}
        self.vars: dict[str, E.Var] = {}
        self.binder_vars: dict[str, E.Var] = {}
        self.blocks: list[S.ScheduleBlock] = []

    def visit(self, node: Any) -> None:
        if isinstance(node, (tuple, list)):
            for item in node:
                self.visit(item)
        elif isinstance(node, E.Var):
            self.add_var(node, binder=False)
        elif isinstance(node, Tensor):
            self.add_tensor(node)
        elif isinstance(node, Buffer):
            self.add_buffer(node)
        elif isinstance(node, BufferRange):
            self.add_tensor(node.tensor)
            self.visit(node.ranges)
        elif isinstance(node, (E.Expr, S.Stmt)):
            self.visit_node(node)

    def visit_node(self, node: Any) -> None:
        import dataclasses

        if isinstance(node, S.ScheduleBlock):
            self.blocks.append(node)
        for f in dataclasses.fields(node):
            if f.name in ("uid", "dtype", "name"):
                continue
            value = getattr(node, f.name)
            if f.name in ("loop_var", "iter_vars", "symbol", "reduce_axis"):
                for var in value if isinstance(value, tuple) else (value,):
                    self.add_var(var, binder=True)
            else:
                self.visit(value)

    def add_var(self, var: E.Var, binder: bool) -> None:
        if binder and var.name not in self.binder_vars:
            self.binder_vars[var.name] = var
        if var.name not in self.vars:
            self.vars[var.name] = var
            self.visit((var.lower_bound, var.upper_bound))

    def add_tensor(self, tensor: Tensor) -> None:
        if tensor.name in self.tensors:
            return
        self.visit(tensor.shape)
        self.add_buffer(tensor.buffer)
        self.tensors[tensor.name] = tensor

    def add_buffer(self, buffer: Buffer) -> None:
        if buffer.name not in self.buffers:
            self.visit(buffer.shape)
            self.buffers[buffer.name] = buffer


def _exprs(items: tuple[E.Expr, ...]) -> str:
    return ", ".join(print_ir(x) for x in items)


def _var_line(var: E.Var) -> str | None:
    flags = []
    if var.is_symbolic_constant:
        flags.append("symbolic")
    if var.is_reduce_axis:
        flags.append("reduce")
    if var.lower_bound is not None:
        flags.append(f"lower={print_ir(var.lower_bound)}")
    if var.upper_bound is not None:
        flags.append(f"upper={print_ir(var.upper_bound)}")
    if var.dtype == dt.int32 and not flags:
        return None
    return f"var {_n(var.name)} : {var.dtype}" + "".join(" " + f for f in flags)


def _section_lines(root: Any, func: LoweredFunc | None) -> list[str]:
    collector = _Collector()
    if func is not None:
        for arg in func.args:
            if arg.tensor is not None:
                collector.add_tensor(arg.tensor)
            elif arg.var is not None:
                collector.add_var(arg.var, binder=True)
        collector.visit(func.temp_bufs)
        if func.cuda_axis_info is not None:
            collector.visit(func.cuda_axis_info.grid_dims + func.cuda_axis_info.block_dims)
    collector.visit(root)
    lines: list[str] = []
    if func is not None:
        lines.append(_func_line(func))
        info = func.cuda_axis_info
        if info is not None:
            lines.append(f"cuda_axis grid({_exprs(info.grid_dims)}) block({_exprs(info.block_dims)})")
    for name, var in collector.vars.items():
        line = _var_line(collector.binder_vars.get(name, var))
        if line:
            lines.append(line)
    lines.extend(_buffer_and_tensor_lines(collector))
    return lines


def _func_line(func: LoweredFunc) -> str:
    args = []
    for arg in func.args:
        target = arg.tensor.name if arg.tensor is not None else arg.var.name  # type: ignore[union-attr]
        args.append(f"{arg.io.value} {_n(target)}")
    line = f"func {_n(func.name)}({', '.join(args)})"
    if func.temp_bufs:
        line += f" temp({', '.join(_n(b.name) for b in func.temp_bufs)})"
    return line


def _buffer_and_tensor_lines(collector: _Collector) -> list[str]:
    """A tensor line per tensor; a buffer line only for buffers a tensor line cannot imply
    (another shape or dtype than every tensor viewing it, or a buffer without tensor)."""
    implied: dict[str, Buffer] = {}
    for tensor in collector.tensors.values():
        buf = tensor.buffer
        if buf.shape == tensor.shape and buf.dtype == tensor.dtype:
            implied.setdefault(buf.name, buf)
    lines = []
    for name, buf in collector.buffers.items():
        if implied.get(name) != buf:
            lines.append(f"buffer {_n(name)} : {buf.dtype}[{_exprs(buf.shape)}] {buf.memory_type.value}")
    # Tensors that imply their buffer first: the parser creates a buffer at its first tensor line.
    ordered = sorted(collector.tensors.values(), key=lambda t: implied.get(t.buffer.name) is not t.buffer
                     or t.buffer.shape != t.shape or t.buffer.dtype != t.dtype)
    for tensor in ordered:
        buf = tensor.buffer
        line = f"tensor {_n(tensor.name)} : {tensor.dtype}[{_exprs(tensor.shape)}]"
        if buf.name != f"_{tensor.name}":
            line += f" buffer {_n(buf.name)}"
        if implied.get(buf.name) == buf:
            line += f" {buf.memory_type.value}"
        lines.append(line)
    return lines


def print_decls(node: Any) -> str:
    """The `// decl` header of `node` (each line ends with a newline; "" when nothing is needed).

    Covers tensors and buffers (dtype, shape, buffer, memory type), function args and temp
    buffers, vars that are not plain int32 (dtype, bounds, symbolic/reduce flags), block
    reduce methods and attrs whose printed value is ambiguous, and the n-th literal, call or
    reduce when the printed text alone would be read back differently.
    """
    recorder = _Recorder()
    recorder.print(node)
    lines: list[str] = []
    if isinstance(node, Module):
        for fn in node.functions:
            lines.extend(_section_lines(fn.body, fn))
    elif isinstance(node, LoweredFunc):
        lines.extend(_section_lines(node.body, node))
    else:
        lines.extend(_section_lines(node, None))
        if isinstance(node, S.Evaluate):
            lines.append("root stmt")
    lines += recorder.block_lines + recorder.literal_lines + recorder.call_lines + recorder.reduce_lines
    if not lines and _needs_exact_marker(node):
        lines.append("exact")
    return "".join(f"// decl {line}\n" for line in lines)


def _needs_exact_marker(node: Any) -> bool:
    """Without any header the parser infers loop/iter var dtypes and tensor types; a tree with
    vars or tensors needs at least one line to switch it to exact mode."""
    collector = _Collector()
    collector.visit(node)
    return bool(collector.vars or collector.tensors)


MEMORY_TYPES: dict[str, MemoryType] = {m.value: m for m in MemoryType}
REDUCE_METHODS: dict[str, S.ReduceMethod] = {m.value: m for m in S.ReduceMethod}
CALL_TYPES: dict[str, E.CallType] = {c.value: c for c in E.CallType}
ARG_IOS: dict[str, ArgIO] = {a.value: a for a in ArgIO}
