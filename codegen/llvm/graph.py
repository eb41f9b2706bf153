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
address arithmetic and calls, which the O3 pipeline would not improve. Its IR is written as text
(`entry_ir`). It is never cached on disk (the kernels' addresses are this process's).
"""

from __future__ import annotations

import ctypes
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import llvmlite.binding as llvm

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
    name = f"cinn_py_graph{next(_SERIAL)}"
    addresses: dict[str, int] = {}
    signatures: list[tuple[str, list[str]]] = []
    for k, call in enumerate(plan.calls):
        kernel = kernels[call.group]
        callee = f"{name}_call{k}"
        params = [str(T.PTR if a.tensor is not None else T.scalar_reg_type(a.var.dtype))  # type: ignore[union-attr]
                  for a in kernel.func.args]
        signatures.append((callee, params))
        addresses[callee] = kernel.address
    text = entry_ir(name, plan, signatures)
    adopt_loaded_openmp(parallel_runtime())  # one pool with torch's OpenMP threads when torch is loaded
    with LOCK:
        for callee, address in addresses.items():
            llvm.add_symbol(callee, address)
        parsed = llvm.parse_assembly(text)
        parsed.verify()
        # O0 code generation (fast instruction selection): the entry is straight-line loads and
        # calls, and O3's took 0.23 s of CPU for BERT's 281 calls, O0's 0.08 s
        engine = llvm.create_mcjit_compiler(parsed, new_target_machine(opt=0))
        engine.finalize_object()
        function = ENTRY_TYPE(engine.get_function_address(name))
    return GraphEntry(function, parallel_runtime().num_threads_cell, tuple(kernels), plan, text, engine)


def entry_ir(name: str, plan: GraphPlan, callees: Sequence[tuple[str, Sequence[str]]]) -> str:
    """The entry module's LLVM IR text: `callees[k]` = (symbol, parameter types) of call k.
    Written as text, not with llvmlite's IR builder: a training graph makes hundreds of calls of
    ~10 arguments each, and building and printing them as llvmlite objects took ~1 s."""
    lines = [f'target triple = "{llvm.get_process_triple()}"', ""]
    lines += [f"declare i32 @{callee}({', '.join(params)}) nounwind" for callee, params in callees]
    lines += ["", f"define i64 @{name}(ptr %arrays, ptr %arena, ptr %offsets, ptr %symbols) nounwind {{",
              "entry:"]
    for k, (call, (callee, params)) in enumerate(zip(plan.calls, callees)):
        args = [_argument(lines, f"c{k}.{p}", plan, call, p, typ) for p, typ in enumerate(params)]
        lines += [f"  %status{k} = call i32 @{callee}({', '.join(args)})",
                  f"  %failed{k} = icmp ne i32 %status{k}, 0",
                  f"  br i1 %failed{k}, label %fail{k}, label %ok{k}, !prof !0",
                  f"fail{k}:",
                  f"  %wide{k} = zext i32 %status{k} to i64",
                  f"  %code{k} = or i64 {(k + 1) << 32}, %wide{k}",
                  f"  ret i64 %code{k}",
                  f"ok{k}:"]
    lines += ["  ret i64 0", "}", "", '!0 = !{!"branch_weights", i32 1, i32 2000}', ""]
    return "\n".join(lines)


def _argument(lines: list[str], reg: str, plan: GraphPlan, call: PlannedCall, position: int, typ: str) -> str:
    """Emit the loads of argument `position` of `call` into `lines`; returns `typ value`."""
    slot = call.args[position]
    if slot.kind in ("input", "output"):
        index = slot.index if slot.kind == "input" else plan.n_inputs + slot.index
        lines += [f"  %{reg}.at = getelementptr ptr, ptr %arrays, i64 {index}",
                  f"  %{reg} = load ptr, ptr %{reg}.at"]
    elif slot.kind == "temp":
        lines += [f"  %{reg}.at = getelementptr i64, ptr %offsets, i64 {slot.index}",
                  f"  %{reg}.offset = load i64, ptr %{reg}.at",
                  f"  %{reg} = getelementptr i8, ptr %arena, i64 %{reg}.offset"]
    else:
        raw = f"%{reg}" if typ == "i64" else f"%{reg}.raw"
        lines += [f"  {raw}.at = getelementptr i64, ptr %symbols, i64 {slot.index}",
                  f"  {raw} = load i64, ptr {raw}.at"]
        if typ != "i64":
            lines.append(f"  %{reg} = trunc i64 {raw} to {typ}")
    return f"{typ} %{reg}"


__all__ = ["ENTRY_TYPE", "GraphEntry", "entry_ir", "link_program"]
