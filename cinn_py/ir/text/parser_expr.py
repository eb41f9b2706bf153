"""The parser's expression half: precedence climbing, literals, calls, casts, Reduce, vectors.

It reads from the `Cursor` and resolves names in the `Scope` it shares with the statement and
decl parsers. Binary operators parse with C precedence, so CINN's fully parenthesised output and
hand-written text both read back; tensor and buffer names resolve through the decls or, without a
header, `TensorInference`.
"""

from __future__ import annotations

from typing import Any

from cinn_py.ir import dtype as dt
from cinn_py.ir import expr as E
from cinn_py.ir.text.defaults import (
    LITERAL_PREFIXES, RAW_HALF_FUNCS, decode_literal, default_call_signature, default_reduce_axes,
    half_from_bits,
)
from cinn_py.ir.dtype import DType
from cinn_py.ir.text.lexer import Token
from cinn_py.ir.text.cursor import Cursor
from cinn_py.ir.text.scope import Scope


_BINARY_LEVELS: tuple[dict[str, type[E.BinaryOp]], ...] = (
    {"or": E.Or, "||": E.Or},
    {"and": E.And, "&&": E.And},
    {"==": E.EQ, "!=": E.NE},
    {"<": E.LT, "<=": E.LE, ">": E.GT, ">=": E.GE},
    {"+": E.Add, "-": E.Sub},
    {"*": E.Mul, "/": E.Div, "%": E.Mod},
)
_REDUCE_TAGS = {t.value: t for t in E.ReduceType}
DTYPE_NAMES = frozenset(d.scalar_name() for d in dt.ALL_SCALAR_DTYPES) | {"handle"}
"""Scalar dtype names (and `handle`) that start a cast, a Let or a vector type."""
_CONDITIONAL_CALLS = frozenset({"select", "if_then_else"})
"""Calls whose operands are evaluated only where their condition allows (an access inside may
be out of range elsewhere: padding)."""


