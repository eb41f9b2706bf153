"""Outlining of `parallel` loops (CINN: `__parallel_lambda` + `cinn_backend_parallel_launch`).

    parallel for (i, lo, n) { body }
becomes, in the enclosing function,
    closure = { lo, n, status*, captured vars..., captured buffer pointers... }
    cinn_py_parallel_launch(@fn__parallel_k, &closure, n)
    if (*status != 0) goto cleanup
and a new function
    void fn__parallel_k(i64 task_id, i64 num_tasks, ptr closure) {
      chunk = ceil(n / num_tasks); for (t = task_id*chunk; t < min(n, t0 + chunk); ++t) body[i := lo + t]
    }
The launcher (`codegen.llvm.jit`) runs the tasks on `cinn_py.runtime.threadpool`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from cinn_py.ir import dtype as dt
from cinn_py.ir import expr as E
from cinn_py.ir import stmt as S
from codegen.llvm import types as T
from codegen.llvm.analysis import buffers_used, vars_used
from codegen.llvm.privatize import privatize_local_buffers
from codegen.llvm.stmts import LAUNCH_SYMBOL, STATUS_OK, FunctionEmitter, private_buffers

if TYPE_CHECKING:
    from codegen.llvm.module import CodegenUnit

TASK_TYPE = ir.FunctionType(T.VOID, [T.I64, T.I64, T.PTR])


def emit_parallel(parent: FunctionEmitter, loop: S.For) -> None:
    """Outline `loop` and launch it from `parent` (see module docstring)."""
    unit = parent.unit
    b = parent.b
    lo = T.cast(b, parent._lane(parent.expr(loop.min), 0), loop.min.dtype, dt.int64)
    extent = T.cast(b, parent._lane(parent.expr(loop.extent), 0), loop.extent.dtype, dt.int64)
    captured_vars = sorted((v for v in vars_used(loop.body) if v in parent.env and v != loop.loop_var),
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
    _emit_task(unit, task, loop, struct_t, captured_vars, captured_bufs)

    launch = unit.runtime_fn(LAUNCH_SYMBOL, T.VOID, [T.PTR, T.PTR, T.I64])
    b.call(launch, [task, closure, extent])
    failed = b.icmp_signed("!=", b.load(parent.status, typ=T.I32), ir.Constant(T.I32, STATUS_OK))
    with b.if_then(failed, likely=False):
        b.branch(parent.cleanup)


def _emit_task(unit: CodegenUnit, task: ir.Function, loop: S.For, struct_t: ir.LiteralStructType,
               captured_vars: list[E.Var], captured_bufs: list[str]) -> None:
    em = FunctionEmitter(unit, task)
    em.in_parallel = True
    task_id, num_tasks, closure = task.args
    task_id.name, num_tasks.name, closure.name = "task_id", "num_tasks", "closure"
    b = em.b

    def field(k: int) -> ir.Value:
        ptr = b.gep(closure, [ir.Constant(T.I32, 0), ir.Constant(T.I32, k)], source_etype=struct_t)
        return b.load(ptr, typ=struct_t.elements[k])

    lo, extent, status = field(0), field(1), field(2)
    em.status = status
    for k, var in enumerate(captured_vars):
        em.env[var] = field(3 + k)
    for k, name in enumerate(captured_bufs):
        em.buffers[name] = field(3 + len(captured_vars) + k)
    body, private = privatize_local_buffers(loop, private_buffers(loop.body, unit.temps))
    em.allocate_temps(private)

    one = ir.Constant(T.I64, 1)
    chunk = b.sdiv(b.sub(b.add(extent, num_tasks), one), num_tasks)
    begin = b.mul(task_id, chunk)
    end = b.add(begin, chunk)
    end = b.select(b.icmp_signed("<", end, extent), end, extent)
    var = loop.loop_var

    def bind(counter: ir.Value) -> ir.Value:
        return T.cast(b, b.add(lo, counter), dt.int64, var.dtype)

    em.counted_loop(var, begin, end, 1, lambda: em.stmt(body), bind=bind)
    em.finish(returns_status=False)
