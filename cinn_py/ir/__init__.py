"""The CINN AST IR: nodes, printer, parser, names, traversal, equality.

Outside code imports IR names from here (`from cinn_py.ir import For, Var`), never from the
submodules.
"""

from cinn_py.ir import dtype
from cinn_py.ir.buffer import Buffer, BufferRange, MemoryType, Tensor, make_tensor
from cinn_py.ir.dtype import DType, dtype_of
from cinn_py.ir.equality import assert_structural_equal, structural_equal
from cinn_py.ir.expr import (
    BINARY_OPS, EQ, GE, GT, LE, LT, NE, Add, And, BinaryOp, Broadcast, Call, CallType, Cast, CmpOp,
    Div, Expr, FloatImm, IntImm, Load, LogicalOp, Max, Min, Minus, Mod, Mul, Not, Or, Ramp, Reduce,
    ReduceType, Select, StringImm, Sub, UIntImm, Var, as_expr, const, eq, is_const_int, ne,
)
from cinn_py.ir.func import ArgIO, Argument, CudaAxisInfo, LoweredFunc, Module
from cinn_py.ir.names import (
    CompileContext, NameGenerator, compile_context, current_context, default_axis_name,
    reset_name_ids, unique_name,
)
from cinn_py.ir.text.printer import print_ir
from cinn_py.ir.stmt import (
    Alloc, Block, Evaluate, For, ForType, Free, IfThenElse, Let, ReduceMethod, ScheduleBlock,
    ScheduleBlockRealize, Stmt, Store,
)
from cinn_py.ir.visitor import Mutator, Visitor, replace_stmt, substitute, walk

__all__ = [
    "BINARY_OPS", "EQ", "GE", "GT", "LE", "LT", "NE", "Add", "Alloc", "And", "ArgIO", "Argument",
    "BinaryOp", "Block", "Broadcast", "Buffer", "BufferRange", "Call", "CallType", "Cast", "CmpOp",
    "CompileContext", "CudaAxisInfo", "DType", "Div", "Evaluate", "Expr", "FloatImm", "For",
    "ForType", "Free", "IfThenElse", "IntImm", "Let", "Load", "LogicalOp", "LoweredFunc", "Max",
    "MemoryType", "Min", "Minus", "Mod", "Module", "Mul", "Mutator", "NameGenerator", "Not", "Or",
    "Ramp", "Reduce", "ReduceMethod", "ReduceType", "ScheduleBlock", "ScheduleBlockRealize",
    "Select", "Stmt", "Store", "StringImm", "Sub", "Tensor", "UIntImm", "Var", "Visitor",
    "as_expr", "assert_structural_equal", "compile_context", "const", "current_context",
    "default_axis_name", "dtype", "dtype_of", "eq", "is_const_int", "make_tensor", "ne",
    "print_ir", "replace_stmt", "reset_name_ids", "structural_equal", "substitute", "unique_name",
    "walk",
]
