"""The printing side of the `// decl` header (`decls`): `print_decls` walks a node, records every
fact CINN's text leaves out (tensor dtypes and shapes, buffers, var dtypes and bounds, literal and
call dtypes, reduce axes, block reduce methods and attributes) and emits one `// decl` line for
each where the parser's default (`defaults`) would get it wrong.
"""

from __future__ import annotations

from typing import Any


from cinn_py.ir import dtype as dt
from cinn_py.ir import expr as E
from cinn_py.ir import stmt as S
from cinn_py.ir.buffer import Buffer, BufferRange, Tensor
from cinn_py.ir.func import LoweredFunc, Module
from cinn_py.ir.text.defaults import (
    RAW_HALF_FUNCS, attr_value_equal, decode_attr_value, decode_literal, default_call_signature,
    default_reduce_axes, format_decl_value, half_from_bits,
)
from cinn_py.ir.text.names import format_name as _n
from cinn_py.ir.text.printer import IrPrinter, format_attr_value, print_ir


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
