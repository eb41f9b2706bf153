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
from cinn_py.ir.text.decls import DeclTable, Section
from cinn_py.ir.dtype import DType
from cinn_py.ir.func import LoweredFunc, Module
from cinn_py.ir.text.lexer import Token, tokenize
from cinn_py.ir.text.parser_decls import DeclParser
from cinn_py.ir.text.parser_expr import ExprParser
from cinn_py.ir.text.inference import TensorInference
from cinn_py.ir.text.parser_stmt import StmtParser


class Parser(StmtParser, ExprParser, DeclParser):
    """One parse of one text: token cursor, scopes, the document entry, functions and modules.

    Statements come from `StmtParser` (parser_stmt.py), expressions from `ExprParser`
    (parser_expr.py), decl lines and function assembly from `DeclParser` (parser_decls.py).
    """

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
