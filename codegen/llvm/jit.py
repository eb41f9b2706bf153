"""LLVM for the host CPU: verify, optimise (O3, new pass manager), emit object code, JIT-load.

The pipeline is llvmlite 0.50's new pass manager: `create_pipeline_tuning_options(speed_level=3)`
with loop and SLP vectorisation on -> `create_pass_builder(target_machine, options)` -> the
module pass manager's `run`. The target machine is the host's CPU and features, so vector code
uses the widest registers the CPU has. Code is emitted as an object file (that is what the disk
cache stores) and loaded into an MCJIT engine with `add_object_file`; external symbols (libm,
`aligned_alloc`/`free`) resolve against the running process, the parallel launcher against the
native runtime (`codegen.llvm.native_pool`), registered before the first kernel is loaded.

llvmlite is not thread-safe, so compilation holds one process-wide lock. The pass manager
leaks native memory on every run, so past a threshold the optimisation runs in a recycled worker
process (`codegen.llvm.compile_worker`).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import struct
import threading
from dataclasses import dataclass
from functools import lru_cache

import llvmlite
import llvmlite.binding as llvm

from cinn_py.diagnostics import CompileError
from codegen.llvm.compile_worker import WorkerPool
from codegen.llvm.native_pool import NativePool, compile_native_pool

LOCK = threading.RLock()
_WORKERS = WorkerPool()


@lru_cache(maxsize=None)
def _init() -> None:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    _load_process_libraries()
    libc = ctypes.CDLL(None)
    # memset/memcpy/memmove: LLVM turns zero-fill and copy loops into calls of these (the
    # loop-idiom pass); registered explicitly so that they resolve even where the process
    # image does not export them.
    for name in ("aligned_alloc", "free", "memset", "memcpy", "memmove"):
        llvm.add_symbol(name, ctypes.cast(getattr(libc, name), ctypes.c_void_p).value)


def _load_process_libraries() -> None:
    """Make the symbols MCJIT will resolve visible to `address_of_symbol` *before* the first
    engine exists, so that `_check_symbols` and the engine agree from the first build on.

    MCJIT's memory manager searches LLVM's permanent-library list; creating an engine adds the
    process image to it (`LoadLibraryPermanently(nullptr)`), which is why libm calls used to
    fail only in the first build of a process. We add the process image ("" names the main
    program for dlopen) and libm itself (generated code calls `expf`, `tanhf`, `erff`, ...
    even when nothing in the process has loaded libm yet).
    """
    llvm.load_library_permanently("")
    try:
        llvm.load_library_permanently("libm.so.6")  # glibc's soname: no ldconfig search needed
    except RuntimeError:
        found = ctypes.util.find_library("m")
        if found:
            # still missing afterwards: `_check_symbols` names the unresolved function
            with contextlib.suppress(RuntimeError):
                llvm.load_library_permanently(found)


def parallel_runtime() -> NativePool:
    """The native parallel-for runtime of this process (compiled on first use; kernels are
    checked and loaded only after it registered `cinn_py_parallel_launch`)."""
    with LOCK:  # one runtime per process, even when the first builds race
        return _compiled_runtime()


@lru_cache(maxsize=None)
def _compiled_runtime() -> NativePool:
    return compile_native_pool(new_target_machine())


@lru_cache(maxsize=None)
def target_machine() -> llvm.TargetMachine:
    """The host target machine used for optimisation and code emission (shared, never owned)."""
    return new_target_machine()


def new_target_machine(opt: int = 3) -> llvm.TargetMachine:
    """Host target machine (CPU name and features), code generation at `opt` (default O3), JIT
    code model. MCJIT engines take ownership of theirs, so each engine gets a new one."""
    _init()
    target = llvm.Target.from_triple(llvm.get_process_triple())
    return target.create_target_machine(cpu=llvm.get_host_cpu_name(), features=host_features(), opt=opt,
                                        reloc="default", codemodel="jitdefault", jit=True)


@lru_cache(maxsize=None)
def host_features() -> str:
    return llvm.get_host_cpu_features().flatten()


def target_facts() -> dict[str, str]:
    """What compiled code depends on besides the IR (part of cache keys)."""
    return {"triple": llvm.get_process_triple(), "cpu": llvm.get_host_cpu_name(), "features": host_features(),
            "llvmlite": llvmlite.__version__, "llvm": ".".join(map(str, llvm.llvm_version_info))}


def triple_and_layout() -> tuple[str, str]:
    return llvm.get_process_triple(), str(target_machine().target_data)


@dataclass
class Compiled:
    """Optimised IR text, assembly and object code of one module."""

    llvm_ir: str
    asm: str
    object_code: bytes


def optimize_and_compile(ir_text: str, want_asm: bool = True) -> Compiled:
    """Parse + verify + O3-optimise + emit object code (and assembly) for the host.

    After the first `in_process_limit()` compiles of a process, in a recycled worker process
    (llvmlite's pass manager leaks ~75 KiB per run; see `codegen.llvm.compile_worker`)."""
    with LOCK:
        if _WORKERS.wants_worker():
            compiled = _WORKERS.compile(ir_text, want_asm)
            if compiled is not None:
                return compiled
        _WORKERS.in_process += 1
        return compile_here(ir_text, want_asm)


def compile_here(ir_text: str, want_asm: bool = True) -> Compiled:
    """`optimize_and_compile` in this process."""
    parallel_runtime()
    with LOCK:
        tm = target_machine()
        try:
            mod = llvm.parse_assembly(ir_text)
            mod.verify()
        except RuntimeError as exc:
            raise CompileError(f"x86 codegen: generated LLVM IR does not verify: {exc}",
                               ir_text[:4000]) from exc
        pto = llvm.create_pipeline_tuning_options(speed_level=3)
        pto.loop_vectorization = True
        pto.slp_vectorization = True
        pto.loop_unrolling = True
        pb = llvm.create_pass_builder(tm, pto)
        pb.getModulePassManager().run(mod, pb)
        object_code = bytes(tm.emit_object(mod))
        _check_symbols(mod, undefined_symbols(object_code))
        # the assembly only when asked: emitting it ran instruction selection and register
        # allocation a second time (~12% of a kernel's LLVM time); `assembly_of` gives it later
        return Compiled(str(mod), tm.emit_assembly(mod) if want_asm else "", object_code)


def assembly_of(llvm_ir: str) -> str:
    """The host assembly of optimised IR text (no optimisation passes: the code as compiled)."""
    parallel_runtime()
    with LOCK:
        return target_machine().emit_assembly(llvm.parse_assembly(llvm_ir))


_LINKER_DEFINED = frozenset({"_GLOBAL_OFFSET_TABLE_"})
"""Undefined in an object file, but the JIT linker (RuntimeDyld) provides it."""


def _check_symbols(mod: llvm.ModuleRef, undefined: set[str]) -> None:
    """Refuse code that needs a symbol the process does not define (such as a compiler-rt
    libcall LLVM introduced during instruction selection): MCJIT would jump to address 0."""
    defined = {f.name for f in mod.functions if not f.is_declaration} | {g.name for g in mod.global_variables}
    for name in undefined - defined - _LINKER_DEFINED:
        if name.startswith((".L", "__unnamed")) or llvm.address_of_symbol(name):
            continue
        raise CompileError(f"x86 codegen: generated code needs the external symbol '{name}', which this "
                           "process "
                           f"does not provide")


_ELF_HEADER = struct.Struct("<4sBBBBB7xHHIQQQIHHHHHH")  # Elf64_Ehdr
_ELF_SECTION = struct.Struct("<IIQQQQIIQQ")  # Elf64_Shdr
_ELF_SYMBOL = struct.Struct("<IBBHQQ")  # Elf64_Sym
_EM_X86_64, _ET_REL, _SHT_NOBITS, _SHT_SYMTAB, _SHN_UNDEF = 62, 1, 8, 2, 0


def undefined_symbols(blob: bytes) -> set[str]:
    """The names an ELF64 object file needs from outside (its undefined symbols)."""
    header = _ELF_HEADER.unpack_from(blob)
    shoff, shnum = header[11], header[17]
    sections = [_ELF_SECTION.unpack_from(blob, shoff + k * _ELF_SECTION.size) for k in range(shnum)]
    names: set[str] = set()
    for _name, kind, _flags, _addr, offset, size, link, _info, _align, entsize in sections:
        if kind != _SHT_SYMTAB:
            continue
        strings_offset = sections[link][4]
        for at in range(offset, offset + size, entsize or _ELF_SYMBOL.size):
            name_at, _sym_info, _other, section, _value, _size = _ELF_SYMBOL.unpack_from(blob, at)
            if section == _SHN_UNDEF and name_at:
                end = blob.index(b"\0", strings_offset + name_at)
                names.add(blob[strings_offset + name_at:end].decode())
    return names


def object_code_problem(blob: bytes) -> str | None:
    """Why `blob` is not a well-formed x86-64 ELF relocatable object, or None when it is.

    MCJIT trusts its input: a blob that is not an object file (a damaged or foreign disk-cache
    entry) crashes the process inside `add_object_file` instead of raising. So the header and
    every section's extent are checked first.
    """
    if len(blob) < _ELF_HEADER.size:
        return f"{len(blob)} bytes, shorter than an ELF header"
    (magic, cls, data, _version, _abi, _abiver, e_type, machine, _ev, _entry, _phoff, shoff, _flags, ehsize,
     _phentsize, _phnum, shentsize, shnum, shstrndx) = _ELF_HEADER.unpack_from(blob)
    if magic != b"\x7fELF" or cls != 2 or data != 1:
        return "not a little-endian ELF64 file"
    if e_type != _ET_REL or machine != _EM_X86_64:
        return f"ELF type {e_type} / machine {machine}, expected a relocatable x86-64 object"
    if ehsize != _ELF_HEADER.size or shentsize != _ELF_SECTION.size or shnum == 0 or shstrndx >= shnum:
        return "inconsistent ELF header sizes"
    if shoff + shnum * shentsize > len(blob):
        return "section header table beyond the end of the file"
    for k in range(shnum):
        _name, kind, _flags, _addr, offset, size, *_ = _ELF_SECTION.unpack_from(blob, shoff + k * shentsize)
        if kind != _SHT_NOBITS and offset + size > len(blob):
            return f"section {k} extends beyond the end of the file"
    return None


class LoadedObject:
    """An MCJIT engine holding one object file; addresses of its functions by name."""

    def __init__(self, object_code: bytes) -> None:
        problem = object_code_problem(object_code)
        if problem is not None:
            raise CompileError(f"x86 codegen: cannot load object code: {problem}")
        parallel_runtime()
        with LOCK:
            tm = new_target_machine()
            self.engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), tm)
            self.engine.add_object_file(llvm.ObjectFileRef.from_data(object_code))
            self.engine.finalize_object()

    def address(self, name: str) -> int:
        with LOCK:
            addr = self.engine.get_function_address(name)
        if not addr:
            raise CompileError(f"x86 codegen: symbol '{name}' not found in the compiled object")
        return addr
