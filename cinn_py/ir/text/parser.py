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

Semantic checks (each a ParseError at the offending token): a loop extent that is a negative
constant (`for (i, 0, -8)` would silently run nothing and leave its outputs uninitialised); in a
function, an unguarded access whose index provably leaves a constant dimension of its tensor over
the enclosing loops (declared shapes), or goes below 0 (inferred shapes); see `parse_ir`.

Every failure is a `ParseError` with `line:col`, what was expected and what was found, and a
caret line; no Python exception escapes from inside the parser.
"""

from __future__ import annotations

from typing import Any

from cinn_py.diagnostics import ParseError
from cinn_py.ir import dtype as dt
from cinn_py.ir import expr as E
from cinn_py.ir import stmt as S
from cinn_py.ir.func import LoweredFunc, Module
from cinn_py.ir.text.cursor import Cursor
from cinn_py.ir.text.inference import TensorInference
from cinn_py.ir.text.lexer import Token
from cinn_py.ir.nesting import deep_nesting
from cinn_py.ir.text.parser_decls import DeclParser
from cinn_py.ir.text.parser_expr import ExprParser
from cinn_py.ir.text.parser_stmt import StmtParser
from cinn_py.ir.text.scope import Scope


class Parser:
    """One parse of one text: the document entry, functions and modules.

    The parts share one token `Cursor` and one `Scope` (decls, binders, inference): expressions
    come from `ExprParser` (parser_expr.py), statements from `StmtParser` (parser_stmt.py), decl
    lines and function assembly from `DeclParser` (parser_decls.py).
    """

    def __init__(self, text: str, check_bounds: bool = True) -> None:
        self.cur = Cursor(text)
        self.scope = Scope(self.cur)
        self.scope.check_bounds = check_bounds
        self.exprs = ExprParser(self.cur, self.scope)
        self.stmts = StmtParser(self.cur, self.scope, self.exprs)
        self.decls = DeclParser(self.cur, self.scope, self.exprs)

    def parse_document(self, kind: str) -> Any:
        cur, scope = self.cur, self.scope
        self.decls.parse_header()
        if not scope.decls.present and any(t.kind == "INT" and t.text.endswith("ll") and not
                                           t.text.endswith("ull") for t in cur.tokens):
            scope.free_int_dtype = dt.int64
        scope.counting = True
        scope.section = scope.decls.global_section
        if cur.peek().kind == "EOF":
            cur.fail("IR text")
        if kind in ("any", "func") and cur.at("function"):
            result: Any = self.parse_function()
        elif kind == "any" and cur.at("Module"):
            result = self.parse_module()
        elif kind == "func":
            cur.fail("'function'")
        elif kind == "expr":
            result = self.exprs.parse_expr()
        else:
            result = self.stmts.parse_stmt(allow_expr=kind == "any")
        if not isinstance(result, (LoweredFunc, Module)) and not scope.decls.present:
            result = scope.infer.finish(result)
        if cur.peek().kind == "DECL":
            cur.error("'// decl' lines must come before the IR text", cur.peek())
        if cur.peek().kind != "EOF":
            cur.fail("end of input")
        return result

    # -- functions and modules --------------------------------------------------------------------
    def parse_module(self) -> Module:
        cur = self.cur
        cur.expect("Module")
        name = cur.expect_ident("a module name").text
        cur.expect("{", "to open the module body")
        functions = []
        while cur.at("function"):
            functions.append(self.parse_function(index=len(functions)))
        cur.expect("}", "to close the module (or 'function')")
        return Module(name, tuple(functions))

    def parse_function(self, index: int = 0) -> LoweredFunc:
        cur, scope = self.cur, self.scope
        start = cur.expect("function")
        name = cur.expect_ident("a function name").text
        scope.section = self.decls.function_section(name, index, start)
        cur.expect("(", "to open the argument list")
        arg_toks: list[Token] = []
        while not cur.at(")"):
            if arg_toks:
                cur.expect(",", "between arguments")
            arg_toks.append(cur.expect_ident("an argument name"))
        cur.expect(")", "to close the argument list")
        scope.params = self.decls.scalar_params(arg_toks)
        scope.infer = TensorInference(scope)
        scope.in_function, scope.scopes = True, [{}]
        body = self.stmts.parse_stmt()
        scope.in_function = False
        func = self.decls.build_function(name, arg_toks, body, start)
        scope.params, scope.section = {}, scope.decls.global_section
        return func


@deep_nesting
def _run(text: str, kind: str, check_bounds: bool = True) -> Any:
    if not isinstance(text, str):
        raise TypeError(f"parse_ir expects the IR text as str, got {type(text).__name__}")
    try:
        return Parser(text, check_bounds).parse_document(kind)
    except ParseError:
        raise
    except RecursionError:
        raise ParseError("input nests too deeply", 1, 1, "") from None
    except Exception as exc:  # noqa: BLE001 - the contract: only ParseError leaves the parser
        raise ParseError(f"malformed IR: {type(exc).__name__}: {exc}", 1, 1, "") from None


def parse_ir(text: str, check_bounds: bool = True) -> LoweredFunc | Module | S.Stmt | E.Expr:
    """Parse IR text (optionally with a `// decl` header) into the node it prints.

    `check_bounds` (default True): in a function, an access that is not under an `if`/`select`
    and whose index provably leaves a constant dimension of its tensor on some iteration of the
    enclosing loops is a ParseError (line:col of the access); False accepts such text (syntax
    tests on random trees)."""
    return _run(text, "any", check_bounds)


def parse_func(text: str, check_bounds: bool = True) -> LoweredFunc:
    """Parse `function name (...) {...}` (`check_bounds` as for `parse_ir`)."""
    return _run(text, "func", check_bounds)


def parse_stmt(text: str) -> S.Stmt:
    """Parse one statement (an expression alone becomes an `Evaluate`)."""
    return _run(text, "stmt")


def parse_expr(text: str) -> E.Expr:
    """Parse one expression."""
    return _run(text, "expr")