class ExprParser:
    """Expressions (`parse_expr`), dtypes, and tensor/buffer name resolution."""

    def __init__(self, cursor: Cursor, scope: Scope) -> None:
        self.cur = cursor
        self.scope = scope

    def parse_expr(self) -> E.Expr:
        return self.parse_binary(0)

    def parse_expr_list(self, close: str) -> list[E.Expr]:
        items: list[E.Expr] = []
        while not self.cur.at(close):
            if items:
                self.cur.expect(",", f"or '{close}'")
            items.append(self.parse_expr())
        self.cur.advance()
        return items

    def parse_binary(self, level: int) -> E.Expr:
        if level == len(_BINARY_LEVELS):
            return self.parse_unary()
        ops = _BINARY_LEVELS[level]
        lhs = self.parse_binary(level + 1)
        while (tok := self.cur.peek()).kind in ("PUNCT", "IDENT") and not tok.escaped and tok.text in ops:
            tok = self.cur.advance()
            rhs = self.parse_binary(level + 1)
            lhs = self.build(tok, ops[tok.text], lhs, rhs)
        return lhs

    def build(self, tok: Token, cls: Any, *args: Any) -> Any:
        """Construct a node, turning the IR's own type checks into ParseErrors at `tok`."""
        try:
            return cls(*args)
        except (TypeError, ValueError) as exc:
            self.cur.error(f"invalid {cls.__name__}: {exc}", tok)

    def parse_unary(self) -> E.Expr:
        tok = self.cur.peek()
        if self.cur.at("-"):
            self.cur.advance()
            nxt = self.cur.peek()
            special = nxt.kind == "IDENT" and not nxt.escaped and nxt.text in ("inf", "nan")
            if nxt.kind in ("INT", "FLOAT") or special:
                self.cur.advance()
                return self.literal(tok, "-" + nxt.text)
            return E.Minus(self.parse_unary())
        if self.cur.at("!"):
            self.cur.advance()
            return E.Not(self.parse_unary())
        return self.parse_primary()

    def literal(self, tok: Token, text: str, prefix: str | None = None) -> E.Expr:
        try:
            value = decode_literal(text, prefix)
        except (ValueError, TypeError, OverflowError) as exc:
            self.cur.error(f"invalid literal: {exc}", tok)
        value = self.count_literal(value, tok)
        if isinstance(value, (E.IntImm, E.UIntImm)) and not value.dtype.is_bool:
            lo, hi = E.int_range(value.dtype.element_of())
            if not lo <= value.value <= hi:  # checked after a `// decl literal` gave the dtype
                self.cur.error(f"invalid literal: {value.value} is out of range for {value.dtype} [{lo}, "
                               f"{hi}]", tok)
        return value

    def count_literal(self, value: E.Expr, tok: Token) -> E.Expr:
        """Apply a `// decl literal #n` override, which must print as the text does."""
        if not self.scope.counting:
            return value
        index = self.scope.n_literals
        self.scope.n_literals += 1
        override = self.scope.decls.literals.get(index)
        if override is None:
            return value
        from cinn_py.ir.text.printer import print_ir

        if print_ir(override) != print_ir(value):
            self.cur.error(f"'// decl literal #{index}' is {override.dtype} '{print_ir(override)}' but the "
                       f"text has '{print_ir(value)}' (literal numbers count every literal in order)", tok)
        return override

    def parse_primary(self) -> E.Expr:
        tok = self.cur.peek()
        if tok.kind in ("INT", "FLOAT"):
            self.cur.advance()
            return self.literal(tok, tok.text)
        if tok.kind == "STRING":
            self.cur.advance()
            return E.StringImm(tok.text)
        if self.cur.at("("):
            return self.parse_paren()
        if tok.kind != "IDENT":
            self.cur.fail("an expression")
        return self.parse_name()

    def parse_paren(self) -> E.Expr:
        open_tok = self.cur.advance()
        nxt = self.cur.peek()
        if nxt.kind == "IDENT" and not nxt.escaped and nxt.text in LITERAL_PREFIXES and self.cur.at(")", 1):
            self.cur.k += 2
            negative = self.cur.accept("-")
            lit = self.cur.peek()
            if lit.kind not in ("INT", "FLOAT") and lit.text not in ("inf", "nan"):
                self.cur.fail(f"a literal after '({nxt.text})'")
            self.cur.advance()
            return self.literal(open_tok, ("-" if negative else "") + lit.text, nxt.text)
        inner = self.parse_expr()
        self.cur.expect(")", "to close '('")
        return inner

    def parse_name(self) -> E.Expr:
        tok = self.cur.advance()
        name = tok.text
        if tok.escaped:  # a backquoted name is a tensor or a var, never a literal, cast or call
            return self.parse_load(tok) if self.cur.at("[") else self.scope.lookup_var(name, tok)
        if name in ("true", "false", "inf", "nan"):
            return self.literal(tok, name)
        if self.cur.at("["):
            return self.parse_load(tok)
        if (name in DTYPE_NAMES and self.cur.at("<") and self.cur.peek(1).kind == "INT"
                and self.cur.at(">", 2) and self.cur.at("(", 3)):
            self.cur.k -= 1
            dtype = self.parse_dtype()
            self.cur.expect("(")
            return self.parse_cast(dtype, tok)
        if self.cur.at("("):
            self.cur.advance()
            return self.parse_call_like(tok)
        return self.scope.lookup_var(name, tok)

    def parse_load(self, tok: Token) -> E.Load:
        self.cur.expect("[")
        tensor = self.scope.lookup_tensor(tok)
        indices = tuple(self.parse_expr_list("]"))
        self.scope.infer.note_access(tensor, indices, tok)
        return E.Load(tensor, indices)

    def parse_dtype(self) -> DType:
        tok = self.cur.expect_ident("a dtype")
        if tok.text not in DTYPE_NAMES or tok.escaped:
            self.cur.fail("a dtype such as 'float32'", tok)
        dtype = dt.dtype_of(tok.text)
        if self.cur.at("<") and self.cur.peek(1).kind == "INT":
            self.cur.advance()
            dtype = dtype.with_lanes(self.cur.expect_int("a lane count"))
            self.cur.expect(">", "to close the vector type")
        return dtype

    def parse_cast(self, dtype: DType, tok: Token) -> E.Expr:
        args = self.parse_expr_list(")")
        if len(args) != 1:
            self.cur.error(f"cast to {dtype} takes 1 argument, got {len(args)}", tok)
        return E.Cast(dtype, args[0])

    def parse_call_like(self, tok: Token) -> E.Expr:
        name = tok.text
        if name == "Reduce":
            return self.parse_reduce(tok)
        if name in RAW_HALF_FUNCS:
            return self.parse_raw_half(tok)
        if name in DTYPE_NAMES:
            return self.parse_cast(dt.dtype_of(name), tok)
        if name in ("Ramp", "Broadcast"):
            return self.parse_vector(tok)
        guarded = name in _CONDITIONAL_CALLS  # its operands are evaluated only where the condition allows
        self.scope.infer.guards += guarded
        args = tuple(self.parse_expr_list(")"))
        self.scope.infer.guards -= guarded
        fixed = {"select": (3, E.Select), "cinn_min": (2, E.Min), "cinn_max": (2, E.Max)}
        if name in fixed:
            arity, cls = fixed[name]
            if len(args) != arity:
                self.cur.error(f"{name} takes {arity} arguments, got {len(args)}", tok)
            return self.build(tok, cls, *args)
        dtype, call_type = default_call_signature(name, args)
        if self.scope.counting:
            dtype, call_type = self.scope.decls.calls.get(self.scope.n_calls, (dtype, call_type))
            self.scope.n_calls += 1
        return E.Call(name, args, dtype, call_type)

    def parse_raw_half(self, tok: Token) -> E.Expr:
        dtype = RAW_HALF_FUNCS[tok.text]
        bits_tok = self.cur.peek()
        if bits_tok.kind != "INT":
            self.cur.fail("a 16-bit pattern such as 0x7c00")
        self.cur.advance()
        self.cur.expect(")", f"to close {tok.text}(...)")
        try:
            bits = int(bits_tok.text, 16) if bits_tok.text.lower().startswith("0x") else int(bits_tok.text)
            value = half_from_bits(bits, dtype)
        except ValueError as exc:
            self.cur.error(f"invalid literal: {exc}", bits_tok)
        return self.count_literal(E.FloatImm(dtype, value), tok)

    def parse_vector(self, tok: Token) -> E.Expr:
        parts: list[E.Expr] = [self.parse_expr()]
        self.cur.expect(",", f"in {tok.text}(...)")
        if tok.text == "Ramp":
            parts.append(self.parse_expr())
            self.cur.expect(",", "in Ramp(base,stride,lanes)")
        lanes = self.cur.expect_int("a lane count")
        self.cur.expect(")", f"to close {tok.text}(...)")
        if lanes <= 0:
            self.cur.error(f"{tok.text} needs a positive lane count", tok)
        return E.Ramp(parts[0], parts[1], lanes) if tok.text == "Ramp" else E.Broadcast(parts[0], lanes)

    def parse_reduce(self, tok: Token) -> E.Expr:
        tag_tok = self.cur.advance()
        tag = _REDUCE_TAGS.get(tag_tok.text)
        if tag is None:
            self.cur.fail(f"a reduce kind ({', '.join(_REDUCE_TAGS)})", tag_tok)
        self.cur.expect(",", "after the reduce kind")
        body = self.parse_expr()
        self.cur.expect(",", "between the reduce body and init")
        init = self.parse_expr()
        self.cur.expect(")", "to close Reduce(...)")
        axes = default_reduce_axes(body)
        if self.scope.counting:
            names = self.scope.decls.reduce_axes.get(self.scope.n_reduces)
            self.scope.n_reduces += 1
            if names is not None:
                axes = tuple(self.scope.lookup_var(n, tok) for n in names)
        return E.Reduce(tag, body, init, axes)
