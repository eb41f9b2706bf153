"""How a name appears in the IR text format: bare, or escaped in backquotes.

CINN's printer writes every name bare, so a tensor, var, block or function whose name is a word
of the format (`select`, `true`, `axis`, `float32`, ...) or is not a plain identifier (`my prog`,
`x@GRAD`, `ünï`) would print text that parses as something else, or not at all. Such a name is
written `` `select` `` (a backquote and a backslash inside are escaped as `\\``, `\\\\`; a newline and
a tab as `\\n`, `\\t`); the lexer reads it back as a name token that never matches a keyword. Every
other name prints exactly as CINN prints it, so the golden texts are unchanged.
"""

from __future__ import annotations

import re

from cinn_py.ir import dtype as dt

_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# Words the parser reads as something other than a name somewhere in a text or a decl line.
KEYWORDS = frozenset({
    "true", "false", "inf", "nan", "and", "or", "select", "if_then_else", "cinn_min", "cinn_max", "Reduce",
    "Ramp", "Broadcast", "Tensor", "_Buffer_", "ScheduleBlock", "axis", "bind", "read_buffers",
    "write_buffers", "attrs", "alloc", "free", "if", "else", "for", "serial", "parallel", "unroll", "default",
    "vectorize", "thread_bind", "function", "Module", "handle", "buffer", "temp", "reduce_method",
    "raw_uint16_to_float16", "raw_uint16_to_bfloat16",
}) | frozenset(d.scalar_name() for d in dt.ALL_SCALAR_DTYPES)
ESCAPES = {"`": "`", "\\": "\\", "n": "\n", "t": "\t"}
_ESCAPE_OUT = {"`": "\\`", "\\": "\\\\", "\n": "\\n", "\t": "\\t"}


# The vars a GPU binding puts in place of its loop var print as CINN prints them.
GPU_AXIS_VARS = frozenset(f"{kind}.{axis}" for kind in ("blockIdx", "threadIdx") for axis in "xyz")


def needs_escape(name: str) -> bool:
    """True when `name` printed bare would not read back as this name."""
    if name in GPU_AXIS_VARS:
        return False
    return _PLAIN.match(name) is None or name in KEYWORDS


def format_name(name: str) -> str:
    """`name` as the text format writes it (bare when it can be)."""
    if not needs_escape(name):
        return name
    return "`" + "".join(_ESCAPE_OUT.get(ch, ch) for ch in name) + "`"
