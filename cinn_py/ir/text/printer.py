"""CINN's IR printer, byte for byte (`paddle/cinn/ir/ir_printer.cc`).

`print_ir(node)` prints any Expr, Stmt, LoweredFunc or Module the way CINN's `IrPrinter` does:
2-space indent, fully parenthesised binary ops, `serial for (i, 0, 32)`, `ScheduleBlock(B)` with
`i0, i1 = axis.bind(i, j)`, `2.00000000f`, `7ll`, `cinn_max(a, b)`.

`print_ir(func, decls=True)` prepends `// decl` lines that carry what CINN's format leaves out
(dtypes, shapes, buffer names and scopes, symbolic-dim bounds, reduce iter vars), so that the
parser can rebuild the exact tree. The function text itself is unchanged.
"""

from __future__ import annotations

import math
from typing import Any

from cinn_py.ir import expr as E
from cinn_py.ir import stmt as S
from cinn_py.ir.buffer import Buffer, BufferRange, Tensor
from cinn_py.ir.func import LoweredFunc, Module
from cinn_py.ir.nesting import deep_nesting
from cinn_py.ir.text.names import format_name as _n

_INT_PREFIX = {8: "(int8_t)", 16: "(int16_t)"}
_UINT_PREFIX = {8: "(uint8_t)", 16: "(uint16_t)"}
_F16_SPECIAL = {"inf": "0x7c00", "-inf": "0xfc00", "nan": "0x7e00"}
_BF16_SPECIAL = {"inf": "0x7f80", "-inf": "0xff80", "nan": "0x7fc0"}


def format_float(value: float, precision: int) -> str:
    """C++ `std::setprecision(p) << std::showpoint` formatting."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return format(value, f"#.{precision}g")


def quote_string(text: str) -> str:
    """A string literal in IR and C syntax (StringImm holds no other control characters)."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{escaped}"'


