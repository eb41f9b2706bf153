"""The parser's token cursor: look-ahead, consumption, and `ParseError`s with `line:col`.

One `Cursor` per parse, shared by the expression, statement and decl parsers.
"""

from __future__ import annotations

from typing import NoReturn

from cinn_py.diagnostics import ParseError
from cinn_py.ir.text.lexer import Token, tokenize


class Cursor:
    """The tokens of one text and the position of the next one."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = text.split("\n")
        self.tokens: list[Token] = tokenize(text)
        self.k = 0

    def peek(self, ahead: int = 0) -> Token:
        return self.tokens[min(self.k + ahead, len(self.tokens) - 1)]

    def advance(self) -> Token:
        tok = self.peek()
        if tok.kind != "EOF":
            self.k += 1
        return tok

    def at(self, text: str, ahead: int = 0) -> bool:
        tok = self.peek(ahead)
        return tok.text == text and tok.kind in ("PUNCT", "IDENT") and not tok.escaped

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

    def expect_dotted_ident(self, what: str = "a name") -> str:
        """`name` or `a.b.c` (block attr keys such as `x86.nontemporal`)."""
        parts = [self.expect_ident(what).text]
        while self.at(".") and self.peek(1).kind == "IDENT":
            self.k += 1
            parts.append(self.advance().text)
        return ".".join(parts)

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
