"""Recursive-descent parser of the CINN IR text format (the inverse of `printer.py`).

`parse_ir(text)` returns a LoweredFunc, Module, Stmt or Expr; `parse_func`, `parse_stmt`,
`parse_expr` insist on one kind. The input is what `print_ir` prints, optionally preceded by the
`// decl` header of `decls.py`; indentation and line breaks do not matter, so compact one-line
inputs parse too. Binary operators may be written fully parenthesised (as CINN prints them) or
with C precedence; `&&`/`||` are accepted for `and`/`or`.

With a header (exact mode) the parser rebuilds the exact tree: `parse_ir(print_ir(x,
decls=True))` is structurally equal to `x`. Without one it uses inference defaults, documented in
`docs/ir.md`: tensors are float32 global with buffer `_T` (`T__reduce_init` shares `_T`) and a
shape inferred from the largest index (+1) or the extent of the loop that indexes them; a loop or
iter var takes the dtype of its min / bound value; a free var outside a function is int64 when
the text has an `ll` literal, else int32; `function` args named `_T` are tensor `T` (output when
stored to), other args are int64 symbolic dims (lower bound 1); tensors stored to that are not
args become temp buffers.

Every failure is a `ParseError` with `line:col`, what was expected and what was found, and a
caret line; no Python exception escapes from inside the parser.
"""

from __future__ import annotations

from typing import Any, NoReturn

from cinn_py.diagnostics import ParseError
from cinn_py.ir import dtype as dt
from cinn_py.ir import expr as E
from cinn_py.ir import stmt as S
from cinn_py.ir.buffer import Buffer, BufferRange, Tensor
from cinn_py.ir.decls import (
    LITERAL_PREFIXES, RAW_HALF_FUNCS, DeclTable, Section, decode_literal, default_call_signature,
    default_reduce_axes, half_from_bits,
)
from cinn_py.ir.dtype import DType
from cinn_py.ir.func import LoweredFunc, Module
from cinn_py.ir.lexer import Token, tokenize
from cinn_py.ir.parser_decls import DeclParser
from cinn_py.ir.parser_infer import TensorInference

_BINARY_LEVELS: tuple[dict[str, type[E.BinaryOp]], ...] = (
    {"or": E.Or, "||": E.Or},
    {"and": E.And, "&&": E.And},
    {"==": E.EQ, "!=": E.NE},
    {"<": E.LT, "<=": E.LE, ">": E.GT, ">=": E.GE},
    {"+": E.Add, "-": E.Sub},
    {"*": E.Mul, "/": E.Div, "%": E.Mod},
)
_FOR_KINDS = {"serial": S.ForType.SERIAL, "parallel": S.ForType.PARALLEL, "unroll": S.ForType.UNROLLED,
              "default": S.ForType.DEFAULT}
_REDUCE_TAGS = {t.value: t for t in E.ReduceType}
_DTYPE_NAMES = frozenset(d.scalar_name() for d in dt.ALL_SCALAR_DTYPES) | {"handle"}


