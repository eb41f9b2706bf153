"""The CINN AST IR: nodes, dtypes, printer, parser, names, traversal, equality, verifier.

Outside `cinn_py/ir/` the IR is imported one way only, by name from this facade
(`from cinn_py.ir import For, Var, int64, print_ir`): never from its submodules, never as a
module alias (`expr as E`, `from cinn_py import ir`). `tests/test_ir_imports.py` enforces it.
"""

from cinn_py.ir import dtype
from cinn_py.ir.buffer import Buffer, BufferRange, MemoryType, Tensor, make_tensor
from cinn_py.ir.dtype import (
    ALL_SCALAR_DTYPES, DType, bfloat16, bool_, dtype_of, float16, float32, float64, handle, int8,
    int16, int32, int64, string, uint8, uint16, uint32, uint64,
)
from cinn_py.ir.equality import assert_structural_equal, structural_equal
from cinn_py.ir.nesting import NEST_RECURSION_LIMIT, deep_nesting, nesting_room
from cinn_py.ir.structural import MAX_EXPR_DEPTH, expr_depth
from cinn_py.ir.expr import (
    BINARY_OPS, EQ, GE, GT, LE, LT, NE, Add, And, BinaryOp, Cast, CmpOp, Div, Expr, ExprLike, FloatImm,
    IntImm, LogicalOp, Max, Min, Minus, Mod, Mul, Not, Or, Select, StringImm, Sub, UIntImm, Var,
)
from cinn_py.ir.expr_build import as_expr, check_text, const, eq, int_range, is_const_int, ne
from cinn_py.ir.expr_access import Broadcast, Call, CallType, Load, Ramp, Reduce, ReduceType
from cinn_py.ir.func import ArgIO, Argument, CudaAxisInfo, LoweredFunc, Module
from cinn_py.ir.intervals import IntInterval, int_interval
from cinn_py.ir.intrinsics import INTRINSICS, ArgKind, Intrinsic
from cinn_py.ir.intrinsics import lookup as lookup_intrinsic
from cinn_py.ir.names import (
    CompileContext, NameGenerator, compile_context, current_context, default_axis_name,
    reset_name_ids, unique_name, using_names,
)
from cinn_py.ir.sanitize import (
    C_KEYWORDS, CUDA_RESERVED, MAX_IDENTIFIER_LENGTH, IdentifierMap, is_safe_identifier,
    sanitize_identifier,
)
from cinn_py.ir.stmt import (
    BIND_AXES, FAST_MATH_ATTR, FP_CONTRACT_ATTR, NONTEMPORAL_ATTR, Alloc, AttrValue, Block, Evaluate, For,
    ForType, Free,
    IfThenElse, Let, ReduceMethod, ScheduleBlock, ScheduleBlockRealize, Stmt, Store, new_uid,
)
from cinn_py.ir.text.parser import parse_expr, parse_func, parse_ir, parse_stmt
from cinn_py.ir.text.printer import for_header, print_ir, print_ir_marked, quote_string
from cinn_py.ir.verifier import verify
from cinn_py.ir.visitor import (
    BINDER_FIELDS, Mutator, Visitor, child_fields, child_nodes, names_in, replace_stmt, snake_name,
    substitute, walk,
)

__all__ = [
    "ALL_SCALAR_DTYPES", "BINARY_OPS", "BINDER_FIELDS", "BIND_AXES", "C_KEYWORDS", "CUDA_RESERVED",
    "EQ", "GE", "GT", "INTRINSICS", "LE", "LT", "MAX_IDENTIFIER_LENGTH", "NE", "NONTEMPORAL_ATTR", "Add",
    "Alloc", "And",
    "ArgIO", "ArgKind", "Argument", "AttrValue", "BinaryOp", "Block", "Broadcast", "Buffer",
    "BufferRange", "FAST_MATH_ATTR", "FP_CONTRACT_ATTR", "Call", "CallType", "Cast", "CmpOp",
    "CompileContext", "CudaAxisInfo", "DType",
    "Div", "Evaluate", "Expr", "ExprLike", "FloatImm", "For", "ForType", "Free", "IdentifierMap",
    "IfThenElse", "IntImm", "Intrinsic", "Let", "Load", "LogicalOp", "LoweredFunc", "Max",
    "MemoryType", "Min", "Minus", "Mod", "Module", "Mul", "Mutator", "NameGenerator", "Not", "Or",
    "Ramp", "Reduce", "ReduceMethod", "ReduceType", "ScheduleBlock", "ScheduleBlockRealize",
    "Select", "Stmt", "Store", "StringImm", "Sub", "Tensor", "UIntImm", "Var", "Visitor",
    "MAX_EXPR_DEPTH", "NEST_RECURSION_LIMIT", "deep_nesting", "nesting_room", "as_expr",
    "assert_structural_equal", "expr_depth", "check_text", "IntInterval", "int_interval", "int_range",
    "quote_string", "bfloat16", "bool_",
    "child_fields", "child_nodes", "compile_context",
    "const", "current_context", "default_axis_name", "dtype", "dtype_of", "eq", "float16",
    "float32", "float64", "for_header", "handle", "int16", "int32", "int64", "int8",
    "is_const_int", "is_safe_identifier", "lookup_intrinsic", "make_tensor", "names_in", "ne", "new_uid",
    "parse_expr",
    "parse_func", "parse_ir", "parse_stmt", "print_ir", "print_ir_marked", "replace_stmt",
    "reset_name_ids", "sanitize_identifier", "snake_name", "string", "structural_equal",
    "substitute", "uint16", "uint32", "uint64", "uint8", "unique_name", "using_names", "verify",
    "walk",
]
