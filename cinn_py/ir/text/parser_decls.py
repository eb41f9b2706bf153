"""The parser's half that reads `// decl` lines and assembles `LoweredFunc` signatures.

It shares the `Cursor` and `Scope` with the expression parser it delegates values to; the line
grammar is in `docs/ir.md` and the printing side in `decl_printer.py`.
"""

from __future__ import annotations

from typing import Any

from cinn_py.ir import dtype as dt
from cinn_py.ir import expr as E
from cinn_py.ir.buffer import Buffer, MemoryType, Tensor
from cinn_py.ir.text.decls import ARG_IOS, CALL_TYPES, MEMORY_TYPES, REDUCE_METHODS, FuncDecl, Section
from cinn_py.ir.func import ArgIO, Argument, CudaAxisInfo, LoweredFunc
from cinn_py.ir.text.lexer import Token
from cinn_py.ir.text.cursor import Cursor
from cinn_py.ir.text.parser_expr import ExprParser
from cinn_py.ir.text.scope import Scope



class DeclParser:
    """Decl lines (`parse_header`) and function assembly (`build_function`)."""

    def __init__(self, cursor: Cursor, scope: Scope, exprs: ExprParser) -> None:
        self.cur = cursor
        self.scope = scope
        self.exprs = exprs

    def parse_header(self) -> None:
        while self.cur.peek().kind == "DECL":
            self.scope.decls.present = True
            self.cur.advance()
            word = self.cur.expect_ident("a decl kind (func, var, tensor, buffer, ...)")
            handler = getattr(self, f"decl_{word.text}", None)
            if handler is None:
                self.cur.fail("a decl kind (func, cuda_axis, var, buffer, tensor, block, attr, literal, "
                              "call, "
                          "reduce, root, exact)", word)
            handler(word)
            if self.cur.peek().kind != "EOL":
                self.cur.fail("end of the decl line")
            self.cur.advance()

    # -- one method per decl kind -------------------------------------------------------------
    def decl_exact(self, tok: Token) -> None:
        """`exact`: exact mode without other declarations."""

    def decl_root(self, tok: Token) -> None:
        what = self.cur.expect_ident("'stmt'")
        if what.text != "stmt":
            self.cur.fail("'stmt'", what)
        self.scope.decls.root_is_stmt = True

    def decl_func(self, tok: Token) -> None:
        name = self.cur.expect_ident("a function name").text
        self.cur.expect("(")
        args: list[tuple[ArgIO, str]] = []
        while not self.cur.at(")"):
            if args:
                self.cur.expect(",", "between arguments")
            io_tok = self.cur.expect_ident("'input', 'output' or 'scalar'")
            if io_tok.text not in ARG_IOS:
                self.cur.fail("'input', 'output' or 'scalar'", io_tok)
            args.append((ARG_IOS[io_tok.text], self.cur.expect_ident("an argument name").text))
        self.cur.advance()
        temps: list[str] = []
        if self.cur.accept("temp"):
            self.cur.expect("(")
            while not self.cur.at(")"):
                if temps:
                    self.cur.expect(",", "between temp buffers")
                temps.append(self.cur.expect_ident("a buffer name").text)
            self.cur.advance()
        section = Section(func=FuncDecl(name, args, temps))
        self.scope.decls.func_sections.append(section)
        self.scope.section = section

    def decl_cuda_axis(self, tok: Token) -> None:
        if self.scope.section.func is None:
            self.cur.error("'cuda_axis' must follow a 'func' decl", tok)
        dims = []
        for label in ("grid", "block"):
            self.cur.expect(label)
            self.cur.expect("(")
            values = self.exprs.parse_expr_list(")")
            if len(values) != 3:
                self.cur.error(f"cuda_axis {label} needs 3 dims (x, y, z), got {len(values)}", tok)
            dims.append(tuple(values))
        self.scope.section.func.cuda_axis = (dims[0], dims[1])

    def decl_var(self, tok: Token) -> None:
        name = self.cur.expect_ident("a variable name").text
        self.cur.expect(":", "after the variable name")
        dtype = self.exprs.parse_dtype()
        flags: dict[str, Any] = {}
        while self.cur.peek().kind == "IDENT":
            flag = self.cur.advance()
            if flag.text in ("symbolic", "reduce"):
                flags["is_symbolic_constant" if flag.text == "symbolic" else "is_reduce_axis"] = True
            elif flag.text in ("lower", "upper"):
                self.cur.expect("=", f"after '{flag.text}'")
                flags[f"{flag.text}_bound"] = self.exprs.parse_expr()
            else:
                self.cur.fail("'symbolic', 'reduce', 'lower=' or 'upper='", flag)
        self.scope.section.vars[name] = E.Var(name, dtype, **flags)

    def parse_shape(self) -> tuple[E.Expr, ...]:
        self.cur.expect("[", "to open the shape")
        return tuple(self.exprs.parse_expr_list("]"))

    def parse_memory(self) -> MemoryType | None:
        tok = self.cur.peek()
        if tok.kind == "IDENT" and not tok.escaped and tok.text in MEMORY_TYPES:
            self.cur.advance()
            return MEMORY_TYPES[tok.text]
        return None

    def decl_buffer(self, tok: Token) -> None:
        name = self.cur.expect_ident("a buffer name").text
        self.cur.expect(":", "after the buffer name")
        dtype = self.exprs.parse_dtype()
        shape = self.parse_shape()
        memory = self.parse_memory() or MemoryType.HEAP
        self.scope.section.buffers[name] = Buffer(name, shape, dtype, memory)

    def decl_tensor(self, tok: Token) -> None:
        name = self.cur.expect_ident("a tensor name").text
        self.cur.expect(":", "after the tensor name")
        dtype = self.exprs.parse_dtype()
        shape = self.parse_shape()
        buf_name = f"_{name}"
        if self.cur.accept("buffer"):
            buf_name = self.cur.expect_ident("a buffer name").text
        memory = self.parse_memory()
        buffer = self.scope.section.buffers.get(buf_name)
        if buffer is None:
            # The first tensor line naming a buffer defines it (the printer puts the tensor whose
            # shape and dtype match its buffer first); later views share it.
            buffer = Buffer(buf_name, shape, dtype, memory or MemoryType.HEAP)
            self.scope.section.buffers[buf_name] = buffer
        elif memory is not None and memory is not buffer.memory_type:
            self.cur.error(f"tensor '{name}' says {memory.value} but buffer '{buf_name}' is "
                       f"{buffer.memory_type.value}", tok)
        self.scope.section.tensors[name] = Tensor(name, shape, dtype, buffer)

    def decl_block(self, tok: Token) -> None:
        index = self.parse_occurrence()
        name = self.cur.expect_ident("a block name").text
        self.cur.expect("reduce_method")
        self.cur.expect("=")
        method = self.cur.expect_ident("a reduce method")
        if method.text not in REDUCE_METHODS:
            self.cur.fail(f"one of {', '.join(REDUCE_METHODS)}", method)
        self.scope.decls.block_methods[index] = (name, REDUCE_METHODS[method.text])

    def decl_attr(self, tok: Token) -> None:
        index = self.parse_occurrence()
        block = self.cur.expect_ident("a block name").text
        key = self.cur.expect_dotted_ident("an attr name")
        self.cur.expect("=", "after the attr name")
        self.scope.decls.attrs.setdefault(index, {})[key] = (block, self.parse_decl_value())

    def parse_decl_value(self) -> Any:
        """`true`, `false`, `-3`, `0.1`, `inf`, `"text"` in a decl line."""
        negative = self.cur.accept("-")
        tok = self.cur.advance()
        sign = -1 if negative else 1
        if tok.kind == "INT":
            return sign * int(tok.text, 0) if tok.text.isdigit() or tok.text.lower().startswith("0x") \
                else self.cur.fail("an integer", tok)
        if tok.kind == "FLOAT" and not tok.text.endswith("f"):
            return sign * float(tok.text)
        if tok.kind == "IDENT" and not tok.escaped and tok.text in ("inf", "nan"):
            return sign * float(tok.text)
        if tok.kind == "IDENT" and not tok.escaped and tok.text in ("true", "false") and not negative:
            return tok.text == "true"
        if tok.kind == "STRING" and not negative:
            return tok.text
        self.cur.fail("a value (true, false, integer, float or \"string\")", tok)

    def parse_occurrence(self) -> int:
        self.cur.expect("#")
        return self.cur.expect_int("an occurrence number")

    def decl_literal(self, tok: Token) -> None:
        index = self.parse_occurrence()
        self.cur.expect(":")
        dtype = self.exprs.parse_dtype()
        self.cur.expect("=")
        value_tok = self.cur.peek()
        value = self.parse_decl_value()
        try:
            self.scope.decls.literals[index] = E.const(value, dtype)
        except (TypeError, ValueError, OverflowError) as exc:
            self.cur.error(f"invalid literal decl: {exc}", value_tok)

    def decl_call(self, tok: Token) -> None:
        index = self.parse_occurrence()
        self.cur.expect(":")
        dtype = self.exprs.parse_dtype()
        kind = self.cur.expect_ident("a call type")
        if kind.text not in CALL_TYPES:
            self.cur.fail(f"one of {', '.join(CALL_TYPES)}", kind)
        self.scope.decls.calls[index] = (dtype, CALL_TYPES[kind.text])

    def decl_reduce(self, tok: Token) -> None:
        index = self.parse_occurrence()
        self.cur.expect("axes")
        self.cur.expect("(")
        names: list[str] = []
        while not self.cur.at(")"):
            if names:
                self.cur.expect(",")
            names.append(self.cur.expect_ident("a reduce axis name").text)
        self.cur.advance()
        self.scope.decls.reduce_axes[index] = tuple(names)

    # -- functions ----------------------------------------------------------------------------
    def function_section(self, name: str, index: int, tok: Token) -> Section:
        sections = self.scope.decls.func_sections
        if not sections:
            return self.scope.decls.global_section
        if index >= len(sections):
            self.cur.error(f"function '{name}' has no '// decl func' line ({len(sections)} declared)", tok)
        section = sections[index]
        assert section.func is not None  # func sections are created by decl_func only
        if section.func.name != name:
            self.cur.error(f"function '{name}' does not match its decl 'func {section.func.name}'", tok)
        return section

    def scalar_params(self, arg_toks: list[Token]) -> dict[str, E.Var]:
        """Scalar (symbolic-dim) arguments, visible in the whole body."""
        params: dict[str, E.Var] = {}
        func = self.scope.section.func
        if func is not None:
            names = [n for io, n in func.args if io is ArgIO.SCALAR]
        else:
            names = [t.text for t in arg_toks if not t.text.startswith("_")]
        for name in names:
            declared = self.scope.section.vars.get(name)
            if declared is not None:
                params[name] = declared
            elif self.scope.decls.present:
                params[name] = E.Var(name, dt.int32)
            else:
                params[name] = E.Var(name, dt.int64, lower_bound=E.IntImm(dt.int64, 1),
                                     is_symbolic_constant=True)
        return params

    def build_function(self, name: str, arg_toks: list[Token], body: Any, start: Token) -> LoweredFunc:
        func = self.scope.section.func
        if func is None:
            return self.infer_function(name, arg_toks, body)
        if len(func.args) != len(arg_toks):
            self.cur.error(f"function '{name}' prints {len(arg_toks)} arguments but its decl has "
                       f"{len(func.args)}", start)
        args = []
        for (io, target), tok in zip(func.args, arg_toks):
            if io is ArgIO.SCALAR:
                arg = Argument(io, var=self.scope.params[target])
            else:
                arg = Argument(io, tensor=self.scope.lookup_tensor(Token("IDENT", target, tok.line, tok.col,
                                                                   tok.offset)))
            if arg.name != tok.text:
                self.cur.error(f"argument '{tok.text}' does not match its decl ({io.value} {target} "
                           f"prints as '{arg.name}')", tok)
            args.append(arg)
        temps = tuple(self.scope.lookup_buffer(Token("IDENT", n, start.line, start.col, start.offset))
                      for n in func.temps)
        cuda = CudaAxisInfo(*func.cuda_axis) if func.cuda_axis is not None else None  # type: ignore[arg-type]
        return LoweredFunc(name, tuple(args), body, temps, cuda)

    def infer_function(self, name: str, arg_toks: list[Token], body: Any) -> LoweredFunc:
        """No `func` decl: `_T` args are tensors (output when stored to), others scalars."""
        if not self.scope.decls.present:
            body = self.scope.infer.finish(body)
        args: list[Argument] = []
        arg_buffers: set[str] = set()
        for tok in arg_toks:
            if not tok.text.startswith("_"):
                args.append(Argument(ArgIO.SCALAR, var=self.scope.params[tok.text]))
                continue
            tensor = self.arg_tensor(tok)
            arg_buffers.add(tensor.buffer.name)
            stored = tensor.buffer.name in self.scope.infer.stored_buffers
            args.append(Argument(ArgIO.OUTPUT if stored else ArgIO.INPUT, tensor=tensor))
        temps: dict[str, Buffer] = {}
        for buffer in self.scope.infer.stored_buffer_objects():
            if buffer.name not in arg_buffers:
                temps.setdefault(buffer.name, buffer)
        return LoweredFunc(name, tuple(args), body, tuple(temps.values()))

    def arg_tensor(self, tok: Token) -> Tensor:
        for section in (self.scope.section, self.scope.decls.global_section):
            for tensor in section.tensors.values():
                if tensor.buffer.name == tok.text:
                    return tensor
        found = self.scope.infer.final_tensor_for_buffer(tok.text)
        if found is not None:
            return found
        if self.scope.decls.present:
            self.cur.error(f"argument '{tok.text}' names no declared tensor's buffer", tok)
        return self.scope.infer.final_tensor(tok.text[1:])


