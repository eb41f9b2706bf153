"""The x86 backend object of the backend table (`cinn_py.backend.BACKENDS["x86"]`)."""

from __future__ import annotations

from typing import Any

from cinn_py.backend import DEFAULT_OPTIONS, Backend
from cinn_py.backend import GeneratedCode as AnyCode
from cinn_py.diagnostics import CompileError
from cinn_py.options import BuildOptions
from cinn_py.ir import LoweredFunc
from cinn_py.target import Target
from codegen.llvm import GeneratedCode, build_lowered, generate_lowered
from cinn_py.runtime.graph_plan import GraphPlan
from codegen.llvm.graph import GraphEntry, link_program
from codegen.llvm.jit import LoadedObject
from codegen.llvm.kernel import Kernel
from codegen.llvm.names import symbol_name


def _check_target(target: Target) -> None:
    """The JIT compiles for the CPU it runs on; a Target for another CPU cannot be loaded here."""
    if target.kind != "x86":
        raise CompileError(f"x86 backend: got a {target} target")
    host = Target.parse("x86")
    if target.arch != host.arch or not target.features <= host.features:
        missing = sorted(target.features - host.features)[:8]
        raise CompileError(f"x86 backend: compiles for the host CPU ({host.arch}) only; target {target} "
                           f"differs (features the host lacks: {missing})")


class X86Backend:
    """LLVM IR through llvmlite, O3 for the host CPU, MCJIT (see `codegen.llvm`). It prints and
    loads what the x86 target passes produced (the pipeline's `target_passes` step)."""

    name = "x86"

    def generate(self, func: LoweredFunc, target: Target,
                 options: BuildOptions = DEFAULT_OPTIONS) -> GeneratedCode:
        """LLVM IR and assembly of `func` after the x86 target passes. Generated text is unchecked
        unless `options.checked` asks (the pipeline resolves the process default for it)."""
        _check_target(target)
        return generate_lowered(func, options)

    def load(self, code: AnyCode, options: BuildOptions = DEFAULT_OPTIONS) -> Kernel:
        """The MCJIT-loaded Kernel of code `generate` returned."""
        if not isinstance(code, GeneratedCode) or not code.object_code:
            raise CompileError("x86 backend: load needs code from X86Backend.generate (with its object "
                               f"code), got {type(code).__name__}")
        loaded = LoadedObject(code.object_code)
        return Kernel(code.func, loaded, symbol_name(code.func.name), code.llvm_ir, code.asm, code.fast_math,
                      options.num_threads, checks=code.checks)

    def build(self, func: LoweredFunc, target: Target, options: BuildOptions = DEFAULT_OPTIONS) -> Kernel:
        """`load(generate(func))` through the memory and disk compile caches."""
        _check_target(target)
        return build_lowered(func, options)

    def link_program(self, plan: GraphPlan, kernels: Any) -> GraphEntry | None:
        """The native entry function running a program's kernels in one call (`codegen.llvm.graph`)."""
        return link_program(plan, kernels)


BACKEND: Backend = X86Backend()  # annotated: pyright checks the class against the protocol
