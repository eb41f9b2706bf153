"""The x86 backend: LoweredFunc -> LLVM IR (llvmlite.ir) -> O3 for the host CPU -> MCJIT.

    kernel = build_x86(func, fast_math=False, num_threads=None, cache=True, checked=None)
    y = kernel(x)                       # see codegen.llvm.kernel.Kernel
    code = generate_x86(func)           # GeneratedCode(.llvm_ir, .asm, .unoptimized_ir)

Modules: `types` (dtypes in LLVM), `emitter` (expressions), `stmts` (statements, loops,
vectorisation, temp buffers), `parallel` (outlined parallel loops), `intrinsics` (math calls),
`fastmath` (polynomial exp/log/tanh/erf/sigmoid/rsqrt), `module` (the C ABI, infer-shape),
`jit` (optimisation pipeline, object code, MCJIT), `kernel` (the callable).

Compiled kernels are cached in memory and on disk (`cinn_py.runtime.cache`), keyed by the IR,
fast_math, the host CPU and features, the llvmlite/LLVM versions, the project version and a hash of
every project source (`project_digest`: lowering, passes, the simplifier and schedules shape a
kernel as much as this package; a code change invalidates old entries by itself).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cinn_py.backend import DEFAULT_OPTIONS
from cinn_py.diagnostics import CompileError
from cinn_py.ir import LoweredFunc
from cinn_py.options import BuildOptions
from cinn_py.runtime.cache import CompileCache, make_key, project_digest
from cinn_py.passes import run_passes
from cinn_py.runtime.checked import resolve_checked
from cinn_py.target import X86_PASSES
from codegen.llvm.jit import LoadedObject, optimize_and_compile, target_facts, triple_and_layout
from codegen.llvm.kernel import Kernel
from codegen.llvm.module import build_module
from codegen.llvm.names import symbol_name

BACKEND = "x86"
CACHE = CompileCache("x86")


@dataclass(frozen=True)
class GeneratedCode:
    """Code generated for one function: optimised LLVM IR, host assembly, unoptimised IR, and what
    `X86Backend.load` needs to load it (the function, the object code, fast_math, bounds checks)."""

    llvm_ir: str
    asm: str
    unoptimized_ir: str
    func: LoweredFunc = field(repr=False, compare=False)
    object_code: bytes = field(repr=False, compare=False)
    fast_math: bool = False
    checks: tuple[str, ...] | None = field(default=None, repr=False, compare=False)
    """The bounds checks of a checked build (what an OutOfBoundsAccessError status refers to)."""

    @property
    def text(self) -> str:
        """The optimised LLVM IR (what `cinn-py dump-ir --stage codegen` prints)."""
        return self.llvm_ir


def _check_func(func: object) -> LoweredFunc:
    if not isinstance(func, LoweredFunc):
        raise TypeError(f"x86 backend: expected a LoweredFunc, got {type(func).__name__}")
    return func


def lower_x86(func: LoweredFunc) -> LoweredFunc:
    """`func` after the x86 target passes (`Target.x86().passes`: loop checks, block inlining,
    buffer privatisation), what the printer takes; the pipeline runs them as its `target_passes` step."""
    return run_passes(func, X86_PASSES)


def generate_x86(func: LoweredFunc, fast_math: bool = False, checked: bool = False) -> GeneratedCode:
    """LLVM IR (before and after O3) and assembly of `func` (as scheduled: the x86 target passes
    run first), without loading it; `checked`: with bounds checks."""
    options = BuildOptions.parse(fast_math, checked=checked)
    return generate_lowered(lower_x86(_check_func(func)), options)


def generate_lowered(func: LoweredFunc, options: BuildOptions = DEFAULT_OPTIONS) -> GeneratedCode:
    """`generate_x86` of a function the x86 target passes already lowered (the backend's
    `generate`: it only prints); unchecked unless `options.checked` is true (a build resolves the
    process default instead)."""
    func = _check_func(func)
    triple, layout = triple_and_layout()
    unit = build_module(func, options.fast_math, triple, layout, bool(options.checked))
    unoptimized = str(unit.module)
    compiled = optimize_and_compile(unoptimized)
    checks = None if unit.checks is None else tuple(unit.checks)
    return GeneratedCode(compiled.llvm_ir, compiled.asm, unoptimized, func, compiled.object_code,
                         options.fast_math, checks)


def build_x86(func: LoweredFunc, fast_math: bool = False, num_threads: int | None = None, cache: bool = True,
              checked: bool | None = None) -> Kernel:
    """Compile `func` (as scheduled: the x86 target passes run first) for the host CPU into a
    callable `Kernel`. The keywords are `cinn_py.build`'s, checked as it checks them
    (`BuildOptions.parse`): `num_threads` (threads of parallel loops for this kernel; default: the
    runtime thread pool's setting, i.e. all available cores), `cache` (default True: use the
    memory and disk compile caches) and `checked` (bounds-check every access the compiler cannot
    prove in range and raise OutOfBoundsAccessError from the call; default:
    `cinn_py.runtime.checked`)."""
    options = BuildOptions.parse(fast_math, num_threads=num_threads, cache=cache, checked=checked)
    return build_lowered(lower_x86(_check_func(func)), options)


def build_lowered(func: LoweredFunc, options: BuildOptions = DEFAULT_OPTIONS) -> Kernel:
    """`build_x86` of a function the x86 target passes already lowered (the backend's `build`: it
    prints and loads)."""
    func = _check_func(func)
    checked = resolve_checked(options.checked)
    fast_math, num_threads = options.fast_math, options.num_threads
    symbol = symbol_name(func.name)
    key = make_key(func, backend=BACKEND, sources=project_digest(),
                   fast_math=fast_math, checked=checked, **target_facts())
    if options.cache:
        hit = CACHE.get_memory(key)
        if hit is not None:
            loaded, llvm_ir, asm, checks = hit
            return Kernel(func, loaded, symbol, llvm_ir, asm, fast_math, num_threads, from_cache=True,
                          checks=checks)
        kernel = _from_disk(func, key, symbol, fast_math, num_threads)
        if kernel is not None:
            return kernel
    triple, layout = triple_and_layout()
    unit = build_module(func, fast_math, triple, layout, checked)
    checks = None if unit.checks is None else tuple(unit.checks)
    compiled = optimize_and_compile(str(unit.module), want_asm=False)  # Kernel.asm emits it when read
    loaded = LoadedObject(compiled.object_code)
    if options.cache:
        CACHE.put_memory(key, (loaded, compiled.llvm_ir, compiled.asm, checks))
        CACHE.store(key, {"symbol": symbol, "llvm_ir": compiled.llvm_ir, "asm": compiled.asm,
                          "checks": None if checks is None else list(checks)}, compiled.object_code)
    return Kernel(func, loaded, symbol, compiled.llvm_ir, compiled.asm, fast_math, num_threads, checks=checks)


def _from_disk(func: LoweredFunc, key: str, symbol: str, fast_math: bool,
               num_threads: int | None) -> Kernel | None:
    entry = CACHE.load(key)
    if entry is None:
        return None
    header, blob = entry
    raw_checks = header.get("checks")
    if header.get("symbol") != symbol or not isinstance(header.get("llvm_ir"), str) or not (
            raw_checks is None
            or (isinstance(raw_checks, list) and all(isinstance(c, str) for c in raw_checks))):
        CACHE.discard(key)
        return None
    checks = None if raw_checks is None else tuple(raw_checks)
    asm = str(header.get("asm", ""))  # "" when the compile did not emit it: Kernel.asm does on demand
    try:
        loaded = LoadedObject(blob)
        kernel = Kernel(func, loaded, symbol, header["llvm_ir"], asm, fast_math, num_threads,
                        from_cache=True, checks=checks)
    except (CompileError, RuntimeError, OSError):
        CACHE.discard(key)
        return None
    CACHE.put_memory(key, (loaded, kernel.llvm_ir, asm, checks))
    return kernel


__all__ = ["CACHE", "GeneratedCode", "Kernel", "build_lowered", "build_x86", "generate_lowered",
           "generate_x86",
           "lower_x86"]
