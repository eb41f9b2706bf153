"""The parser's statement half: blocks, loops, ifs, Lets, alloc/free, stores, schedule blocks.

It shares the `Cursor` and `Scope` with the expression parser it delegates expressions to;
`TensorInference` hears of every loop/iter binding and store so header-less text gets its defaults.
"""

from __future__ import annotations

from typing import Any

from cinn_py.ir import expr as E
from cinn_py.ir import stmt as S
from cinn_py.ir.buffer import BufferRange
from cinn_py.ir.text.lexer import Token
from cinn_py.ir.text.cursor import Cursor
from cinn_py.ir.text.scope import Scope
from cinn_py.ir.text.parser_expr import DTYPE_NAMES, ExprParser


_FOR_KINDS = {"serial": S.ForType.SERIAL, "parallel": S.ForType.PARALLEL, "unroll": S.ForType.UNROLLED,
              "default": S.ForType.DEFAULT}


class StmtParser:
    """Statements (`parse_stmt`) and schedule blocks with their bindings, regions and attrs."""

    def __init__(self, cursor: Cursor, scope: Scope, exprs: ExprParser) -> None:
        self.cur = cursor
        self.scope = scope
        self.exprs = exprs

    def parse_stmt(self, allow_expr: bool = False) -> Any:
        tok = self.cur.peek()
        if self.cur.at("{"):
            return self.parse_block()
        if tok.kind == "IDENT" and not tok.escaped:
            special = self.parse_keyword_stmt(tok)
            if special is not None:
                return special
        expr = self.exprs.parse_expr()
        if self.cur.at("=") and isinstance(expr, E.Load):
            self.cur.advance()
            value = self.exprs.parse_expr()
            self.scope.infer.note_store(expr.tensor)
            return S.Store(expr.tensor, value, expr.indices)
        if self.cur.at("="):
            self.cur.error("only a tensor element 'T[...]' can be assigned", self.cur.peek())
        if allow_expr and not self.scope.decls.root_is_stmt:
            return expr
        return S.Evaluate(expr)

    def parse_keyword_stmt(self, tok: Token) -> S.Stmt | None:
        word, nxt = tok.text, self.cur.peek(1)
        if (word in _FOR_KINDS and nxt.text == "for" or word in ("vectorize", "thread_bind")
            and nxt.text == "["):
            return self.parse_for()
        if word == "if" and nxt.text == "(":
            return self.parse_if()
        if word == "ScheduleBlock" and nxt.text == "(":
            return self.parse_schedule_block()
        if word in ("alloc", "free") and nxt.text == "(":
            return self.parse_alloc_free()
        if (word in DTYPE_NAMES
            and (nxt.kind == "IDENT" or nxt.text == "<" and self.cur.peek(4).kind == "IDENT")):
            return self.parse_let()
        return None

    def parse_block(self) -> S.Block:
        self.cur.expect("{")
        self.scope.scopes.append({})
        stmts = []
        while not self.cur.at("}"):
            if self.cur.peek().kind == "EOF":
                self.cur.fail("'}' to close the block")
            stmts.append(self.parse_stmt())
            self.cur.accept(";")
        self.cur.advance()
        self.scope.scopes.pop()
        return S.Block(tuple(stmts))

    def parse_body_block(self) -> S.Block:
        """A loop/if body: a `{...}` block, or a single statement (wrapped in a Block)."""
        if self.cur.at("{"):
            return self.parse_block()
        return S.Block((self.parse_stmt(),))

    def parse_for(self) -> S.For:
        head = self.cur.advance()
        for_type, bind_offset, factor = _FOR_KINDS.get(head.text, S.ForType.SERIAL), -1, 0
        if head.text == "vectorize":
            self.cur.expect("[")
            for_type, factor = S.ForType.VECTORIZED, self.cur.expect_int("a vectorize factor")
            if factor <= 0:
                self.cur.error("vectorize factor must be positive", head)
            self.cur.expect("]")
        elif head.text == "thread_bind":
            for_type, bind_offset = self.parse_bind_axis()
        self.cur.expect("for")
        self.cur.expect("(", "after 'for'")
        var_tok = self.cur.expect_ident("a loop variable name")
        self.cur.expect(",", "after the loop variable")
        lo = self.exprs.parse_expr()
        self.cur.expect(",", "after the loop min")
        extent_tok = self.cur.peek()
        extent = self.exprs.parse_expr()
        self.cur.expect(")", "to close the loop header")
        extent_range = self.scope.infer.interval(extent)
        if extent_range is not None and extent_range[1] < 0:
            self.cur.error(f"loop '{var_tok.text}' has extent {extent_range[1]}; a loop extent must be >= 0 "
                           f"(for (var, min, extent) runs min .. min + extent - 1)", extent_tok)
        var = self.scope.binder(var_tok.text, lo.dtype, var_tok)
        self.scope.scopes.append({var.name: var})
        self.scope.infer.push_loop(var, lo, extent)
        body = self.parse_body_block()
        self.scope.infer.pop_binding(var)
        self.scope.scopes.pop()
        return S.For(var, lo, extent, body, for_type, bind_offset, factor)

    def parse_bind_axis(self) -> tuple[S.ForType, int]:
        self.cur.expect("[")
        tok = self.cur.expect_ident("'blockIdx' or 'threadIdx'")
        if tok.text not in ("blockIdx", "threadIdx"):
            self.cur.fail("'blockIdx' or 'threadIdx'", tok)
        self.cur.expect(".")
        axis = self.cur.expect_ident("'x', 'y' or 'z'")
        if axis.text not in S.BIND_AXES:
            self.cur.fail("'x', 'y' or 'z'", axis)
        self.cur.expect("]")
        kind = S.ForType.GPU_BLOCK if tok.text == "blockIdx" else S.ForType.GPU_THREAD
        return kind, S.BIND_AXES.index(axis.text)

    def parse_if(self) -> S.IfThenElse:
        self.cur.expect("if")
        self.cur.expect("(", "after 'if'")
        cond = self.exprs.parse_expr()
        self.cur.expect(")", "to close the if condition")
        self.scope.infer.guards += 1
        true_case = self.parse_body_block()
        false_case = self.parse_body_block() if self.cur.accept("else") else None
        self.scope.infer.guards -= 1
        return S.IfThenElse(cond, true_case, false_case)

    def parse_let(self) -> S.Let:
        dtype_tok = self.cur.peek()
        dtype = self.exprs.parse_dtype()
        name_tok = self.cur.expect_ident("a variable name")
        declared = self.scope.section.vars.get(name_tok.text)
        if declared is not None and declared.dtype != dtype:
            self.cur.error(f"Let '{name_tok.text}' is {dtype} but its decl says {declared.dtype}", dtype_tok)
        body = self.exprs.parse_expr() if self.cur.accept("=") else None
        symbol = declared if declared is not None else E.Var(name_tok.text, dtype)
        self.scope.scopes[-1][symbol.name] = symbol
        return S.Let(symbol, body)

    def parse_alloc_free(self) -> S.Stmt:
        word = self.cur.advance().text
        self.cur.expect("(")
        buf_tok = self.cur.expect_ident("a buffer name")
        buffer = self.scope.lookup_buffer(buf_tok)
        if word == "free":
            self.cur.expect(")", "to close free(...)")
            return S.Free(buffer)
        extents = []
        while self.cur.accept(","):
            extents.append(self.exprs.parse_expr())
        self.cur.expect(")", "to close alloc(...)")
        return S.Alloc(buffer, tuple(extents))

    # -- schedule blocks --------------------------------------------------------------------------
    def parse_schedule_block(self) -> S.ScheduleBlockRealize:
        head = self.cur.expect("ScheduleBlock")
        self.cur.expect("(")
        name_tok = self.cur.expect_ident("a block name")
        name = name_tok.text
        index = self.block_index(name_tok)
        self.cur.expect(")", "after the block name")
        self.cur.expect("{", "to open the schedule block")
        iter_vars, values = self.parse_axis_bind()
        self.scope.scopes.append({v.name: v for v in iter_vars})
        for var, value in zip(iter_vars, values):
            self.scope.infer.push_iter(var, value)
        reads = self.parse_regions("read_buffers")
        writes = self.parse_regions("write_buffers")
        attrs = self.parse_attrs(index) if self.cur.at("attrs") and self.cur.at("(", 1) else ()
        stmts = []
        while not self.cur.at("}"):
            if self.cur.peek().kind == "EOF":
                self.cur.fail("'}' to close the schedule block")
            stmts.append(self.parse_stmt())
        self.cur.advance()
        if not stmts:
            self.cur.error(f"schedule block '{name}' has no body statement", head)
        for var in iter_vars:
            self.scope.infer.pop_binding(var)
        self.scope.scopes.pop()
        body = stmts[0] if len(stmts) == 1 else S.Block(tuple(stmts))
        method = self.scope.decls.block_methods.get(index, (name, S.ReduceMethod.NONE))[1]
        block = S.ScheduleBlock(name, iter_vars, body, reads, writes, attrs, method)
        return S.ScheduleBlockRealize(values, block)

    def block_index(self, name_tok: Token) -> int:
        """Document-order number of this block (decls name blocks by it), checked by name."""
        if not self.scope.counting:
            return -1
        index, self.scope.n_blocks = self.scope.n_blocks, self.scope.n_blocks + 1
        named = [n for n, _ in self.scope.decls.attrs.get(index, {}).values()]
        if index in self.scope.decls.block_methods:
            named.append(self.scope.decls.block_methods[index][0])
        for decl_name in named:
            if decl_name != name_tok.text:
                self.cur.error(f"block #{index} is '{name_tok.text}' but its decl names '{decl_name}'",
                               name_tok)
        return index

    def parse_axis_bind(self) -> tuple[tuple[E.Var, ...], tuple[E.Expr, ...]]:
        """`i0, i1 = axis.bind(e0, e1)` when present; values parse in the enclosing scope."""
        n = 0
        while True:
            if self.cur.peek(n).kind != "IDENT":
                return (), ()
            if self.cur.at(",", n + 1):
                n += 2
                continue
            if self.cur.at("=", n + 1) and self.cur.at("axis", n + 2) and self.cur.at(".", n + 3):
                break
            return (), ()
        names = [self.cur.peek(j) for j in range(0, n + 1, 2)]
        self.cur.k += n + 2
        self.cur.expect("axis")
        self.cur.expect(".")
        bind_tok = self.cur.expect_ident("'bind'")
        if bind_tok.text != "bind":
            self.cur.fail("'bind'", bind_tok)
        self.cur.expect("(", "after 'axis.bind'")
        values = self.exprs.parse_expr_list(")")
        if len(values) != len(names):
            self.cur.error(f"axis.bind arity mismatch: {len(names)} iter vars "
                       f"({', '.join(t.text for t in names)}) but {len(values)} values", bind_tok)
        iter_vars = tuple(self.scope.binder(t.text, v.dtype, t) for t, v in zip(names, values))
        return iter_vars, tuple(values)

    def parse_regions(self, label: str) -> tuple[BufferRange, ...]:
        if not (self.cur.at(label) and self.cur.at("(", 1)):
            return ()
        self.cur.k += 2
        regions = []
        while not self.cur.at(")"):
            if regions:
                self.cur.expect(",", f"between {label} regions")
            tok = self.cur.expect_ident("a tensor name")
            tensor = self.scope.lookup_tensor(tok)
            self.cur.expect("[")
            ranges = []
            while not self.cur.at("]"):
                if ranges:
                    self.cur.expect(",", "between ranges")
                lo = self.exprs.parse_expr()
                self.cur.expect(":", "between the range min and extent")
                ranges.append((lo, self.exprs.parse_expr()))
            self.cur.advance()
            regions.append(BufferRange(tensor, tuple(ranges)))
        self.cur.advance()
        return tuple(regions)

    def parse_attrs(self, block: int) -> tuple[tuple[str, Any], ...]:
        from cinn_py.ir.text.defaults import decode_attr_value

        self.cur.k += 2
        items: dict[str, Any] = {}
        while not self.cur.at(")"):
            if items:
                self.cur.expect(",", "between attrs")
            key = self.cur.expect_dotted_ident("an attr name")
            colon = self.cur.expect(":", "after the attr name")
            end = self.raw_value_end(colon.offset + 1)
            raw = self.cur.text[colon.offset + 1:end].strip()
            if not raw:
                self.cur.fail("an attr value")
            while self.cur.peek().offset < end and self.cur.peek().kind != "EOF":
                self.cur.k += 1
            override = self.scope.decls.attrs.get(block, {}).get(key)
            items[key] = decode_attr_value(raw) if override is None else override[1]
        self.cur.advance()
        return tuple(sorted(items.items()))

    def raw_value_end(self, start: int) -> int:
        ends = [p for p in (self.cur.text.find(",", start), self.cur.text.find(")", start)) if p >= 0]
        return min(ends) if ends else len(self.cur.text)
