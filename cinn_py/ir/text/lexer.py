"""Tokenizer of the CINN IR text format (what `printer.py` prints, plus the `// decl` header).

The format is whitespace- and indentation-insensitive, so the lexer drops blanks and newlines.
Two kinds of comment exist: `// decl ...` lines, which carry the declarations of `decls.py` and
are tokenized (the lexer emits a `DECL` token at their start and an `EOL` token at their end), and
every other `// ...` comment, which is skipped.

Token kinds: IDENT (`[A-Za-z_][A-Za-z0-9_]*`, or any name in backquotes (names.py), with `::` joins so that
`cinn::common::raw_uint16_to_float16` is one name), INT (`7`, `7ll`, `7ull`, `0x7c00`), FLOAT
(`2.00000000f`, `1.0000000000000000e+100`), STRING (`"text"` with `\\`, `\"`, `\n` escapes),
punctuation (`( ) [ ] { } , : ; . # = ! < > + - * / %` and `== != <= >= && || ->`), DECL, EOL,
EOF. Positions are 1-based (line, column).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cinn_py.diagnostics import ParseError
from cinn_py.ir.text.names import ESCAPES

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*")
_HEX = re.compile(r"0[xX][0-9a-fA-F]+")
# A number: digits with an optional fraction and exponent; the suffix is lexed separately.
_NUMBER = re.compile(r"(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?")
_SUFFIX = re.compile(r"(?:ull|ll|f)(?![A-Za-z0-9_])")
_TWO_CHAR = ("==", "!=", "<=", ">=", "&&", "||", "->")
_ONE_CHAR = set("()[]{},:;.#=!<>+-*/%")
_DECL_MARK = re.compile(r"//\s*decl\b")


@dataclass(frozen=True, slots=True)
class Token:
    """One token: `kind` (IDENT, INT, FLOAT, STRING, PUNCT, DECL, EOL, EOF), its text, position.

    For STRING the text is the unescaped value; for INT/FLOAT it is the literal as written
    (suffix included), so the parser can tell `7` from `7ll` and `2.0f` from `2.0`.
    """

    kind: str
    text: str
    line: int
    col: int
    offset: int
    escaped: bool = False
    """An IDENT written in backquotes: a name, never a keyword of the format."""

    def describe(self) -> str:
        """How an error message names this token: `'('`, `identifier 'foo'`, `end of input`."""
        if self.kind == "EOF":
            return "end of input"
        if self.kind == "EOL":
            return "end of line"
        if self.kind == "DECL":
            return "'// decl'"
        if self.kind == "IDENT":
            return f"identifier '{self.text}'"
        if self.kind in ("INT", "FLOAT"):
            return f"number '{self.text}'"
        if self.kind == "STRING":
            return "string literal"
        return f"'{self.text}'"


class Lexer:
    """Turns source text into a list of tokens (`tokenize`)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = text.split("\n")
        self.pos = 0
        self.line = 1
        self.line_start = 0
        self.in_decl = False
        self.tokens: list[Token] = []

    def error(self, message: str, offset: int) -> ParseError:
        line = self.text.count("\n", 0, offset) + 1
        start = self.text.rfind("\n", 0, offset) + 1
        return ParseError(message, line, offset - start + 1, self.lines[line - 1])

    def add(self, kind: str, text: str, start: int) -> None:
        self.tokens.append(Token(kind, text, self.line, start - self.line_start + 1, start))

    def newline(self) -> None:
        if self.in_decl:
            self.add("EOL", "\n", self.pos)
            self.in_decl = False
        self.pos += 1
        self.line += 1
        self.line_start = self.pos

    def tokenize(self) -> list[Token]:
        text, n = self.text, len(self.text)
        while self.pos < n:
            ch = text[self.pos]
            if ch == "\n":
                self.newline()
            elif ch in " \t\r\f\v":
                self.pos += 1
            elif text.startswith("//", self.pos):
                self.comment()
            elif ch.isalpha() or ch == "_":
                self.lex_ident()
            elif ch == "`":
                self.lex_escaped_name()
            elif ch.isdigit() or (ch == "." and self.pos + 1 < n and text[self.pos + 1].isdigit()):
                self.lex_number()
            elif ch == '"':
                self.lex_string()
            else:
                self.lex_punct()
        if self.in_decl:
            self.add("EOL", "", self.pos)
        self.add("EOF", "", self.pos)
        return self.tokens

    def comment(self) -> None:
        match = _DECL_MARK.match(self.text, self.pos)
        if match and not self.in_decl:
            self.add("DECL", "// decl", self.pos)
            self.in_decl = True
            self.pos = match.end()
            return
        end = self.text.find("\n", self.pos)
        self.pos = len(self.text) if end < 0 else end

    def lex_ident(self) -> None:
        match = _IDENT.match(self.text, self.pos)
        if match is None:  # a letter outside ASCII: str.isalpha() accepts it, the format does not
            ch = self.text[self.pos]
            raise self.error(f"unexpected character {ch!r}: a name with characters outside [A-Za-z0-9_] "
                             f"is written in backquotes (`{ch}...`)", self.pos)
        self.add("IDENT", match.group(), self.pos)
        self.pos = match.end()

    def lex_escaped_name(self) -> None:
        """`` `any name` ``: the printer's escape for names that are not plain identifiers or are
        words of the format (names.py); backquote, backslash, newline and tab escaped."""
        start, out = self.pos, []
        pos = start + 1
        while pos < len(self.text):
            ch = self.text[pos]
            if ch == "`":
                if not out:
                    raise self.error("empty name ``", start)
                self.tokens.append(Token("IDENT", "".join(out), self.line, start - self.line_start + 1, start,
                                         escaped=True))
                self.pos = pos + 1
                return
            if ch == "\n":
                break
            if ch == "\\":
                escape = ESCAPES.get(self.text[pos + 1:pos + 2])
                if escape is None:
                    raise self.error(f"invalid escape {self.text[pos:pos + 2]!r} in a backquoted name "
                                     "(\\`, \\\\, \\n, \\t)", pos)
                out.append(escape)
                pos += 2
                continue
            out.append(ch)
            pos += 1
        raise self.error("unterminated backquoted name", start)

    def lex_number(self) -> None:
        start = self.pos
        hex_match = _HEX.match(self.text, start)
        if hex_match:
            self.add("INT", hex_match.group(), start)
            self.pos = hex_match.end()
            return
        match = _NUMBER.match(self.text, start)
        assert match is not None  # guarded by the caller: a digit or .digit
        end = match.end()
        suffix = _SUFFIX.match(self.text, end)
        if suffix:
            end = suffix.end()
        elif end < len(self.text) and (self.text[end].isalnum() or self.text[end] == "_"):
            raise self.error(f"malformed number '{self.text[start:end + 1]}'", start)
        literal = self.text[start:end]
        is_float = any(c in literal for c in ".eE") or literal.endswith("f")
        if literal.endswith(("ll", "ull")) and is_float:
            raise self.error(f"malformed number '{literal}': integer suffix on a float", start)
        self.add("FLOAT" if is_float else "INT", literal, start)
        self.pos = end

    def lex_string(self) -> None:
        start, out = self.pos, []
        pos = start + 1
        escapes = {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}
        while pos < len(self.text):
            ch = self.text[pos]
            if ch == '"':
                self.add("STRING", "".join(out), start)
                self.pos = pos + 1
                return
            if ch == "\n":
                break
            if ch == "\\" and pos + 1 < len(self.text) and self.text[pos + 1] in escapes:
                out.append(escapes[self.text[pos + 1]])
                pos += 2
                continue
            out.append(ch)
            pos += 1
        raise self.error("unterminated string literal", start)

    def lex_punct(self) -> None:
        two = self.text[self.pos:self.pos + 2]
        if two in _TWO_CHAR:
            self.add("PUNCT", two, self.pos)
            self.pos += 2
            return
        ch = self.text[self.pos]
        if ch in _ONE_CHAR:
            self.add("PUNCT", ch, self.pos)
            self.pos += 1
            return
        raise self.error(f"unexpected character {ch!r}", self.pos)


def tokenize(text: str) -> list[Token]:
    """The tokens of `text`, ending with an EOF token; raises ParseError on a bad character."""
    return Lexer(text).tokenize()