class Parser(DeclParser):
    """One parse of one text. Token cursor helpers, expressions, statements, functions."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = text.split("\n")
        self.tokens: list[Token] = tokenize(text)
        self.k = 0
        self.decls = DeclTable()
        self.section: Section = self.decls.global_section
        self.counting = False
        self.n_literals = self.n_calls = self.n_reduces = self.n_blocks = 0
        self.scopes: list[dict[str, E.Var]] = [{}]
        self.in_function = False
        self.free_int_dtype = dt.int32
        self.infer = TensorInference(self)
        self.params: dict[str, E.Var] = {}

    # -- token cursor ---------------------------------------------------------------------------
    def peek(self, ahead: int = 0) -> Token:
        return self.tokens[min(self.k + ahead, len(self.tokens) - 1)]

    def advance(self) -> Token:
        tok = self.peek()
        if tok.kind != "EOF":
            self.k += 1
        return tok

    def at(self, text: str, ahead: int = 0) -> bool:
        tok = self.peek(ahead)
        return tok.text == text and tok.kind in ("PUNCT", "IDENT")

    def accept(self, text: str) -> bool:
        if self.at(text):
            self.k += 1
            return True
        return False

    def expect(self, text: str, context: str = "") -> Token:
        if not self.at(text):
            self.fail(f"'{text}'" + (f" {context}" if context else ""))
        return self.advance()

    def expect_ident(self, what: str = "a name") -> Token:
        if self.peek().kind != "IDENT":
            self.fail(what)
        return self.advance()

    def expect_int(self, what: str) -> int:
        tok = self.peek()
        if tok.kind != "INT" or not tok.text.isdigit():
            self.fail(what)
        self.advance()
        return int(tok.text)

    def fail(self, expected: str, tok: Token | None = None) -> NoReturn:
        tok = tok or self.peek()
        self.error(f"expected {expected}, found {tok.describe()}", tok)

    def error(self, message: str, tok: Token) -> NoReturn:
        line = self.lines[tok.line - 1] if tok.line - 1 < len(self.lines) else ""
        raise ParseError(message, tok.line, tok.col, line)

    # -- scopes -----------------------------------------------------------------------------------
    def lookup_var(self, name: str, tok: Token) -> E.Var:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        if name in self.params:
            return self.params[name]
        declared = self.declared_var(name)
        if declared is not None:
            return declared
        if self.in_function and not self.decls.present:
            self.error(f"undefined variable '{name}' (not a loop var, iter var, Let symbol, "
                       f"function argument or '// decl var')", tok)
        var = E.Var(name, self.free_int_dtype)
        self.scopes[0][name] = var
        return var

    def declared_var(self, name: str) -> E.Var | None:
        """The `// decl var` of `name` in this function's section, else the global one."""
        declared = self.section.vars.get(name)
        return declared if declared is not None else self.decls.global_section.vars.get(name)

    def binder(self, name: str, inferred: DType, tok: Token) -> E.Var:
        """The Var a loop/iter/Let binder introduces: its decl, else plain with `inferred`."""
        declared = self.declared_var(name)
        if declared is not None:
            return declared
        if self.decls.present:
            return E.Var(name, dt.int32)
        return E.Var(name, inferred if inferred.is_integral else dt.int32)

    # -- entry ------------------------------------------------------------------------------------
    def parse_document(self, kind: str) -> Any:
        self.parse_header()
        if not self.decls.present and any(t.kind == "INT" and t.text.endswith("ll") and not
                                          t.text.endswith("ull") for t in self.tokens):
            self.free_int_dtype = dt.int64
        self.counting = True
        self.section = self.decls.global_section
        tok = self.peek()
        if tok.kind == "EOF":
            self.fail("IR text")
        if kind in ("any", "func") and self.at("function"):
            result: Any = self.parse_function()
        elif kind == "any" and self.at("Module"):
            result = self.parse_module()
        elif kind == "func":
            self.fail("'function'")
        elif kind == "expr":
            result = self.parse_expr()
        else:
            result = self.parse_stmt(allow_expr=kind == "any")
        if not isinstance(result, (LoweredFunc, Module)) and not self.decls.present:
            result = self.infer.finish(result)
        if self.peek().kind == "DECL":
            self.error("'// decl' lines must come before the IR text", self.peek())
        if self.peek().kind != "EOF":
            self.fail("end of input")
        return result

    # -- functions and modules --------------------------------------------------------------------
    def parse_module(self) -> Module:
        self.expect("Module")
        name = self.expect_ident("a module name").text
        self.expect("{", "to open the module body")
        functions = []
        while self.at("function"):
            functions.append(self.parse_function(index=len(functions)))
        self.expect("}", "to close the module (or 'function')")
        return Module(name, tuple(functions))

    def parse_function(self, index: int = 0) -> LoweredFunc:
        start = self.expect("function")
        name = self.expect_ident("a function name").text
        self.section = self.function_section(name, index, start)
        self.expect("(", "to open the argument list")
        arg_toks: list[Token] = []
        while not self.at(")"):
            if arg_toks:
                self.expect(",", "between arguments")
            arg_toks.append(self.expect_ident("an argument name"))
        self.expect(")", "to close the argument list")
        self.params = self.scalar_params(arg_toks)
        self.infer = TensorInference(self)
        self.in_function, self.scopes = True, [{}]
        body = self.parse_stmt()
        self.in_function = False
        func = self.build_function(name, arg_toks, body, start)
        self.params, self.section = {}, self.decls.global_section
        return func

    # -- statements -------------------------------------------------------------------------------
    def parse_stmt(self, allow_expr: bool = False) -> Any:
        tok = self.peek()
        if self.at("{"):
            return self.parse_block()
        if tok.kind == "IDENT":
            special = self.parse_keyword_stmt(tok)
            if special is not None:
                return special
        expr = self.parse_expr()
        if self.at("=") and isinstance(expr, E.Load):
            self.advance()
            value = self.parse_expr()
            self.infer.note_store(expr.tensor)
            return S.Store(expr.tensor, value, expr.indices)
        if self.at("="):
            self.error("only a tensor element 'T[...]' can be assigned", self.peek())
        if allow_expr and not self.decls.root_is_stmt:
            return expr
        return S.Evaluate(expr)

    def parse_keyword_stmt(self, tok: Token) -> S.Stmt | None:
        word, nxt = tok.text, self.peek(1)
        if word in _FOR_KINDS and nxt.text == "for" or word in ("vectorize", "thread_bind") and nxt.text == "[":
            return self.parse_for()
        if word == "if" and nxt.text == "(":
            return self.parse_if()
        if word == "ScheduleBlock" and nxt.text == "(":
            return self.parse_schedule_block()
        if word in ("alloc", "free") and nxt.text == "(":
            return self.parse_alloc_free()
        if word in _DTYPE_NAMES and (nxt.kind == "IDENT" or nxt.text == "<" and self.peek(4).kind == "IDENT"):
            return self.parse_let()
        return None

    def parse_block(self) -> S.Block:
        self.expect("{")
        self.scopes.append({})
        stmts = []
        while not self.at("}"):
            if self.peek().kind == "EOF":
                self.fail("'}' to close the block")
            stmts.append(self.parse_stmt())
            self.accept(";")
        self.advance()
        self.scopes.pop()
        return S.Block(tuple(stmts))

    def parse_body_block(self) -> S.Block:
        """A loop/if body: a `{...}` block, or a single statement (wrapped in a Block)."""
        if self.at("{"):
            return self.parse_block()
        return S.Block((self.parse_stmt(),))

    def parse_for(self) -> S.For:
        head = self.advance()
        for_type, bind_offset, factor = _FOR_KINDS.get(head.text, S.ForType.SERIAL), -1, 0
        if head.text == "vectorize":
            self.expect("[")
            for_type, factor = S.ForType.VECTORIZED, self.expect_int("a vectorize factor")
            if factor <= 0:
                self.error("vectorize factor must be positive", head)
            self.expect("]")
        elif head.text == "thread_bind":
            for_type, bind_offset = self.parse_bind_axis()
        self.expect("for")
        self.expect("(", "after 'for'")
        var_tok = self.expect_ident("a loop variable name")
        self.expect(",", "after the loop variable")
        lo = self.parse_expr()
        self.expect(",", "after the loop min")
        extent = self.parse_expr()
        self.expect(")", "to close the loop header")
        var = self.binder(var_tok.text, lo.dtype, var_tok)
        self.scopes.append({var.name: var})
        self.infer.push_loop(var, lo, extent)
        body = self.parse_body_block()
        self.infer.pop_binding(var)
        self.scopes.pop()
        return S.For(var, lo, extent, body, for_type, bind_offset, factor)

    def parse_bind_axis(self) -> tuple[S.ForType, int]:
        self.expect("[")
        tok = self.expect_ident("'blockIdx' or 'threadIdx'")
        if tok.text not in ("blockIdx", "threadIdx"):
            self.fail("'blockIdx' or 'threadIdx'", tok)
        self.expect(".")
        axis = self.expect_ident("'x', 'y' or 'z'")
        if axis.text not in S.BIND_AXES:
            self.fail("'x', 'y' or 'z'", axis)
        self.expect("]")
        kind = S.ForType.GPU_BLOCK if tok.text == "blockIdx" else S.ForType.GPU_THREAD
        return kind, S.BIND_AXES.index(axis.text)

    def parse_if(self) -> S.IfThenElse:
        self.expect("if")
        self.expect("(", "after 'if'")
        cond = self.parse_expr()
        self.expect(")", "to close the if condition")
        true_case = self.parse_body_block()
        false_case = self.parse_body_block() if self.accept("else") else None
        return S.IfThenElse(cond, true_case, false_case)

    def parse_let(self) -> S.Let:
        dtype_tok = self.peek()
        dtype = self.parse_dtype()
        name_tok = self.expect_ident("a variable name")
        declared = self.section.vars.get(name_tok.text)
        if declared is not None and declared.dtype != dtype:
            self.error(f"Let '{name_tok.text}' is {dtype} but its decl says {declared.dtype}", dtype_tok)
        body = self.parse_expr() if self.accept("=") else None
        symbol = declared if declared is not None else E.Var(name_tok.text, dtype)
        self.scopes[-1][symbol.name] = symbol
        return S.Let(symbol, body)

    def parse_dtype(self) -> DType:
        tok = self.expect_ident("a dtype")
        if tok.text not in _DTYPE_NAMES:
            self.fail("a dtype such as 'float32'", tok)
        dtype = dt.dtype_of(tok.text)
        if self.at("<") and self.peek(1).kind == "INT":
            self.advance()
            dtype = dtype.with_lanes(self.expect_int("a lane count"))
            self.expect(">", "to close the vector type")
        return dtype

    def parse_alloc_free(self) -> S.Stmt:
        word = self.advance().text
        self.expect("(")
        buf_tok = self.expect_ident("a buffer name")
        buffer = self.lookup_buffer(buf_tok)
        if word == "free":
            self.expect(")", "to close free(...)")
            return S.Free(buffer)
        extents = []
        while self.accept(","):
            extents.append(self.parse_expr())
        self.expect(")", "to close alloc(...)")
        return S.Alloc(buffer, tuple(extents))

    # -- schedule blocks --------------------------------------------------------------------------
    def parse_schedule_block(self) -> S.ScheduleBlockRealize:
        head = self.expect("ScheduleBlock")
        self.expect("(")
        name_tok = self.expect_ident("a block name")
        name = name_tok.text
        index = self.block_index(name_tok)
        self.expect(")", "after the block name")
        self.expect("{", "to open the schedule block")
        iter_vars, values = self.parse_axis_bind()
        self.scopes.append({v.name: v for v in iter_vars})
        for var, value in zip(iter_vars, values):
            self.infer.push_iter(var, value)
        reads = self.parse_regions("read_buffers")
        writes = self.parse_regions("write_buffers")
        attrs = self.parse_attrs(index) if self.at("attrs") and self.at("(", 1) else ()
        stmts = []
        while not self.at("}"):
            if self.peek().kind == "EOF":
                self.fail("'}' to close the schedule block")
            stmts.append(self.parse_stmt())
        self.advance()
        if not stmts:
            self.error(f"schedule block '{name}' has no body statement", head)
        for var in iter_vars:
            self.infer.pop_binding(var)
        self.scopes.pop()
        body = stmts[0] if len(stmts) == 1 else S.Block(tuple(stmts))
        method = self.decls.block_methods.get(index, (name, S.ReduceMethod.NONE))[1]
        block = S.ScheduleBlock(name, iter_vars, body, reads, writes, attrs, method)
        return S.ScheduleBlockRealize(values, block)

    def block_index(self, name_tok: Token) -> int:
        """Document-order number of this block (decls name blocks by it), checked by name."""
        if not self.counting:
            return -1
        index, self.n_blocks = self.n_blocks, self.n_blocks + 1
        named = [n for n, _ in self.decls.attrs.get(index, {}).values()]
        if index in self.decls.block_methods:
            named.append(self.decls.block_methods[index][0])
        for decl_name in named:
            if decl_name != name_tok.text:
                self.error(f"block #{index} is '{name_tok.text}' but its decl names '{decl_name}'", name_tok)
        return index

    def parse_axis_bind(self) -> tuple[tuple[E.Var, ...], tuple[E.Expr, ...]]:
        """`i0, i1 = axis.bind(e0, e1)` when present; values parse in the enclosing scope."""
        n = 0
        while True:
            if self.peek(n).kind != "IDENT":
                return (), ()
            if self.at(",", n + 1):
                n += 2
                continue
            if self.at("=", n + 1) and self.at("axis", n + 2) and self.at(".", n + 3):
                break
            return (), ()
        names = [self.peek(j) for j in range(0, n + 1, 2)]
        self.k += n + 2
        self.expect("axis")
        self.expect(".")
        bind_tok = self.expect_ident("'bind'")
        if bind_tok.text != "bind":
            self.fail("'bind'", bind_tok)
        self.expect("(", "after 'axis.bind'")
        values = self.parse_expr_list(")")
        if len(values) != len(names):
            self.error(f"axis.bind arity mismatch: {len(names)} iter vars "
                       f"({', '.join(t.text for t in names)}) but {len(values)} values", bind_tok)
        iter_vars = tuple(self.binder(t.text, v.dtype, t) for t, v in zip(names, values))
        return iter_vars, tuple(values)

    def parse_regions(self, label: str) -> tuple[BufferRange, ...]:
        if not (self.at(label) and self.at("(", 1)):
            return ()
        self.k += 2
        regions = []
        while not self.at(")"):
            if regions:
                self.expect(",", f"between {label} regions")
            tok = self.expect_ident("a tensor name")
            tensor = self.lookup_tensor(tok)
            self.expect("[")
            ranges = []
            while not self.at("]"):
                if ranges:
                    self.expect(",", "between ranges")
                lo = self.parse_expr()
                self.expect(":", "between the range min and extent")
                ranges.append((lo, self.parse_expr()))
            self.advance()
            regions.append(BufferRange(tensor, tuple(ranges)))
        self.advance()
        return tuple(regions)

    def parse_attrs(self, block: int) -> tuple[tuple[str, Any], ...]:
        from cinn_py.ir.decls import decode_attr_value

        self.k += 2
        items: dict[str, Any] = {}
        while not self.at(")"):
            if items:
                self.expect(",", "between attrs")
            key = self.expect_ident("an attr name").text
            colon = self.expect(":", "after the attr name")
            end = self.raw_value_end(colon.offset + 1)
            raw = self.text[colon.offset + 1:end].strip()
            if not raw:
                self.fail("an attr value")
            while self.peek().offset < end and self.peek().kind != "EOF":
                self.k += 1
            override = self.decls.attrs.get(block, {}).get(key)
            items[key] = decode_attr_value(raw) if override is None else override[1]
        self.advance()
        return tuple(sorted(items.items()))

    def raw_value_end(self, start: int) -> int:
        ends = [p for p in (self.text.find(",", start), self.text.find(")", start)) if p >= 0]
        return min(ends) if ends else len(self.text)

    # -- expressions ------------------------------------------------------------------------------
    def parse_expr(self) -> E.Expr:
        return self.parse_binary(0)

    def parse_expr_list(self, close: str) -> list[E.Expr]:
        items: list[E.Expr] = []
        while not self.at(close):
            if items:
                self.expect(",", f"or '{close}'")
            items.append(self.parse_expr())
        self.advance()
        return items

    def parse_binary(self, level: int) -> E.Expr:
        if level == len(_BINARY_LEVELS):
            return self.parse_unary()
        ops = _BINARY_LEVELS[level]
        lhs = self.parse_binary(level + 1)
        while self.peek().kind in ("PUNCT", "IDENT") and self.peek().text in ops:
            tok = self.advance()
            rhs = self.parse_binary(level + 1)
            lhs = self.build(tok, ops[tok.text], lhs, rhs)
        return lhs

    def build(self, tok: Token, cls: Any, *args: Any) -> Any:
        """Construct a node, turning the IR's own type checks into ParseErrors at `tok`."""
        try:
            return cls(*args)
        except (TypeError, ValueError) as exc:
            self.error(f"invalid {cls.__name__}: {exc}", tok)

    def parse_unary(self) -> E.Expr:
        tok = self.peek()
        if self.at("-"):
            self.advance()
            nxt = self.peek()
            if nxt.kind in ("INT", "FLOAT") or nxt.kind == "IDENT" and nxt.text in ("inf", "nan"):
                self.advance()
                return self.literal(tok, "-" + nxt.text)
            return E.Minus(self.parse_unary())
        if self.at("!"):
            self.advance()
            return E.Not(self.parse_unary())
        return self.parse_primary()

    def literal(self, tok: Token, text: str, prefix: str | None = None) -> E.Expr:
        try:
            value = decode_literal(text, prefix)
        except (ValueError, TypeError, OverflowError) as exc:
            self.error(f"invalid literal: {exc}", tok)
        return self.count_literal(value, tok)

    def count_literal(self, value: E.Expr, tok: Token) -> E.Expr:
        """Apply a `// decl literal #n` override, which must print as the text does."""
        if not self.counting:
            return value
        index = self.n_literals
        self.n_literals += 1
        override = self.decls.literals.get(index)
        if override is None:
            return value
        from cinn_py.ir.printer import print_ir

        if print_ir(override) != print_ir(value):
            self.error(f"'// decl literal #{index}' is {override.dtype} '{print_ir(override)}' but the "
                       f"text has '{print_ir(value)}' (literal numbers count every literal in order)", tok)
        return override

    def parse_primary(self) -> E.Expr:
        tok = self.peek()
        if tok.kind in ("INT", "FLOAT"):
            self.advance()
            return self.literal(tok, tok.text)
        if tok.kind == "STRING":
            self.advance()
            return E.StringImm(tok.text)
        if self.at("("):
            return self.parse_paren()
        if tok.kind != "IDENT":
            self.fail("an expression")
        return self.parse_name()

    def parse_paren(self) -> E.Expr:
        open_tok = self.advance()
        nxt = self.peek()
        if nxt.kind == "IDENT" and nxt.text in LITERAL_PREFIXES and self.at(")", 1):
            self.k += 2
            negative = self.accept("-")
            lit = self.peek()
            if lit.kind not in ("INT", "FLOAT") and lit.text not in ("inf", "nan"):
                self.fail(f"a literal after '({nxt.text})'")
            self.advance()
            return self.literal(open_tok, ("-" if negative else "") + lit.text, nxt.text)
        inner = self.parse_expr()
        self.expect(")", "to close '('")
        return inner

    def parse_name(self) -> E.Expr:
        tok = self.advance()
        name = tok.text
        if name in ("true", "false", "inf", "nan"):
            return self.literal(tok, name)
        if self.at("["):
            self.advance()
            tensor = self.lookup_tensor(tok)
            indices = tuple(self.parse_expr_list("]"))
            self.infer.note_access(tensor, indices, tok)
            return E.Load(tensor, indices)
        if name in _DTYPE_NAMES and self.at("<") and self.peek(1).kind == "INT" and self.at(">", 2) \
                and self.at("(", 3):
            self.k -= 1
            dtype = self.parse_dtype()
            self.expect("(")
            return self.parse_cast(dtype, tok)
        if self.at("("):
            self.advance()
            return self.parse_call_like(tok)
        return self.lookup_var(name, tok)

    def parse_cast(self, dtype: DType, tok: Token) -> E.Expr:
        args = self.parse_expr_list(")")
        if len(args) != 1:
            self.error(f"cast to {dtype} takes 1 argument, got {len(args)}", tok)
        return E.Cast(dtype, args[0])

    def parse_call_like(self, tok: Token) -> E.Expr:
        name = tok.text
        if name == "Reduce":
            return self.parse_reduce(tok)
        if name in RAW_HALF_FUNCS:
            return self.parse_raw_half(tok)
        if name in _DTYPE_NAMES:
            return self.parse_cast(dt.dtype_of(name), tok)
        if name in ("Ramp", "Broadcast"):
            return self.parse_vector(tok)
        args = tuple(self.parse_expr_list(")"))
        fixed = {"select": (3, E.Select), "cinn_min": (2, E.Min), "cinn_max": (2, E.Max)}
        if name in fixed:
            arity, cls = fixed[name]
            if len(args) != arity:
                self.error(f"{name} takes {arity} arguments, got {len(args)}", tok)
            return self.build(tok, cls, *args)
        dtype, call_type = default_call_signature(name, args)
        if self.counting:
            dtype, call_type = self.decls.calls.get(self.n_calls, (dtype, call_type))
            self.n_calls += 1
        return E.Call(name, args, dtype, call_type)

    def parse_raw_half(self, tok: Token) -> E.Expr:
        dtype = RAW_HALF_FUNCS[tok.text]
        bits_tok = self.peek()
        if bits_tok.kind != "INT":
            self.fail("a 16-bit pattern such as 0x7c00")
        self.advance()
        self.expect(")", f"to close {tok.text}(...)")
        try:
            bits = int(bits_tok.text, 16) if bits_tok.text.lower().startswith("0x") else int(bits_tok.text)
            value = half_from_bits(bits, dtype)
        except ValueError as exc:
            self.error(f"invalid literal: {exc}", bits_tok)
        return self.count_literal(E.FloatImm(dtype, value), tok)

    def parse_vector(self, tok: Token) -> E.Expr:
        parts: list[E.Expr] = [self.parse_expr()]
        self.expect(",", f"in {tok.text}(...)")
        if tok.text == "Ramp":
            parts.append(self.parse_expr())
            self.expect(",", "in Ramp(base,stride,lanes)")
        lanes = self.expect_int("a lane count")
        self.expect(")", f"to close {tok.text}(...)")
        if lanes <= 0:
            self.error(f"{tok.text} needs a positive lane count", tok)
        return E.Ramp(parts[0], parts[1], lanes) if tok.text == "Ramp" else E.Broadcast(parts[0], lanes)

    def parse_reduce(self, tok: Token) -> E.Expr:
        tag_tok = self.advance()
        tag = _REDUCE_TAGS.get(tag_tok.text)
        if tag is None:
            self.fail(f"a reduce kind ({', '.join(_REDUCE_TAGS)})", tag_tok)
        self.expect(",", "after the reduce kind")
        body = self.parse_expr()
        self.expect(",", "between the reduce body and init")
        init = self.parse_expr()
        self.expect(")", "to close Reduce(...)")
        axes = default_reduce_axes(body)
        if self.counting:
            names = self.decls.reduce_axes.get(self.n_reduces)
            self.n_reduces += 1
            if names is not None:
                axes = tuple(self.lookup_var(n, tok) for n in names)
        return E.Reduce(tag, body, init, axes)

    # -- tensors and buffers ----------------------------------------------------------------------
    def lookup_tensor(self, tok: Token) -> Tensor:
        name = tok.text
        tensor = self.section.tensors.get(name) or self.decls.global_section.tensors.get(name)
        if tensor is not None:
            return tensor
        if self.decls.present:
            self.error(f"undefined tensor '{name}': with a '// decl' header every tensor needs a "
                       f"'// decl tensor {name} : ...' line", tok)
        return self.infer.provisional(name)

    def lookup_buffer(self, tok: Token) -> Buffer:
        name = tok.text
        for section in (self.section, self.decls.global_section):
            if name in section.buffers:
                return section.buffers[name]
            for tensor in section.tensors.values():
                if tensor.buffer.name == name:
                    return tensor.buffer
        if not self.decls.present and name.startswith("_") and len(name) > 1:
            return self.infer.provisional(name[1:]).buffer
        self.error(f"undefined buffer '{name}'", tok)


def _run(text: str, kind: str) -> Any:
    if not isinstance(text, str):
        raise TypeError(f"parse_ir expects the IR text as str, got {type(text).__name__}")
    try:
        return Parser(text).parse_document(kind)
    except ParseError:
        raise
    except RecursionError:
        raise ParseError("input nests too deeply", 1, 1, "") from None
    except Exception as exc:  # noqa: BLE001 - the contract: only ParseError leaves the parser
        raise ParseError(f"malformed IR: {type(exc).__name__}: {exc}", 1, 1, "") from None


def parse_ir(text: str) -> LoweredFunc | Module | S.Stmt | E.Expr:
    """Parse IR text (optionally with a `// decl` header) into the node it prints."""
    return _run(text, "any")


def parse_func(text: str) -> LoweredFunc:
    """Parse `function name (...) {...}`."""
    return _run(text, "func")


def parse_stmt(text: str) -> S.Stmt:
    """Parse one statement (an expression alone becomes an `Evaluate`)."""
    return _run(text, "stmt")


def parse_expr(text: str) -> E.Expr:
    """Parse one expression."""
    return _run(text, "expr")
