"""The native graph runtime: one entry function that runs a compiled program's kernels in order.

    int64_t cinn_py_graph<N>(void** arrays, char* arena, const int64_t* offsets, const int64_t* symbols);

`arrays` holds the program's input pointers, then its output pointers; `arena` the temporaries,
temporary j at `arena + offsets[j]`; `symbols` the values of the program's symbolic dims in
`GraphPlan.symbols` order (`cinn_py.runtime.graph_plan`). The function calls each planned kernel
with the pointers and values its `PlannedCall` names and returns 0, or `(k + 1) << 32 | status`
when call k returned a non-zero status (its kernel's error: an allocation failure, a failed bounds
check), skipping the calls after it.

The kernels live in their own MCJIT engines (compiled and cached one by one); the entry module
declares each as an external function under a name unique to this process, registered with the
address of the loaded kernel, and is compiled here without optimisation passes: it is loads,
address arithmetic and calls, which the O3 pipeline would not improve, and it costs ~1 ms to build.
It is never cached on disk (the kernels' addresses are this process's).
"""

from __future__ import annotations

import ctypes
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import llvmlite.binding as llvm
from llvmlite import ir

from cinn_py.runtime.graph_plan import GraphPlan, PlannedCall
from codegen.llvm import types as T
from codegen.llvm.jit import LOCK, new_target_machine, parallel_runtime
from codegen.llvm.kernel import Kernel
from codegen.llvm.openmp import adopt_loaded_openmp

_SERIAL = itertools.count()
ENTRY_TYPE = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                              ctypes.c_void_p)


@dataclass
class GraphEntry:
    """A loaded entry function: `function(arrays, arena, offsets, symbols) -> status`, the pool's
    thread-count cell (set before a call) and the kernels, whose engines it keeps alive."""

    function: Any
    threads_cell: ctypes.c_int64
    kernels: tuple[Kernel, ...]
    plan: GraphPlan
    llvm_ir: str
    engine: Any

    def raise_status(self, status: int, symbol_values: Sequence[int]) -> None:
        """Raise the error of a non-zero entry status (the failing kernel's own error) of a call
        with `symbol_values` (in `plan.symbols` order)."""
        call = self.plan.calls[(status >> 32) - 1]
        self.kernels[call.group].raise_status(status & 0xFFFFFFFF,
                                              dict(zip(self.plan.symbols, symbol_values)))


def link_program(plan: GraphPlan, kernels: Sequence[Kernel]) -> GraphEntry | None:
    """The entry function of `plan` over the loaded `kernels` (one per group), or None when a
    kernel has its own thread count (the entry sets one count for all)."""
    if any(k.num_threads is not None for k in kernels):
        return None
    serial = next(_SERIAL)
    module = ir.Module(name=f"cinn_py_graph{serial}")
    module.triple = llvm.get_process_triple()
    entry = ir.Function(module, ir.FunctionType(T.I64, [T.PTR, T.PTR, T.PTR, T.PTR]),
                        f"cinn_py_graph{serial}")
    entry.attributes.add("nounwind")
    addresses: dict[str, int] = {}
    declared = []
    for k, call in enumerate(plan.calls):
        kernel = kernels[call.group]
        name = f"cinn_py_graph{serial}_call{k}"
        params = [T.PTR if a.tensor is not None else T.scalar_reg_type(a.var.dtype)  # type: ignore[union-attr]
                  for a in kernel.func.args]
        declared.append(ir.Function(module, ir.FunctionType(T.I32, params), name))
        addresses[name] = kernel.address
    _emit_body(entry, plan, declared)
    text = str(module)
    adopt_loaded_openmp(parallel_runtime())  # one pool with torch's OpenMP threads when torch is loaded
    with LOCK:
        for name, address in addresses.items():
            llvm.add_symbol(name, address)
        parsed = llvm.parse_assembly(text)
        parsed.verify()
        engine = llvm.create_mcjit_compiler(parsed, new_target_machine())
        engine.finalize_object()
        function = ENTRY_TYPE(engine.get_function_address(entry.name))
    return GraphEntry(function, parallel_runtime().num_threads_cell, tuple(kernels), plan, text, engine)


def _emit_body(entry: ir.Function, plan: GraphPlan, callees: Sequence[ir.Function]) -> None:
    arrays, arena, offsets, symbols = entry.args
    for param, name in zip(entry.args, ("arrays", "arena", "offsets", "symbols")):
        param.name = name
    b = ir.IRBuilder(entry.append_basic_block("entry"))

    def element(base: ir.Value, index: int, typ: ir.Type) -> ir.Value:
        return b.load(b.gep(base, [ir.Constant(T.I64, index)], source_etype=typ), typ=typ)

    def value(call: PlannedCall, position: int, typ: ir.Type) -> ir.Value:
        slot = call.args[position]
        if slot.kind == "input":
            return element(arrays, slot.index, T.PTR)
        if slot.kind == "output":
            return element(arrays, plan.n_inputs + slot.index, T.PTR)
        if slot.kind == "temp":
            return b.gep(arena, [element(offsets, slot.index, T.I64)], source_etype=ir.IntType(8))
        raw = element(symbols, slot.index, T.I64)
        return raw if typ == T.I64 else b.trunc(raw, typ)

    for k, (call, callee) in enumerate(zip(plan.calls, callees)):
        args = [value(call, position, typ) for position, typ in enumerate(callee.function_type.args)]
        status = b.call(callee, args)
        failed = b.icmp_signed("!=", status, ir.Constant(T.I32, 0))
        with b.if_then(failed, likely=False):
            code = b.or_(ir.Constant(T.I64, (k + 1) << 32), b.zext(status, T.I64))
            b.ret(code)
    b.ret(ir.Constant(T.I64, 0))


__all__ = ["ENTRY_TYPE", "GraphEntry", "link_program"]
