"""A printer base for C-like languages (CUDA C today; any C dialect tomorrow).

`CFamilyPrinter` turns lowered, schedule-block-free IR into C text: fully parenthesised
expressions, flattened (row-major) buffer indices, `for`/`if`/`{}` statements with `;`, a type
table (`float`, `int64_t`, ...) and an operator table. Dialects override the hooks: `ctype`,
`float_literal`, `cast`, `call`, `min_max`, `print_for` ...

Names: every identifier printed from the IR (function, buffer, variable names) goes through one
`cinn_py.ir.sanitize.IdentifierMap` per printer, i.e. per generated module: a name that is
already a safe identifier prints as is, anything else (`a.b`, `int`, a newline, a quote, ...) as
a readable, collision-free spelling, so a user name can neither break the C nor inject code.
Differs from CINN, which prints names verbatim (its frontend only creates identifiers).

The printer takes schedule-block-free IR: `cinn_py.passes.inline_blocks.inline_schedule_blocks`
(run by the GPU target's `gpu_bind` pass) removes the `ScheduleBlockRealize` wrappers first, as
CINN does before codegen, since C has no notion of a schedule block.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

from cinn_py.diagnostics import CompileError
from cinn_py.ir import (
    Add, And, BinaryOp, Block, Buffer, Call, Cast, DType, Div, EQ, Evaluate, Expr, FloatImm, For, ForType, GE,
    GT, IdentifierMap, IfThenElse, IntImm, LE, LT, Let, Load, Max, Min, Minus, Mod, Mul, NE, Not, Or,
    Reduce, ScheduleBlockRealize, Select, Stmt, Store, StringImm, Sub, Tensor, UIntImm, Var, is_const_int,
    print_ir, quote_string,
)
from cinn_py.passes.flatten import flatten_index

# Element types as C spells them (the CUDA printer maps float16/bfloat16 to its own names).
C_TYPES: dict[str, str] = {
    "bool": "bool", "int8": "int8_t", "int16": "int16_t", "int32": "int32_t", "int64": "int64_t",
    "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t",
    "float32": "float", "float64": "double",
}
# Binary operators that print infix; Min/Max print as calls (dialect-specific names).
INFIX_OPS: dict[type, str] = {
    Add: "+", Sub: "-", Mul: "*", Div: "/", Mod: "%",
    EQ: "==", NE: "!=", LT: "<", LE: "<=", GT: ">", GE: ">=",
    And: "&&", Or: "||",
}
_IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Calls a C-family printer may emit by name besides the math intrinsics: device barriers/fences
# and the generated code's runtime helpers (every helper name starts with `cinn_`).
DEVICE_INTRINSICS = frozenset({"__syncthreads", "__syncwarp", "__threadfence", "__threadfence_block"})
RUNTIME_HELPER_PREFIX = "cinn_"


# Most statements a `#pragma unroll` may replicate (the loop's extent times its body's statements,
# inner constant loops counted as unrolled). CINN's UnrollLoop pass likewise leaves loops rolled
# past a step budget (`auto_max_step`); an unroll hint is a hint, not a duty to blow up code size.
MAX_UNROLL_STEPS = 512


def unroll_pragma_fits(loop: For) -> bool:
    """Whether `#pragma unroll` on `loop` can fully unroll it within `MAX_UNROLL_STEPS` statements.

    Not when an inner loop has a non-constant extent: full unrolling cannot remove it, and NVRTC
    then replicates that loop's own runtime unrolling and remainder code per copy (fuzz seed 7
    case 1060: a 16 x 8 unroll around symbolic reduce loops took NVRTC over a minute).
    """
    return _unrolled_steps(loop, MAX_UNROLL_STEPS) is not None


def _unrolled_steps(node: Stmt, budget: int) -> int | None:
    """Statements `node` unrolls to, or None when over `budget` or not unrollable."""
    if isinstance(node, For):
        if not isinstance(node.extent, IntImm):
            return None
        extent = max(node.extent.value, 0)
        if extent == 0:
            return 1
        inner = _unrolled_steps(node.body, budget // extent)
        return None if inner is None or inner * extent > budget else inner * extent
    children: tuple[Stmt, ...]
    if isinstance(node, Block):
        children = node.stmts
    elif isinstance(node, IfThenElse):
        children = (node.true_case,) if node.false_case is None else (node.true_case, node.false_case)
    elif isinstance(node, ScheduleBlockRealize):
        children = (node.schedule_block.body,)
    else:
        return 1 if budget >= 1 else None
    total = 0
    for child in children:
        steps = _unrolled_steps(child, budget - total)
        if steps is None:
            return None
        total += steps
    return total if total <= budget else None


def buffer_hint(buffer_name: str) -> str:
    """The readable C name of a buffer: CINN's `_A` prints as `A` (its tensor name)."""
    return buffer_name[1:] if buffer_name.startswith("_") and len(buffer_name) > 1 else buffer_name


