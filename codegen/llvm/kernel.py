"""`Kernel`: a compiled x86 function callable on numpy arrays (and DLPack CPU tensors).

    y = kernel(x0, x1)                 # allocates the outputs (shapes from <fn>_infer_shape)
    y0, y1 = kernel(x0, x1)            # a function with several outputs returns a tuple
    kernel(x0, x1, out=y)              # writes into given arrays (a list/tuple for several)

Return value: the single output array when the function has one output, else a tuple in
signature order (with `out=`, the given arrays are returned the same way). Output arrays are
freshly allocated, C-contiguous and 64-byte aligned; bfloat16 outputs are uint16 arrays holding
the bfloat16 bits (view them with `ml_dtypes.bfloat16` if installed).

Every argument is validated first (`cinn_py.runtime.args`; a repeated input signature takes its
cached path, which costs a few microseconds); the generated code runs with the GIL
released, and parallel loops run on the native thread pool of `codegen.llvm.native_pool` with
`num_threads` threads (build option), else `cinn_py.runtime.threadpool.get_num_threads()`.
"""

from __future__ import annotations

import ctypes
import math
from typing import Any

import numpy as np

from cinn_py.ir import ArgIO, LoweredFunc, is_const_int, print_ir
from cinn_py.runtime import threadpool
from cinn_py.runtime.args import ArgValidator, FastCall, data_ptr, storage_dtype
from cinn_py.runtime.kernel import KernelBase
from codegen.llvm.jit import LoadedObject, assembly_of, parallel_runtime
from codegen.llvm.module import oob_index_symbol
from codegen.llvm.stmts import STATUS_NOMEM, STATUS_OUT_OF_BOUNDS, STATUS_SIZE_OVERFLOW

ALIGNMENT = 64


