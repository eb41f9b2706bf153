"""Outlining of `parallel` loops (CINN: `__parallel_lambda` + `cinn_backend_parallel_launch`).

    parallel for (i, lo, n) { body }
becomes, in the enclosing function,
    closure = { lo, n, status*, captured vars..., captured buffer pointers... }
    cinn_py_parallel_launch(@fn__parallel_k, &closure, n)
    if (*status != 0) goto cleanup
and two new functions
    void fn__parallel_k(i64 task_id, i64 num_tasks, ptr closure) {   // unpacks the closure
      fn__parallel_k_body(task_id, num_tasks, closure->lo, closure->n, ..., noalias buffers...)
    }
    internal alwaysinline void fn__parallel_k_body(...) {
      chunk = ceil(n / num_tasks); for (t = task_id*chunk; t < min(n, t0 + chunk); ++t) body[i := lo + t]
    }
so each task gets one contiguous range of iterations. The launcher is the native thread pool of
`codegen.llvm.native_pool`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from cinn_py.ir import Expr, For, Load, Stmt, Store, Var, int64, walk
from codegen.llvm import types as T
from codegen.llvm.analysis import buffers_used, vars_used
from cinn_py.passes.x86_privatize import task_private_buffers
from codegen.llvm.names import LAUNCH_SYMBOL
from codegen.llvm.stmts import STATUS_OK, FunctionEmitter

if TYPE_CHECKING:
    from codegen.llvm.module import CodegenUnit

TASK_TYPE = ir.FunctionType(T.VOID, [T.I64, T.I64, T.PTR])


def emit_parallel(parent: FunctionEmitter, loop: For) -> None:
    """Outline `loop` and launch it from `parent` (see module docstring)."""
    unit = parent.unit
    b = parent.b
    lo = T.cast(b, parent._lane(parent.expr(loop.min), 0), loop.min.dtype, int64)
    extent = T.cast(b, parent._lane(parent.expr(loop.extent), 0), loop.extent.dtype, int64)
    captured_vars = sorted((v for v in _free_vars(loop.body) if v in parent.env and v != loop.loop_var),
                           key=lambda v: (v.name, str(v.dtype)))
    captured_bufs = [name for name in buffers_used(loop.body) if name in parent.buffers]
    values = [lo, extent, parent.status] + [parent.env[v] for v in captured_vars] + \
        [parent.buffers[n] for n in captured_bufs]
    struct_t = ir.LiteralStructType([v.type for v in values])
    closure = T.alloca(parent.entry_b, struct_t, "closure")
    for k, value in enumerate(values):
        b.store(value, b.gep(closure, [ir.Constant(T.I32, 0), ir.Constant(T.I32, k)], source_etype=struct_t))

    task = ir.Function(unit.module, TASK_TYPE, unit.fresh_name("__parallel"))
    task.attributes.add("nounwind")
    body_fn = _body_function(unit, task, [v.type for v in values], len(captured_bufs))
    _emit_trampoline(task, body_fn, struct_t)
    _emit_task(unit, body_fn, loop, captured_vars, captured_bufs, parent.ranges)

    launch = unit.runtime_fn(LAUNCH_SYMBOL, T.VOID, [T.PTR, T.PTR, T.I64])
    b.call(launch, [task, closure, extent])
    failed = b.icmp_signed("!=", b.load(parent.status, typ=T.I32), ir.Constant(T.I32, STATUS_OK))
    with b.if_then(failed, likely=False):
        b.branch(parent.cleanup)


def _free_vars(body: Stmt) -> set[Var]:
    """Vars the task body needs: those read in it, plus symbolic dims that occur only in the
    shapes of the tensors and buffers it accesses (row-major strides of `A[k, i]` with
    A: [2, S0] use S0, and so do the sizes of task-private buffers)."""
    found = vars_used(body)
    for node in walk(body):
        if isinstance(node, (Load, Store)):
            for dim in (*node.tensor.shape, *node.tensor.buffer.shape):
                found |= vars_used(dim)
    for buf in buffers_used(body).values():
        for dim in buf.shape:
            found |= vars_used(dim)
    return found


def _body_function(unit: CodegenUnit, task: ir.Function, field_types: list[ir.Type],
                   n_bufs: int) -> ir.Function:
    """`<task>_body(task_id, num_tasks, lo, extent, status, vars..., bufs...)`: the task's work,
    with every buffer pointer a `noalias` parameter. Buffers are distinct (arguments are checked
    not to alias, temporaries are separate allocations), but pointers loaded from the closure
    carry no such fact; as parameters of an always-inlined function they do (the inliner turns
    `noalias` into alias scopes), so LLVM may keep values in registers across stores, e.g. a
    column sum's partial-sum row across unrolled row updates."""
    fn = ir.Function(unit.module, ir.FunctionType(T.VOID, [T.I64, T.I64] + field_types), f"{task.name}_body")
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    fn.attributes.add("alwaysinline")
    for param in fn.args[len(fn.args) - n_bufs:]:
        param.add_attribute("noalias")
    return fn


def _emit_trampoline(task: ir.Function, body_fn: ir.Function, struct_t: ir.LiteralStructType) -> None:
    """The launched task: unpack the closure and call the body."""
    b = ir.IRBuilder(task.append_basic_block("entry"))
    task_id, num_tasks, closure = task.args
    task_id.name, num_tasks.name, closure.name = "task_id", "num_tasks", "closure"
    fields = [b.load(b.gep(closure, [ir.Constant(T.I32, 0), ir.Constant(T.I32, k)], source_etype=struct_t),
                     typ=struct_t.elements[k]) for k in range(len(struct_t.elements))]
    b.call(body_fn, [task_id, num_tasks] + fields)
    b.ret_void()


def _emit_task(unit: CodegenUnit, fn: ir.Function, loop: For, captured_vars: list[Var],
               captured_bufs: list[str], ranges: dict[Var, tuple[Expr, Expr]]) -> None:
    em = FunctionEmitter(unit, fn)
    em.in_parallel = True
    em.ranges = dict(ranges)  # the enclosing loops and the parallel loop: checked builds prove with them
    task_id, num_tasks, lo, extent, status = fn.args[:5]
    for param, name in zip(fn.args[:5], ("task_id", "num_tasks", "lo", "extent", "status")):
        param.name = name
    b = em.b
    em.status = status
    for var, param in zip(captured_vars, fn.args[5:]):
        em.env[var] = param
    for name, param in zip(captured_bufs, fn.args[5 + len(captured_vars):]):
        em.buffers[name] = param
    # each task owns its copies, shaped as the body's accesses spell them (the x86 target pass
    # `privatize_x86_buffers` shrank them to what one task reaches)
    em.allocate_temps(task_private_buffers(loop.body, unit.arg_buffers))

    one = ir.Constant(T.I64, 1)
    chunk = b.sdiv(b.sub(b.add(extent, num_tasks), one), num_tasks)
    begin = b.mul(task_id, chunk)
    end = b.add(begin, chunk)
    end = b.select(b.icmp_signed("<", end, extent), end, extent)
    var = loop.loop_var

    def bind(counter: ir.Value) -> ir.Value:
        return T.cast(b, b.add(lo, counter), int64, var.dtype)

    em.counted_loop(var, begin, end, 1, lambda: em.stmt(loop.body), bind=bind)
    em.finish(returns_status=False)