def format_attr_value(value: Any) -> str:
    """`std::ostream << value` for block attr values: bool as 1/0, float with 6 digits."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        text = format(value, ".6g")
        return text
    return str(value)


class IrPrinter:
    """Prints one node; `indent` is the current indent level (in units of 2 spaces)."""

    def __init__(self, marked: tuple[object, ...] = ()) -> None:
        self.out: list[str] = []
        self.indent = 0
        self.marked_ids = {id(node) for node in marked}
        self.mark_offsets: list[int] = []
        """Character offsets (in the joined output) where a marked node starts."""

    # -- helpers -------------------------------------------------------------------------------
    def emit(self, text: str) -> None:
        self.out.append(text)

    def do_indent(self) -> None:
        self.out.append("  " * self.indent)

    def print(self, node: Any) -> None:
        if id(node) in self.marked_ids:
            self.mark_offsets.append(sum(len(chunk) for chunk in self.out))
        method = getattr(self, "print_" + type(node).__name__, None)
        if method is not None:
            method(node)
            return
        if isinstance(node, E.BinaryOp):
            self.print_binary(node)
            return
        raise TypeError(f"IrPrinter: cannot print {type(node).__name__}")

    def print_list(self, items: tuple[Any, ...]) -> None:
        for k, item in enumerate(items):
            if k:
                self.emit(", ")
            self.print(item)

    # -- immediates ----------------------------------------------------------------------------
    def print_IntImm(self, node: E.IntImm) -> None:
        bits = node.dtype.bits
        if bits == 64:
            self.emit(f"{node.value}ll")
        else:
            self.emit(f"{_INT_PREFIX.get(bits, '')}{node.value}")

    def print_UIntImm(self, node: E.UIntImm) -> None:
        if node.dtype.is_bool:
            self.emit("true" if node.value else "false")
        elif node.dtype.bits == 64:
            self.emit(f"{node.value}ull")
        else:
            self.emit(f"{_UINT_PREFIX.get(node.dtype.bits, '')}{node.value}")

    def print_FloatImm(self, node: E.FloatImm) -> None:
        dtype, value = node.dtype, node.value
        text = format_float(value, 17 if dtype.bits == 64 else 9)
        finite = math.isfinite(value)
        if dtype.bits == 64:
            self.emit(text)
        elif dtype.bits == 32:
            self.emit(text + ("f" if finite else ""))
        elif not finite:
            table = _BF16_SPECIAL if dtype.kind == "bfloat" else _F16_SPECIAL
            fn = "raw_uint16_to_bfloat16" if dtype.kind == "bfloat" else "raw_uint16_to_float16"
            self.emit(f"cinn::common::{fn}({table[text]})")
        else:
            self.emit(f"({dtype.scalar_name()}){text}f")

    def print_StringImm(self, node: E.StringImm) -> None:
        self.emit(quote_string(node.value))

    def print_Var(self, node: E.Var) -> None:
        self.emit(_n(node.name))

    # -- operators -----------------------------------------------------------------------------
    def print_binary(self, node: E.BinaryOp) -> None:
        if isinstance(node, (E.Min, E.Max)):
            self.emit(f"{node.op_symbol}(")
            self.print(node.a)
            self.emit(", ")
            self.print(node.b)
            self.emit(")")
            return
        self.emit("(")
        self.print(node.a)
        self.emit(f" {node.op_symbol} ")
        self.print(node.b)
        self.emit(")")

    def print_Minus(self, node: E.Minus) -> None:
        self.emit("-(")
        self.print(node.v)
        self.emit(")")

    def print_Not(self, node: E.Not) -> None:
        self.emit("!")
        self.print(node.v)

    def print_Cast(self, node: E.Cast) -> None:
        self.emit(f"{node.dtype}(")
        self.print(node.v)
        self.emit(")")

    def print_Select(self, node: E.Select) -> None:
        self.emit("select(")
        self.print_list((node.condition, node.true_value, node.false_value))
        self.emit(")")

    def print_Load(self, node: E.Load) -> None:
        self.emit(f"{_n(node.tensor.name)}[")
        self.print_list(node.indices)
        self.emit("]")

    def print_Call(self, node: E.Call) -> None:
        self.emit(f"{node.name}(")
        self.print_list(node.args)
        self.emit(")")

    def print_Reduce(self, node: E.Reduce) -> None:
        self.emit(f"Reduce({node.reduce_type.value}, ")
        self.print(node.body)
        self.emit(",")
        self.print(node.init)
        self.emit(")")

    def print_Ramp(self, node: E.Ramp) -> None:
        self.emit("Ramp(")
        self.print(node.base)
        self.emit(",")
        self.print(node.stride)
        self.emit(f",{node.lanes})")

    def print_Broadcast(self, node: E.Broadcast) -> None:
        self.emit("Broadcast(")
        self.print(node.value)
        self.emit(f",{node.lanes})")

    def print_Tensor(self, node: Tensor) -> None:
        self.emit(f"Tensor({_n(node.name)}, [")
        self.print_list(node.shape)
        self.emit("])")

    def print_Buffer(self, node: Buffer) -> None:
        self.emit(f"_Buffer_<{node.dtype}: ")
        self.print_list(node.shape)
        self.emit(f">({_n(node.name)})")

    def print_BufferRange(self, node: BufferRange) -> None:
        # CINN prints each range as `var(lo:hi)`; we print the dimension's (min, extent) pair.
        self.emit(f"{_n(node.tensor.name)}[")
        for k, (lo, extent) in enumerate(node.ranges):
            if k:
                self.emit(", ")
            self.print(lo)
            self.emit(":")
            self.print(extent)
        self.emit("]")

    # -- statements ----------------------------------------------------------------------------
    def print_Store(self, node: S.Store) -> None:
        self.emit(f"{_n(node.tensor.name)}[")
        self.print_list(node.indices)
        self.emit("] = ")
        self.print(node.value)

    def print_Block(self, node: S.Block) -> None:
        self.emit("{\n")
        self.indent += 1
        for k, stmt in enumerate(node.stmts):
            self.do_indent()
            self.print(stmt)
            if k + 1 < len(node.stmts):
                self.emit("\n")
        self.indent -= 1
        self.emit("\n")
        self.do_indent()
        self.emit("}")

    def print_IfThenElse(self, node: S.IfThenElse) -> None:
        self.emit("if (")
        self.print(node.condition)
        self.emit(") ")
        self.print(node.true_case)
        if node.false_case is not None:
            self.emit(" else ")
            self.print(node.false_case)

    def print_For(self, node: S.For) -> None:
        self.emit(for_header(node))
        self.print(node.loop_var)
        self.emit(", ")
        self.print(node.min)
        self.emit(", ")
        self.print(node.extent)
        self.emit(")\n")
        self.do_indent()
        self.print(node.body)

    def print_ScheduleBlockRealize(self, node: S.ScheduleBlockRealize) -> None:
        block = node.schedule_block
        self.emit(f"ScheduleBlock({_n(block.name)})\n")
        self.do_indent()
        self.emit("{\n")
        self.indent += 1
        if block.iter_vars:
            self.do_indent()
            self.emit(", ".join(_n(v.name) for v in block.iter_vars) + " = axis.bind(")
            self.print_list(node.iter_values)
            self.emit(")\n")
        for label, regions in (("read_buffers", block.read_buffers), ("write_buffers", block.write_buffers)):
            if regions:
                self.do_indent()
                self.emit(f"{label}(")
                self.print_list(regions)
                self.emit(")\n")
        if block.attrs:
            self.do_indent()
            items = ", ".join(f"{k}:{format_attr_value(v)}" for k, v in sorted(block.attrs))
            self.emit(f"attrs({items})\n")
        self.do_indent()
        self.print(block.body)
        self.emit("\n")
        self.indent -= 1
        self.do_indent()
        self.emit("}")

    def print_Let(self, node: S.Let) -> None:
        self.emit(f"{node.symbol.dtype} {_n(node.symbol.name)}")
        if node.body is not None:
            self.emit(" = ")
            self.print(node.body)

    def print_Evaluate(self, node: S.Evaluate) -> None:
        self.print(node.value)

    def print_Alloc(self, node: S.Alloc) -> None:
        self.emit(f"alloc({_n(node.buffer.name)}, ")
        self.print_list(node.extents)
        self.emit(")")

    def print_Free(self, node: S.Free) -> None:
        self.emit(f"free({_n(node.buffer.name)})")

    def print_LoweredFunc(self, node: LoweredFunc) -> None:
        self.emit(f"function {_n(node.name)} (" + ", ".join(_n(a.name) for a in node.args) + ")\n")
        self.do_indent()
        self.print(node.body)

    def print_Module(self, node: Module) -> None:
        self.emit(f"Module {_n(node.name)} {{\n\n")
        for fn in node.functions:
            self.print(fn)
            self.emit("\n")
        self.emit("\n\n}")


def for_header(node: S.For) -> str:
    """`serial for (` / `parallel for (` / `vectorize[4] for (` / `thread_bind[threadIdx.x] for (`."""
    kind = node.for_type
    if kind is S.ForType.VECTORIZED:
        return f"vectorize[{node.vectorize_factor}] for ("
    if kind in (S.ForType.GPU_BLOCK, S.ForType.GPU_THREAD):
        return f"thread_bind[{node.bind_axis}] for ("
    return f"{kind.value} for ("


@deep_nesting
def print_ir(node: Any, decls: bool = False) -> str:
    """CINN's text of `node`; with `decls`, prefixed by the `// decl` header the parser reads."""
    printer = IrPrinter()
    printer.print(node)
    text = "".join(printer.out)
    if decls:
        from cinn_py.ir.text.decl_printer import print_decls

        header = print_decls(node)
        return header + text if header else text
    return text


@deep_nesting
def print_ir_marked(root: Any, *nodes: Any, label: str = "") -> str:
    """Print `root` with a `^^^^` line under the first line of each of `nodes` (by identity).

    Used by error messages to point at the offending loop or block inside the whole function.
    """
    printer = IrPrinter(marked=nodes)
    printer.print(root)
    text = "".join(printer.out)
    lines = text.split("\n")
    starts = []
    pos = 0
    for line in lines:
        starts.append(pos)
        pos += len(line) + 1
    marks: dict[int, int] = {}
    for offset in printer.mark_offsets:
        line_no = max(k for k, start in enumerate(starts) if start <= offset)
        marks[line_no] = offset - starts[line_no]
    out: list[str] = []
    for k, line in enumerate(lines):
        out.append(line)
        if k in marks:
            col = marks[k]
            width = max(1, len(line.rstrip()) - col)
            out.append(" " * col + "^" * width + (f"  {label}" if label else ""))
    return "\n".join(out)
