"""Launch configuration of a CUDA kernel: grid/block dims and dynamic shared memory as
expressions of the symbolic dims, evaluated on the host for each call (CINN's host dispatch
computes the same `grid_x .. block_z` from the `int64` symbol arguments).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cinn_py.ir import ArgIO, DType, Expr, Var
from cinn_py.symbolic.integer import eval_int as symbolic_eval_int
from cinn_py.target import GpuLimits

if TYPE_CHECKING:
    from codegen.cuda.generate import GeneratedCode

Dim3 = tuple[int, int, int]


def eval_int(e: Expr, env: Mapping[str, int]) -> int:
    """Evaluate an integer expression of symbolic dims with C semantics (truncating `/`, `%`);
    a ValueError names the launch and the cause."""
    try:
        return symbolic_eval_int(e, env)
    except KeyError as exc:
        raise ValueError(f"launch: no value for symbolic dim {exc} (have {sorted(env)})") from None
    except ZeroDivisionError:
        raise ValueError(f"launch: division by zero evaluating {e}") from None
    except ValueError:
        raise ValueError(f"launch: cannot evaluate {type(e).__name__} ({e}) on the host") from None


def eval_bool(e: Expr, env: Mapping[str, int]) -> bool:
    """Evaluate a predicate over symbolic dims (bucket predicates, selects)."""
    return eval_int(e, env) != 0


@dataclass(frozen=True)
class LaunchInfo:
    """Grid/block dims and dynamic shared bytes as expressions of `symbols`, checked at each launch
    against the target's `limits`."""

    grid: tuple[Expr, Expr, Expr]
    block: tuple[Expr, Expr, Expr]
    shared_bytes: Expr
    symbols: tuple[Var, ...]
    limits: GpuLimits = field(default_factory=GpuLimits, repr=False, compare=False)
    """The target's GPU limits (`Target.cuda(arch).limits`)."""

    @property
    def is_static(self) -> bool:
        return not self.symbols

    def launch_dims(self, symbol_values: Mapping[str, int] | Mapping[Var, int]
                    | None = None) -> tuple[Dim3, Dim3, int]:
        """((gx, gy, gz), (bx, by, bz), shared_bytes) for concrete symbol values.

        Raises:
            ValueError: a symbol is missing, or the dims exceed the target's limits.
        """
        env = {(k.name if isinstance(k, Var) else k): int(v) for k, v in (symbol_values or {}).items()}
        grid = tuple(eval_int(d, env) for d in self.grid)
        block = tuple(eval_int(d, env) for d in self.block)
        shared = eval_int(self.shared_bytes, env)
        _check_limits(grid, block, self.limits)  # type: ignore[arg-type]
        return grid, block, shared  # type: ignore[return-value]

    def __str__(self) -> str:
        def fmt(dims: tuple[Expr, ...]) -> str:
            return "(" + ", ".join(str(d) for d in dims) + ")"

        return f"grid={fmt(self.grid)} block={fmt(self.block)} shared_bytes={self.shared_bytes}"


@dataclass(frozen=True)
class TempSpace:
    """A global temporary the host allocates for each launch (CINN `temp_spaces`).

    The kernel takes it as a trailing `T* __restrict__ <name>` argument, after the function's
    own arguments, in `GeneratedCode.temp_spaces` order.
    """

    name: str
    """The kernel parameter name."""
    dtype: DType
    num_elements: Expr
    """An int64 expression of the symbolic dims."""
    zero_init: bool
    """Fill with zeros before the launch (the kernel may read an element before writing it)."""

    def nbytes(self, symbol_values: Mapping[str, int] | Mapping[Var, int] | None = None) -> int:
        """Bytes to allocate for concrete symbol values (at least 1, so the pointer is valid)."""
        env = {(k.name if isinstance(k, Var) else k): int(v) for k, v in (symbol_values or {}).items()}
        count = eval_int(self.num_elements, env)
        if count < 0:
            raise ValueError(f"launch: temp space '{self.name}' has a negative size {count} "
                             f"({self.num_elements})")
        return max(1, count * max(1, self.dtype.bits // 8))


def _check_limits(grid: Dim3, block: Dim3, limits: GpuLimits) -> None:
    for axis, (value, limit) in enumerate(zip(grid, limits.max_grid_dims)):
        if value < 0 or value > limit:
            raise ValueError(f"launch: grid dim {'xyz'[axis]} = {value} is outside CUDA's range [0, {limit}]")
    for axis, (value, limit) in enumerate(zip(block, limits.max_block_dims)):
        if value < 0 or value > limit:
            raise ValueError(f"launch: block dim {'xyz'[axis]} = {value} is outside CUDA's range [0, "
                             f"{limit}]")
    threads = block[0] * block[1] * block[2]
    if threads > limits.max_threads_per_block:
        raise ValueError(f"launch: {threads} threads per block exceed CUDA's limit "
                         f"{limits.max_threads_per_block}")


# -- host logic shared by the PyCUDA Kernel and the CPU emulator's EmulatedCudaKernel ---------------
def kernel_arguments(code: GeneratedCode, in_ptrs: Sequence[int], out_ptrs: Sequence[int],
                     symbols: Mapping[str, int]) -> list[tuple[str, int]]:
    """`(kind, value)` of the kernel's own parameters in signature order (inputs, outputs and the
    symbolic dims as the function declares them; the temp spaces follow, appended by the loader).
    kind is the PyCUDA prepare letter: `P` pointer, `q` int64, `i` int32."""
    ins, outs = iter(in_ptrs), iter(out_ptrs)
    params: list[tuple[str, int]] = []
    for arg in code.func.args:
        if arg.io is ArgIO.INPUT:
            params.append(("P", next(ins)))
        elif arg.io is ArgIO.OUTPUT:
            params.append(("P", next(outs)))
        elif arg.var is not None:
            params.append(("q" if arg.var.dtype.bits == 64 else "i", int(symbols[arg.var.name])))
    return params


def check_alignment(code: GeneratedCode, func_name: str, ptrs: Iterable[int]) -> None:
    """Raise ValueError when a tensor pointer misses the alignment vectorised accesses need."""
    align = code.vector_alignment
    for ptr in ptrs:
        if align > 1 and ptr % align:
            raise ValueError(f"kernel '{func_name}': a tensor pointer (0x{ptr:x}) is not {align}-byte "
                             "aligned, which this kernel's vectorised loads/stores need; pass a fresh "
                             "(not offset) tensor")

