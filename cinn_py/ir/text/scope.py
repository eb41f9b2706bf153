"""What names mean during one parse: the `// decl` table, the current function's section, the
binder scopes, scalar params, decl-override counters, and header-less tensor inference.

One `Scope` per parse, shared by the expression, statement and decl parsers (with the `Cursor`).
"""

from __future__ import annotations

from typing import NoReturn

from cinn_py.ir import dtype as dt
from cinn_py.ir import expr as E
from cinn_py.ir.buffer import Buffer, Tensor
from cinn_py.ir.dtype import DType
from cinn_py.ir.text.cursor import Cursor
from cinn_py.ir.text.decls import DeclTable, Section
from cinn_py.ir.text.inference import TensorInference
from cinn_py.ir.text.lexer import Token


class Scope:
    """Name resolution (vars, tensors, buffers) against decls, binders and inference."""

    def __init__(self, cursor: Cursor) -> None:
        self.cur = cursor
        self.decls = DeclTable()
        self.section: Section = self.decls.global_section
        # Decl overrides (`// decl literal #n`, ...) number the nodes of the IR text in document
        # order; counting starts after the header.
        self.counting = False
        self.n_literals = self.n_calls = self.n_reduces = self.n_blocks = 0
        self.scopes: list[dict[str, E.Var]] = [{}]
        self.in_function = False
        self.check_bounds = True
        """Refuse unguarded accesses outside their tensor's shape in a function (`parse_ir`'s
        `check_bounds`)."""
        self.free_int_dtype = dt.int32
        self.params: dict[str, E.Var] = {}
        self.infer = TensorInference(self)

    def error(self, message: str, tok: Token) -> NoReturn:
        self.cur.error(message, tok)

    # -- variables --------------------------------------------------------------------------------
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
