"""Whole-tree well-formedness checks of a LoweredFunc (run between passes and in tests).

`verify(func)` raises `VerifyError` naming the rule, expected vs actual, with the function printed
and the offending node marked. Rules:

- `unbound-var`: every Var used is bound by an enclosing loop, block iter var or earlier `Let`,
  or is a scalar argument (symbolic dim); `threadIdx.*`/`blockIdx.*` are builtins.
- `iter-arity`: a block has as many iter values as iter vars.
- `duplicate-block`: block names are unique.
- `access-rank`: loads and stores index every dimension of their tensor.
- `index-dtype`: indices are integers.
- `loop-dtype`: a loop's min and extent have its loop var's dtype.
- `loop-extent`: a constant loop extent is >= 0 (a negative one runs nothing: its outputs would be
  left uninitialised without any error).
- `loop-body`: `For.body` is a `Block`.
- `bind-info`: bound loops start at 0, have a valid axis and are not nested under a loop bound to
  the same axis; other loops carry no bind offset; vectorized loops a positive factor.
- `root-block`: the body is `{ ScheduleBlock(root) }` with no iter vars (lowering's shape; pass
  `require_root=False` after passes that remove the root, such as GPU bind lowering).
- `unknown-buffer`: a tensor's buffer is an argument, a temp buffer, allocated, or written in the
  function (schedule-created temporaries, `__reduce_init` tensors sharing their buffer), and one
  buffer name always means one buffer (dtype and rank).
"""

from __future__ import annotations

from typing import Any, NoReturn

from cinn_py.diagnostics import VerifyError
from cinn_py.ir import expr as E
from cinn_py.ir import stmt as S
from cinn_py.ir.buffer import Buffer, BufferRange, Tensor
from cinn_py.ir.func import LoweredFunc
from cinn_py.ir.text.printer import print_ir_marked
from cinn_py.ir.visitor import walk

BUILTIN_PREFIXES = ("threadIdx.", "blockIdx.")

__all__ = ["VerifyError", "verify"]


def verify(func: LoweredFunc, require_root: bool = True) -> None:
    """Raise `VerifyError` on the first malformed node of `func` (see the module docstring)."""
    if not isinstance(func, LoweredFunc):
        raise TypeError(f"verify: expected a LoweredFunc, got {type(func).__name__}")
    checker = _Checker(func)
    if require_root:
        checker.check_root()
    checker.check_buffers()
    checker.stmt(func.body, frozenset(func.scalar_args), ())


