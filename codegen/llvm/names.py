"""Names in generated LLVM modules: kernel symbols and local value names from user names.

User names (function, tensor, buffer, loop variable names) may be any string: spaces, quotes,
`%x`, `@g`, newlines, unicode, C keywords, libm function names, thousands of characters. They
are never pasted into a module as they are:

- the kernel symbol is `cinn_py.ir.sanitize.sanitize_identifier(name, RESERVED_SYMBOLS)`: the
  name itself when it is a safe C identifier that no external symbol of the module uses, else a
  readable prefix plus a hash of the full name (deterministic; distinct names give distinct
  symbols, so cache entries and disassembly stay unambiguous). Helper functions derive from it
  (`<symbol>_infer_shape`, `<symbol>__parallel_<k>`) and so cannot collide with each other.
- local value names (parameters, temp buffers, loop blocks) keep a plain short user name and are
  sanitised otherwise: LLVM truncates local names beyond 1024 characters, which made two values
  of one function share a name ("redefinition of argument"). llvmlite makes repeated names
  unique within a function.

Differs from CINN, whose codegen prints names verbatim (its frontend only creates identifiers).
"""

from __future__ import annotations

import re

from cinn_py.ir import CUDA_RESERVED, C_KEYWORDS, MAX_IDENTIFIER_LENGTH, sanitize_identifier

LAUNCH_SYMBOL = "cinn_py_parallel_launch"

_RUNTIME_SYMBOLS = {"free", "malloc", "aligned_alloc", "memcpy", "memset", "memmove", "main", LAUNCH_SYMBOL}
_LIBM_NAMES = {"exp", "log", "sqrt", "tanh", "erf", "pow", "sin", "cos", "tan", "floor", "ceil", "round",
               "trunc", "fabs", "expm1", "log1p", "cbrt", "asin", "acos", "atan", "atan2", "sinh", "cosh",
               "asinh", "acosh", "atanh", "exp2", "log2", "log10", "fmod"}
# Names a kernel symbol must never take: C/CUDA reserved words (sanitize's defaults) and every
# external symbol generated code may call (float64 and float32 libm names, the runtime).
RESERVED_SYMBOLS = C_KEYWORDS | CUDA_RESERVED | frozenset(_RUNTIME_SYMBOLS) | frozenset(_LIBM_NAMES) | \
    frozenset(n + "f" for n in _LIBM_NAMES)
_PLAIN_VALUE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z")


def symbol_name(name: str) -> str:
    """The C symbol of a kernel named `name` (deterministic; distinct names give distinct
    symbols): `name` itself when it is a safe identifier that is not reserved, else a readable
    prefix plus a hash of `name` (`cinn_py.ir.sanitize.sanitize_identifier`)."""
    return sanitize_identifier(name, RESERVED_SYMBOLS)


def value_name(name: str) -> str:
    """An LLVM local value name for a user name: kept when plain and short (the IR stays
    readable; llvmlite makes repeated names unique within a function), sanitised otherwise."""
    if len(name) <= MAX_IDENTIFIER_LENGTH and _PLAIN_VALUE_NAME.match(name):
        return name
    return sanitize_identifier(name, frozenset())