def is_runtime_call(name: str) -> bool:
    """Whether `name` is a device intrinsic or a `cinn_*` runtime helper (printable verbatim)."""
    if name in DEVICE_INTRINSICS:
        return True
    return name.startswith(RUNTIME_HELPER_PREFIX) and _IDENT_RE.match(name) is not None


class CFamilyPrinter:
    """Prints statements into `self.lines` and expressions into strings."""

    indent_unit = "  "

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.level = 0
        self.ids = IdentifierMap()
        """Every identifier of the module: user names and the printer's own temporaries."""
        self._claims: dict[tuple[str, str], str] = {}
        self.buffer_names: dict[str, str] = {}
        """Buffer name -> C identifier (filled by `name_buffer`)."""
        self.handle_buffers: dict[str, Buffer] = {}
        """Buffers passed to runtime helpers as handle-typed Vars of the same name (reduce scratch)."""

    # -- names and types -------------------------------------------------------------------------
    def identifier(self, kind: str, name: str, hint: str | None = None) -> str:
        """The C identifier of the entity `name` of `kind` ("func", "buffer", "var", "tmp").

        Stable for one entity; distinct entities never share an identifier, even when their
        names are equal (a tensor and a loop variable both called `i`) or sanitise alike.
        `hint` is the preferred spelling (default: `name`).
        """
        found = self._claims.get((kind, name))
        if found is not None:
            return found
        hint = name if hint is None else hint
        key, n = hint, 0
        while key in self.ids:  # another entity holds this spelling: derive a distinct key
            n += 1
            key = f"{hint} {kind} {n}"
        ident = self.ids.get(key)
        self._claims[(kind, name)] = ident
        return ident

    def name_buffer(self, buffer: Buffer) -> str:
        """The C identifier of `buffer` (stable; unique among the names of one module)."""
        if buffer.name not in self.buffer_names:
            self.buffer_names[buffer.name] = self.identifier("buffer", buffer.name, buffer_hint(buffer.name))
        return self.buffer_names[buffer.name]

    def name_var(self, var: Var) -> str:
        """The C identifier of a scalar variable (loop var, let symbol, symbolic dim)."""
        return self.identifier("var", var.name)

    def ctype(self, dtype: DType) -> str:
        """C spelling of a scalar dtype."""
        if dtype.lanes != 1:
            raise CompileError(f"codegen: vector type {dtype} has no scalar C spelling")
        name = C_TYPES.get(dtype.scalar_name())
        if name is None:
            raise CompileError(f"codegen: dtype {dtype} is not supported by {type(self).__name__}")
        return name

    # -- output helpers --------------------------------------------------------------------------
    def line(self, text: str) -> None:
        self.lines.append(self.indent_unit * self.level + text)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"

    # -- expressions -----------------------------------------------------------------------------
    def expr(self, node: Expr) -> str:
        method = getattr(self, "expr_" + type(node).__name__, None)
        if method is not None:
            return method(node)
        if isinstance(node, BinaryOp):
            return self.binary(node)
        raise CompileError(f"codegen: {type(self).__name__} cannot print {type(node).__name__}",
                           _excerpt(node))

    def expr_IntImm(self, node: IntImm) -> str:
        bits = node.dtype.bits
        if bits in (32, 64) and node.value == -(1 << (bits - 1)):
            # C has no negative literals: `-2147483648` negates `2147483648`, which does not fit
            # an int and so is a `long` (ambiguous in CUDA's min/max overloads); spell the minimum
            # as an expression of the right type instead.
            suffix = "ll" if bits == 64 else ""
            return f"({node.value + 1}{suffix} - 1{suffix})"
        if bits == 64:
            return f"{node.value}ll"
        if bits == 32:
            return str(node.value)
        return f"(({self.ctype(node.dtype)}){node.value})"

    def expr_UIntImm(self, node: UIntImm) -> str:
        if node.dtype.is_bool:
            return "true" if node.value else "false"
        if node.dtype.bits == 64:
            return f"{node.value}ull"
        if node.dtype.bits == 32:
            return f"{node.value}u"
        return f"(({self.ctype(node.dtype)}){node.value})"

    def expr_FloatImm(self, node: FloatImm) -> str:
        return self.float_literal(node.dtype, node.value)

    def float_literal(self, dtype: DType, value: float) -> str:
        """float32 `2.00000000f`, float64 `2.0000000000000000` (CINN's precision rules)."""
        if not math.isfinite(value):
            return self.nonfinite_literal(dtype, value)
        if dtype.bits == 64:
            return format(value, "#.17g")
        if dtype.bits == 32:
            return format(value, "#.9g") + "f"
        raise CompileError(f"codegen: no {dtype} literal in {type(self).__name__}")

    def nonfinite_literal(self, dtype: DType, value: float) -> str:
        if math.isnan(value):
            return "NAN"
        return "INFINITY" if value > 0 else "(-INFINITY)"

    def expr_StringImm(self, node: StringImm) -> str:
        return quote_string(node.value)

    def expr_Var(self, node: Var) -> str:
        scratch = self.handle_buffers.get(node.name)
        if scratch is not None and node.dtype.kind == "handle":
            return self.name_buffer(scratch)
        return self.name_var(node)

    def binary(self, node: BinaryOp) -> str:
        if isinstance(node, (Min, Max)):
            return self.min_max(node)
        if isinstance(node, Mod) and node.dtype.is_float:
            return self.float_mod(node)
        op = INFIX_OPS.get(type(node))
        if op is None:
            raise CompileError(f"codegen: unknown binary operator {type(node).__name__}")
        return f"({self.expr(node.a)} {op} {self.expr(node.b)})"

    def float_mod(self, node: Mod) -> str:
        """C's `%` takes integers only: a float remainder is `fmod` (the sign of the dividend, as
        the IR's `%` is defined in docs/semantics.md); dialects pick the per-type name."""
        return f"fmod({self.expr(node.a)}, {self.expr(node.b)})"

    def min_max(self, node: Min | Max) -> str:
        """C has no min/max: a parenthesised conditional (dialects use their builtins)."""
        a, b = self.expr(node.a), self.expr(node.b)
        cmp = "<" if isinstance(node, Min) else ">"
        return f"(({a} {cmp} {b}) ? {a} : {b})"

    def expr_Minus(self, node: Minus) -> str:
        operand = self.expr(node.v)
        if operand.startswith("-"):
            # A negative literal operand (`-1.5`, `-3ll`) would fuse with the minus into the
            # decrement operator `--` (an lvalue error); parenthesise it: `(-(-1.5))`.
            operand = f"({operand})"
        return f"(-{operand})"

    def expr_Not(self, node: Not) -> str:
        return f"(!{self.expr(node.v)})"

    def expr_Cast(self, node: Cast) -> str:
        return self.cast(node.dtype, node.v)

    def cast(self, dtype: DType, value: Expr) -> str:
        return f"(({self.ctype(dtype)}){self.expr(value)})"

    def expr_Select(self, node: Select) -> str:
        c, t, f = (self.expr(x) for x in (node.condition, node.true_value, node.false_value))
        return f"({c} ? {t} : {f})"

    def expr_Load(self, node: Load) -> str:
        return f"{self.name_buffer(node.tensor.buffer)}[{self.index(node.tensor, node.indices)}]"

    def index(self, tensor: Tensor, indices: tuple[Expr, ...]) -> str:
        return self.expr(flatten_index(indices, tensor.buffer.shape))

    def expr_Call(self, node: Call) -> str:
        return self.call(node)

    def call(self, node: Call) -> str:
        args = ", ".join(self.expr(a) for a in node.args)
        return f"{self.call_name(node)}({args})"

    def call_name(self, node: Call) -> str:
        """A call prints verbatim only when it names a known function (never a user string)."""
        if not is_runtime_call(node.name):
            raise CompileError(f"codegen: unknown function '{node.name}' in a call: {type(self).__name__} "
                               "prints "
                               f"math intrinsics, device intrinsics ({', '.join(sorted(DEVICE_INTRINSICS))}) "
                               "and "
                               f"'{RUNTIME_HELPER_PREFIX}*' runtime helpers only", _excerpt(node))
        return node.name

    def expr_Reduce(self, node: Reduce) -> str:
        raise CompileError("codegen: a Reduce expression reached the C printer; lower the function first",
                           _excerpt(node))

    # -- statements ------------------------------------------------------------------------------
    def stmt(self, node: Stmt) -> None:
        method = getattr(self, "print_" + type(node).__name__, None)
        if method is None:
            raise CompileError(f"codegen: {type(self).__name__} cannot print {type(node).__name__}",
                               _excerpt(node))
        method(node)

    def stmts(self, nodes: Iterable[Stmt]) -> None:
        for node in nodes:
            self.stmt(node)

    def print_Block(self, node: Block) -> None:
        # Nested blocks open no C scope: every declared name is unique in a function.
        self.stmts(node.stmts)

    def print_Store(self, node: Store) -> None:
        target = f"{self.name_buffer(node.tensor.buffer)}[{self.index(node.tensor, node.indices)}]"
        self.line(f"{target} = {self.expr(node.value)};")

    def print_Let(self, node: Let) -> None:
        decl = f"{self.ctype(node.symbol.dtype)} {self.name_var(node.symbol)}"
        self.line(decl + (f" = {self.expr(node.body)};" if node.body is not None else ";"))

    def print_Evaluate(self, node: Evaluate) -> None:
        self.line(self.expr(node.value) + ";")

    def print_IfThenElse(self, node: IfThenElse) -> None:
        self.line(f"if ({self.expr(node.condition)}) {{")
        self.nested(node.true_case)
        if node.false_case is not None:
            self.line("} else {")
            self.nested(node.false_case)
        self.line("}")

    def print_For(self, node: For) -> None:
        if node.for_type is ForType.UNROLLED and unroll_pragma_fits(node):
            self.line("#pragma unroll")
        self.serial_loop(node)

    def serial_loop(self, node: For) -> None:
        var = node.loop_var
        lo = self.expr(node.min)
        hi = self.expr(node.extent) if is_const_int(node.min, 0) else self.expr(Add(node.min, node.extent))
        name = self.name_var(var)
        self.line(f"for ({self.ctype(var.dtype)} {name} = {lo}; {name} < {hi}; {name} += 1) {{")
        self.nested(node.body)
        self.line("}")

    def nested(self, body: Stmt) -> None:
        self.level += 1
        self.stmt(body)
        self.level -= 1

    def print_ScheduleBlockRealize(self, node: ScheduleBlockRealize) -> None:
        raise CompileError("codegen: schedule blocks must be inlined before printing C "
                           "(inline_schedule_blocks)", _excerpt(node))


def _excerpt(node: object) -> str:
    try:
        return print_ir(node)
    except Exception:  # an excerpt must never hide the real error
        return repr(node)
