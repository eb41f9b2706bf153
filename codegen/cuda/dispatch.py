"""Host bucket dispatch for dynamic shapes (CINN `BucketLower` + the host `if`-chain, cinn.md §3.5).

A `BucketDispatch` holds several kernels for one function, each behind a predicate on the
symbolic dims (`S0 <= 1024`, ...). Each bucket's kernel is named `<fn>_COND_<pred>__kernel` with
CINN's predicate mangling (`_FPA_`/`_BPA_` for brackets, `ADD SUB ... AND OR` for operators,
`NEG`/`NOT` for unary minus/not). A call binds the symbolic dims from the input shapes, picks the
first bucket whose predicate holds, and launches its kernel. The buckets come lowered by the CUDA
target's passes (the pipeline's `target_passes` step; `build_cuda(func, buckets=...)` runs them):
a dispatch only prints and loads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cinn_py.diagnostics import CompileError
from cinn_py.ir import (
    Add, And, Cast, Div, EQ, Expr, GE, GT, IntImm, LE, LT, LoweredFunc, Max, Min, Minus, Mod, Mul, NE, Not,
    Or, Sub, UIntImm, Var, sanitize_identifier,
)
from cinn_py.options import BuildOptions
from cinn_py.target import DEFAULT_CUDA_ARCH, Target
from codegen.cuda.generate import GeneratedCode, print_cuda
from codegen.cuda.launch import eval_bool
from codegen.cuda.loader import KernelLoader

_OP_WORDS: dict[type, str] = {
    Add: "ADD", Sub: "SUB", Mul: "MUL", Div: "DIV", Mod: "MOD", EQ: "EQ", NE: "NE",
    LT: "LT", LE: "LE", GT: "GT", GE: "GE", And: "AND", Or: "OR", Max: "MAX", Min: "MIN",
}


def mangle_predicate(pred: Expr) -> str:
    """A C identifier fragment for a predicate: `(S0 <= 1024)` -> `_FPA_S0_LE_1024_BPA_`."""
    if isinstance(pred, Var):
        return sanitize_identifier(pred.name)
    if isinstance(pred, (IntImm, UIntImm)):
        if pred.dtype.is_bool:
            return "true" if pred.value else "false"
        return str(pred.value) if pred.value >= 0 else f"NEG{-pred.value}"
    if isinstance(pred, Minus):
        return f"NEG_{mangle_predicate(pred.v)}"
    if isinstance(pred, Not):
        return f"NOT_{mangle_predicate(pred.v)}"
    if isinstance(pred, Cast):
        return mangle_predicate(pred.v)
    word = _OP_WORDS.get(type(pred))
    if word is None:
        raise CompileError(f"bucket dispatch: cannot use {type(pred).__name__} ({pred}) in a bucket "
                           "predicate")
    return f"_FPA_{mangle_predicate(pred.a)}_{word}_{mangle_predicate(pred.b)}_BPA_"  # type: ignore[attr-defined]


def bucket_kernel_name(fn_name: str, pred: Expr) -> str:
    """`<fn>_COND_<mangled predicate>__kernel` (CINN's bucket kernel name).

    `fn_name` is sanitised first (`sanitize_identifier`), so a hostile function name keeps the
    readable mangled suffix; the printer still checks the whole name (a very long predicate gets a
    hashed spelling: `GeneratedCode.kernel_name` is always the real symbol).
    """
    return f"{sanitize_identifier(fn_name)}_COND_{mangle_predicate(pred)}__kernel"


def signature(func: LoweredFunc) -> tuple[Any, ...]:
    return tuple((a.io, a.name, a.tensor.dtype if a.tensor else a.var.dtype,  # type: ignore[union-attr]
                  a.tensor.shape if a.tensor else ()) for a in func.args)


class BucketDispatch:
    """Several bucket kernels of one function behind predicates on its symbolic dims: `buckets`
    are `(predicate, LoweredFunc after the CUDA target passes)` pairs, printed for `target`
    (default: an sm_90 GPU) with `options`."""

    def __init__(self, buckets: Sequence[tuple[Expr, LoweredFunc]], target: Target | None = None,
                 options: BuildOptions | None = None, name: str | None = None,
                 loader: KernelLoader | None = None) -> None:
        if not buckets:
            raise ValueError("BucketDispatch: needs at least one (predicate, LoweredFunc) bucket")
        first = buckets[0][1]
        for pred, func in buckets:
            if not isinstance(func, LoweredFunc) or not isinstance(pred, Expr):
                raise TypeError("BucketDispatch: buckets are (predicate Expr, LoweredFunc) pairs")
            if not pred.dtype.is_bool:
                raise TypeError(f"BucketDispatch: predicate {pred} has dtype {pred.dtype}, expected bool")
            if signature(func) != signature(first):
                raise CompileError(f"BucketDispatch: bucket '{func.name}' has a different signature than "
                                   f"'{first.name}'; every bucket must take the same arguments")
            symbols = {v.name for v in first.scalar_args}
            unknown = {n.name for n in _vars(pred)} - symbols
            if unknown:
                raise CompileError(f"BucketDispatch: predicate {pred} uses {sorted(unknown)}, which are not "
                                   f"symbolic dims of '{first.name}' ({sorted(symbols)})")
        self.name = name or first.name
        self.func = first
        self.target = target or Target.cuda(DEFAULT_CUDA_ARCH)
        self.predicates = tuple(pred for pred, _ in buckets)
        self.codes: tuple[GeneratedCode, ...] = tuple(
            print_cuda(func, self.target, options or BuildOptions(), bucket_kernel_name(self.name, pred))
            for pred, func in buckets)
        self.loader = loader or KernelLoader()
        self._kernels: dict[int, Any] = {}
        self._validators: dict[str, Any] = {}

    def select(self, symbol_values: Mapping[str, int]) -> int:
        """Index of the first bucket whose predicate holds for `symbol_values`."""
        for k, pred in enumerate(self.predicates):
            if eval_bool(pred, symbol_values):
                return k
        shown = ", ".join(f"{n}={v}" for n, v in sorted(symbol_values.items()))
        raise ValueError(f"BucketDispatch '{self.name}': no bucket predicate holds for {shown}; predicates: "
                         + "; ".join(str(p) for p in self.predicates))

    def kernel(self, index: int) -> Any:
        """The launched Kernel of bucket `index` (loaded on first use: on the GPU, or emulated)."""
        if index not in self._kernels:
            self._kernels[index] = self.loader(self.codes[index], self.func)
        return self._kernels[index]

    def __call__(self, *args: Any, out: Any = None) -> Any:
        from cinn_py.runtime.args import ArgValidator  # noqa: PLC0415

        device = "cuda" if args and hasattr(args[0], "__cuda_array_interface__") else "cpu"
        validator = self._validators.get(device)
        if validator is None:
            validator = self._validators[device] = ArgValidator(self.func, device=device)
        symbols = validator.validate(args).symbols
        return self.kernel(self.select(symbols))(*args, out=out)


def _vars(e: Expr) -> list[Var]:
    from cinn_py.ir import walk  # noqa: PLC0415

    return [n for n in walk(e) if isinstance(n, Var)]
