"""The `// decl` header: what CINN's text leaves out, so the parser can rebuild the exact tree.

CINN's printer omits tensor dtypes and shapes, buffer names and memory scopes, the dtypes of loop
and iter vars, symbolic-dim bounds, reduce flags, call dtypes, `reduce_method`, and it prints some
literals ambiguously (`7` is int32 or uint32, `inf` is float32 or float64, `0.100000001f` is the
9-digit rounding of any nearby double). `print_ir(node, decls=True)` prepends one `// decl` line
per missing fact; the IR text after the header stays byte-identical to CINN's format. The grammar
is documented (EBNF) in `docs/ir.md`. Example:

    // decl func fn(input A, output B, scalar S0)
    // decl var S0 : int64 symbolic lower=1ll
    // decl tensor A : float32[S0, 32] global
    // decl tensor B : float32[S0, 32] global

A header switches the parser to *exact mode*: every tensor must be declared, and every var that
is not declared is a plain int32. Without a header the parser uses inference defaults (see
`parser.py`). This module holds the tables the parser fills from decl lines; the printing side is
`decl_printer` and the defaults both sides share (`decode_literal`, `default_call_signature`,
`default_reduce_axes`, `decode_attr_value`) are `defaults`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


from cinn_py.ir import expr as E
from cinn_py.ir import stmt as S
from cinn_py.ir.buffer import Buffer, MemoryType, Tensor
from cinn_py.ir.dtype import DType
from cinn_py.ir.func import ArgIO

# Tables filled by the parser from decl lines
# --------------------------------------------------------------------------------------------
@dataclass
class FuncDecl:
    """`func name(input A, output B, scalar S0) temp(_C)` plus an optional cuda_axis line."""

    name: str
    args: list[tuple[ArgIO, str]]
    temps: list[str]
    cuda_axis: tuple[tuple[E.Expr, ...], tuple[E.Expr, ...]] | None = None


@dataclass
class Section:
    """Declarations of one function (or of the whole text when it is not a Module)."""

    func: FuncDecl | None = None
    vars: dict[str, E.Var] = field(default_factory=dict)
    buffers: dict[str, Buffer] = field(default_factory=dict)
    tensors: dict[str, Tensor] = field(default_factory=dict)


@dataclass
class DeclTable:
    """All decls of a text: a global section, per-function sections, occurrence overrides."""

    global_section: Section = field(default_factory=Section)
    func_sections: list[Section] = field(default_factory=list)
    literals: dict[int, E.Expr] = field(default_factory=dict)
    calls: dict[int, tuple[DType, E.CallType]] = field(default_factory=dict)
    reduce_axes: dict[int, tuple[str, ...]] = field(default_factory=dict)
    block_methods: dict[int, tuple[str, S.ReduceMethod]] = field(default_factory=dict)
    """n-th schedule block (document order) -> (its name, its reduce_method)."""
    attrs: dict[int, dict[str, tuple[str, Any]]] = field(default_factory=dict)
    """n-th schedule block -> attr key -> (block name, exact value)."""
    root_is_stmt: bool = False
    present: bool = False
    """True when the text has at least one decl line (exact mode)."""


MEMORY_TYPES: dict[str, MemoryType] = {m.value: m for m in MemoryType}
REDUCE_METHODS: dict[str, S.ReduceMethod] = {m.value: m for m in S.ReduceMethod}
CALL_TYPES: dict[str, E.CallType] = {c.value: c for c in E.CallType}
ARG_IOS: dict[str, ArgIO] = {a.value: a for a in ArgIO}