class _Checker:
    def __init__(self, func: LoweredFunc) -> None:
        self.func = func
        self.block_names: dict[str, S.ScheduleBlock] = {}

    def fail(self, rule: str, message: str, node: Any) -> NoReturn:
        raise VerifyError(f"verifier [{rule}] in function '{self.func.name}': {message}",
                          print_ir_marked(self.func, node))

    # -- whole-function rules --------------------------------------------------------------------
    def check_root(self) -> None:
        body = self.func.body
        root = body.stmts[0] if isinstance(body, S.Block) and len(body.stmts) == 1 else None
        if not isinstance(root, S.ScheduleBlockRealize):
            self.fail("root-block", "expected the body to be { ScheduleBlock(root) }, got "
                      f"{type(body).__name__} with {len(getattr(body, 'stmts', ()))} statement(s)", body)
        if root.name != "root" or root.iter_values or root.schedule_block.iter_vars:
            self.fail("root-block", f"expected a root block named 'root' without iter vars, got "
                      f"'{root.name}' with {len(root.schedule_block.iter_vars)} iter var(s)", root)

    def check_buffers(self) -> None:
        known: dict[str, Buffer] = {}
        for t in (a.tensor for a in self.func.args if a.tensor is not None):
            known[t.buffer.name] = t.buffer
        for b in self.func.temp_bufs:
            known.setdefault(b.name, b)
        for node in walk(self.func.body):
            if isinstance(node, S.Alloc):
                known.setdefault(node.buffer.name, node.buffer)
            elif isinstance(node, S.Store):
                known.setdefault(node.tensor.buffer.name, node.tensor.buffer)
        for node in walk(self.func.body):
            tensor = node.tensor if isinstance(node, (E.Load, S.Store)) else None
            if tensor is None:
                continue
            buffer = known.get(tensor.buffer.name)
            if buffer is None:
                self.fail("unknown-buffer",
                          f"tensor '{tensor.name}' reads buffer '{tensor.buffer.name}', which "
                          "is neither an argument, a temp buffer, allocated, nor written here", node)
            elif buffer.dtype != tensor.buffer.dtype or len(buffer.shape) != len(tensor.buffer.shape):
                self.fail("unknown-buffer",
                          f"buffer '{buffer.name}' is {buffer.dtype} rank {len(buffer.shape)} "
                          f"but tensor '{tensor.name}' uses it as {tensor.buffer.dtype} rank "
                          f"{len(tensor.buffer.shape)}", node)

    # -- statements --------------------------------------------------------------------------------
    def stmt(self, node: S.Stmt, scope: frozenset[E.Var], bound_axes: tuple[str, ...]) -> None:
        method = getattr(self, "stmt_" + type(node).__name__, None)
        if method is not None:
            method(node, scope, bound_axes)
        else:
            self.exprs_of(node, scope)

    def stmt_Block(self, node: S.Block, scope: frozenset[E.Var], axes: tuple[str, ...]) -> None:
        for child in node.stmts:
            self.stmt(child, scope, axes)
            if isinstance(child, S.Let):
                scope = scope | {child.symbol}

    def stmt_For(self, node: S.For, scope: frozenset[E.Var], axes: tuple[str, ...]) -> None:
        var = node.loop_var
        self.expr(node.min, scope, node)
        self.expr(node.extent, scope, node)
        for what, value in (("min", node.min), ("extent", node.extent)):
            if value.dtype != var.dtype:
                self.fail("loop-dtype", f"loop '{var.name}' has a {var.dtype} var but its {what} is "
                          f"{value.dtype}", node)
        if isinstance(node.extent, (E.IntImm, E.UIntImm)) and node.extent.value < 0:
            self.fail("loop-extent", f"loop '{var.name}' has extent {node.extent.value}; expected >= 0", node)
        if not isinstance(node.body, S.Block):
            self.fail("loop-body",
                      f"loop '{var.name}' body must be a Block, got {type(node.body).__name__}", node)
        axis = self.check_bind(node, axes)
        self.stmt(node.body, scope | {var}, axes + ((axis,) if axis else ()))

    def check_bind(self, node: S.For, axes: tuple[str, ...]) -> str | None:
        axis = node.bind_axis
        bound = node.for_type in (S.ForType.GPU_THREAD, S.ForType.GPU_BLOCK)
        if bound and node.bind_offset not in (0, 1, 2):
            self.fail("bind-info", f"loop '{node.loop_var.name}' is bound but has bind offset "
                      f"{node.bind_offset}; expected 0, 1 or 2", node)
        if not bound and node.bind_offset != -1:
            self.fail("bind-info", f"{node.for_type.value} loop '{node.loop_var.name}' has bind offset "
                      f"{node.bind_offset}; expected -1 (only bound loops have one)", node)
        if node.for_type is S.ForType.VECTORIZED and node.vectorize_factor <= 0:
            self.fail("bind-info",
                      f"vectorized loop '{node.loop_var.name}' has factor {node.vectorize_factor}; "
                      "expected a positive factor", node)
        if not bound:
            return None
        if not (isinstance(node.min, (E.IntImm,)) and node.min.value == 0):
            self.fail("bind-info", f"loop '{node.loop_var.name}' bound to {axis} must start at 0, "
                      f"starts at {node.min}", node)
        if axis in axes:
            self.fail("bind-info", f"loop '{node.loop_var.name}' is bound to {axis} inside another loop "
                      "bound to the same axis", node)
        return axis

    def stmt_IfThenElse(self, node: S.IfThenElse, scope: frozenset[E.Var], axes: tuple[str, ...]) -> None:
        self.expr(node.condition, scope, node)
        self.stmt(node.true_case, scope, axes)
        if node.false_case is not None:
            self.stmt(node.false_case, scope, axes)

    def stmt_ScheduleBlockRealize(self, node: S.ScheduleBlockRealize, scope: frozenset[E.Var],
                                  axes: tuple[str, ...]) -> None:
        block = node.schedule_block
        if len(block.iter_vars) != len(node.iter_values):
            self.fail("iter-arity", f"block '{block.name}' has {len(block.iter_vars)} iter vars but "
                      f"{len(node.iter_values)} iter values", node)
        if block.name in self.block_names:
            self.fail("duplicate-block", f"block name '{block.name}' is used twice", node)
        self.block_names[block.name] = block
        for value in node.iter_values:
            self.expr(value, scope, node)
            self.index_dtype(value, node, f"iter value of block '{block.name}'")
        inner = scope | set(block.iter_vars)
        for region in block.read_buffers + block.write_buffers:
            self.region(region, inner, node)
        self.stmt(block.body, inner, axes)

    def stmt_ScheduleBlock(self, node: S.ScheduleBlock, scope: frozenset[E.Var],
                           axes: tuple[str, ...]) -> None:
        self.fail("root-block", f"ScheduleBlock '{node.name}' outside a ScheduleBlockRealize", node)

    def stmt_Let(self, node: S.Let, scope: frozenset[E.Var], axes: tuple[str, ...]) -> None:
        if node.body is not None:
            self.expr(node.body, scope, node)

    def region(self, region: BufferRange, scope: frozenset[E.Var], owner: S.Stmt) -> None:
        for lo, extent in region.ranges:
            self.expr(lo, scope, owner)
            self.expr(extent, scope, owner)

    # -- expressions -------------------------------------------------------------------------------
    def exprs_of(self, node: S.Stmt, scope: frozenset[E.Var]) -> None:
        if isinstance(node, S.Store):
            self.access(node.tensor, node.indices, node)
            for index in node.indices:
                self.expr(index, scope, node)
            self.expr(node.value, scope, node)
            return
        for value in _direct_exprs(node):
            self.expr(value, scope, node)

    def expr(self, value: E.Expr, scope: frozenset[E.Var], owner: S.Stmt) -> None:
        for node in walk(value):
            if isinstance(node, E.Var) and node not in scope and not node.name.startswith(BUILTIN_PREFIXES):
                if isinstance(node, E.Var) and self._reduce_bound(value, node):
                    continue
                kind = "symbolic dim" if node.is_symbolic_constant else "var"
                self.fail("unbound-var", f"{kind} '{node.name}' is used but not bound by an enclosing loop, "
                          "block iter var, Let or function argument", owner)
            elif isinstance(node, E.Load):
                self.access(node.tensor, node.indices, owner)

    @staticmethod
    def _reduce_bound(value: E.Expr, var: E.Var) -> bool:
        return any(isinstance(n, E.Reduce) and var in n.reduce_axis for n in walk(value))

    def access(self, tensor: Tensor, indices: tuple[E.Expr, ...], owner: S.Stmt) -> None:
        if len(indices) != tensor.ndim:
            self.fail("access-rank", f"tensor '{tensor.name}' has rank {tensor.ndim} but is indexed with "
                      f"{len(indices)} indices", owner)
        for index in indices:
            self.index_dtype(index, owner, f"index of '{tensor.name}'")

    def index_dtype(self, index: E.Expr, owner: S.Stmt, what: str) -> None:
        if not index.dtype.is_integral:
            self.fail("index-dtype", f"{what} must be an integer, got {index.dtype} ({index})", owner)


def _direct_exprs(node: S.Stmt) -> list[E.Expr]:
    if isinstance(node, S.Evaluate):
        return [node.value]
    if isinstance(node, S.Alloc):
        return list(node.extents)
    return []