def aligned_empty(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """An uninitialised C-contiguous array whose data starts on a 64-byte boundary."""
    nbytes = math.prod(shape) * dtype.itemsize
    raw = np.empty(nbytes + ALIGNMENT, dtype=np.uint8)
    # one ndarray constructor over the over-allocated buffer (half the cost of slice+view+reshape)
    return np.ndarray(shape, dtype, raw, (-data_ptr(raw)) % ALIGNMENT)


class Kernel(KernelBase):
    """A compiled LoweredFunc. Attributes: `func`, `llvm_ir` (optimised), `asm`, `fast_math`,
    `num_threads` (None: the thread pool's setting), `symbol` (C name of the entry point)."""

    @property
    def asm(self) -> str:
        """The kernel's host assembly, emitted from `llvm_ir` when first asked for."""
        if self._asm is None:
            self._asm = assembly_of(self.llvm_ir)
        return self._asm

    def __init__(self, func: LoweredFunc, loaded: LoadedObject, symbol: str, llvm_ir: str, asm: str,
                 fast_math: bool, num_threads: int | None = None, from_cache: bool = False,
                 checks: tuple[str, ...] | None = None) -> None:
        self.func = func
        self.llvm_ir = llvm_ir
        self._asm = asm or None  # "": not emitted at compile time; `asm` derives it on first read
        self.fast_math = fast_math
        self.symbol = symbol
        self.from_cache = from_cache
        self.num_threads = (None if num_threads is None
                            else threadpool.check_thread_count(num_threads, "num_threads"))
        self._loaded = loaded
        self.checks = checks
        """Checked builds: what each bounds check guards; None for an unchecked build."""
        self._pool_threads = parallel_runtime().num_threads_cell
        self._validator = ArgValidator(func, device="cpu")
        arg_types = [ctypes.c_void_p if a.tensor is not None else ctypes.c_int64 for a in func.args]
        proto = ctypes.CFUNCTYPE(ctypes.c_int32, *arg_types)
        self._entry = proto(loaded.address(symbol))
        shape_proto = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)
        self._infer_shape = shape_proto(loaded.address(f"{symbol}_infer_shape"))
        self._out_ranks = [t.ndim for t in func.outputs]
        self._out_dtypes = [storage_dtype(t.dtype) for t in func.outputs]
        self._arg_kinds = [(a.io, a.var.name if a.tensor is None else "") for a in func.args]  # type: ignore[union-attr]
        ios = [io for io, _ in self._arg_kinds]
        self._canonical_order = ios == sorted(ios, key=[ArgIO.INPUT, ArgIO.OUTPUT, ArgIO.SCALAR].index) and \
            [name for io, name in self._arg_kinds if io is ArgIO.SCALAR] == [v.name for v in func.scalar_args]

    @property
    def address(self) -> int:
        """The entry point's address (what the native graph runtime calls, `codegen.llvm.graph`)."""
        return self._loaded.address(self.symbol)

    def __repr__(self) -> str:
        return f"<Kernel x86 '{self.func.name}' inputs={[t.name for t in self.func.inputs]} " \
               f"outputs={[t.name for t in self.func.outputs]}>"

    def infer_shape(self, symbols: dict[str, int]) -> list[tuple[int, ...]]:
        """Output shapes for symbol values, computed by the generated `<fn>_infer_shape`."""
        sym_values = np.array([symbols[v.name] for v in self.func.scalar_args] or [0], dtype=np.int64)
        out = np.zeros(max(sum(self._out_ranks), 1), dtype=np.int64)
        self._infer_shape(sym_values.ctypes.data, out.ctypes.data)
        shapes, offset = [], 0
        for rank in self._out_ranks:
            shapes.append(tuple(int(d) for d in out[offset:offset + rank]))
            offset += rank
        return shapes

    def __call__(self, *inputs: Any, out: Any = None) -> Any:
        fast = self._validator.fast_call(inputs, out)
        if fast is not None:
            return self._call_fast(fast, out)
        bound = self._validator.validate(inputs, out)
        if out is None:
            shapes = self.infer_shape(bound.symbols)
            for k, shape in enumerate(shapes):
                if any(d < 0 for d in shape):
                    raise ValueError(f"kernel '{self.func.name}': output {k} ('{self.func.outputs[k].name}') "
                                     f"would have negative shape {shape} for {bound.symbols}")
            arrays = [aligned_empty(s, d) for s, d in zip(shapes, self._out_dtypes)]
            outputs = self._validator.check_outputs(arrays, bound.inputs, bound.symbols)
            results: list[Any] = arrays
        else:
            outputs = bound.outputs
            results = [o for o in (out if isinstance(out, (list, tuple)) else [out])]
        ins, outs = iter(bound.inputs), iter(outputs)
        call_args = [next(ins).ptr if a.io is ArgIO.INPUT else next(outs).ptr if a.io is ArgIO.OUTPUT
                     else bound.symbols[a.var.name] for a in self.func.args]  # type: ignore[union-attr]
        self._run(call_args)
        return self.results(results)

    def _call_fast(self, fast: FastCall, out: Any) -> Any:
        """A call whose signature was validated before (see `ArgValidator.fast_call`)."""
        if fast.output_ptrs is None:
            arrays = [aligned_empty(s, d) for s, d in zip(fast.output_shapes, self._out_dtypes)]
            out_ptrs: tuple[int, ...] = tuple([data_ptr(a) for a in arrays])
            results: Any = arrays
        else:
            out_ptrs = fast.output_ptrs
            results = out if isinstance(out, (list, tuple)) else (out,)
        if self._canonical_order:  # inputs, outputs, symbols: no reordering needed
            call_args: Any = (*fast.input_ptrs, *out_ptrs, *fast.scalar_values)
        else:
            ins, outs = iter(fast.input_ptrs), iter(out_ptrs)
            call_args = [next(ins) if io is ArgIO.INPUT else next(outs) if io is ArgIO.OUTPUT
                         else fast.symbols[name] for io, name in self._arg_kinds]
        threads = self.num_threads or threadpool.get_num_threads()  # `_run`, inlined
        if threads != self._pool_threads.value:
            self._pool_threads.value = threads
        status = self._entry(*call_args)
        if status:
            self.raise_status(status, fast.symbols)
        return self.results(results)

    def _run(self, call_args: Any) -> None:
        threads = self.num_threads or threadpool.get_num_threads()
        if threads != self._pool_threads.value:
            self._pool_threads.value = threads
        status = self._entry(*call_args)
        if status:
            symbols = {a.var.name: value for a, value in zip(self.func.args, call_args)  # type: ignore[union-attr]
                       if a.io is ArgIO.SCALAR}
            self.raise_status(status, symbols)

    def raise_status(self, status: int, symbols: dict[str, int]) -> None:
        """Raise the error of a non-zero status the generated code returned for symbol values `symbols`."""
        if status == STATUS_SIZE_OVERFLOW:
            temps = ", ".join(f"{b.name}[{', '.join(print_ir(d) for d in b.shape)}] {b.dtype}"
                              for b in self.func.temp_bufs if not all(is_const_int(d) for d in b.shape))
            raise OverflowError(f"kernel '{self.func.name}': the byte size of a temporary buffer with "
                                "symbolic "
                                f"dims is negative or exceeds 2**63 for {symbols} (buffers: "
                                f"{temps or 'local'})")
        if status == STATUS_NOMEM:
            raise MemoryError(f"kernel '{self.func.name}': a temporary buffer could not be allocated")
        k = status - STATUS_OUT_OF_BOUNDS
        if self.checks is not None and 0 <= k < len(self.checks):
            # looked up only now: LLVM drops the global when it proves every check redundant
            index = ctypes.c_int64.from_address(self._loaded.address(oob_index_symbol(self.symbol))).value
            raise self.out_of_bounds(k, index, "the access was not made")
        raise RuntimeError(f"kernel '{self.func.name}': generated code returned status {status}")
