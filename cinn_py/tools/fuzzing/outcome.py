"""What a fuzz case ends as: the run's options, a case's `Result`, and the rules that classify
an exception as a clean rejection or a failure (shared by every family of cases)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cinn_py.diagnostics import CompileError, LoweringError, ScheduleError

DOCUMENTED_ERRORS: tuple[type[BaseException], ...] = (ScheduleError, CompileError, LoweringError, ValueError,
                                                      TypeError)
# CompileError messages meaning the generated code itself is broken (NVRTC / LLVM refused it).
_BROKEN_CODE = ("NVRTC: compiling", "x86 codegen: generated LLVM IR does not verify")
# TypeError messages that only our own code can cause (an IR expression used as a Python bool
# inside the compiler, e.g. sorting Vars), never a bad user argument.
_INTERNAL_TYPE_ERRORS = ("an IR expression has no truth value",)
# Stages where a TypeError may be a documented refusal of a generated argument (see `_classify`).
_ARGUMENT_STAGES = ("schedule", "build", "reference")


@dataclass
class Options:
    """What each case runs."""

    x86: bool = True
    x86_every: int = 1
    """Build and run on x86 only every n-th case (compiling dominates a case's time)."""
    cuda: bool = False
    steps: int = 6
    shrink: bool = True
    hand: bool = True
    """Apply a random hand schedule (False: only the auto stages, with `auto`)."""
    auto: bool = False
    """Also build with `schedule="auto"`: x86 (run vs the reference) and CUDA (NVRTC compile)."""
    auto_cuda_every: int = 1
    """Compile the auto-scheduled CUDA kernels only every n-th case (NVRTC dominates)."""
    net: bool = False
    """NetBuilder programs (`netgen`) through `compile_program(..., schedule="auto")`."""
    emulate: bool = False
    """Run the CUDA kernels in the CPU emulator against the reference (not only NVRTC-compile them)."""
    grad: bool = False
    """With `net`: also differentiate the program (`cinn_py.autodiff.grad`), run the backward program
    compiled with `schedule="auto"` against its numpy reference, and check the reference gradient
    against a central difference of the forward in float64 along a random direction."""
    torch_strides: bool = False
    """Random strided torch functions through the `cinn_py` torch.compile backend vs eager (`torchgen`)."""
    torch_values: bool = False
    """Random torch functions on NaN/inf/-0.0 inputs with value-sensitive ops, zero divisors and
    out-of-range indices vs eager: values, NaN positions, errors (`torchgen`, values=True)."""
    specials: bool = False
    """DSL and NetBuilder cases: NaN, +-inf, -0.0 and 0.0 in the float inputs (NaN positions must
    match the reference); NetBuilder cases also divide by values that may be zero."""


@dataclass
class Result:
    """The outcome of one case. `stage` names where it ended; `detail` says what differed."""

    index: int
    status: str
    stage: str = ""
    error: str = ""
    detail: str = ""
    steps: list[tuple[str, str]] = field(default_factory=list)
    reproducer: str = ""

    @property
    def signature(self) -> str:
        return f"{self.status}:{self.stage}:{self.error.split(':')[0]}"


class _Failure(Exception):
    def __init__(self, stage: str, detail: str) -> None:
        super().__init__(detail)
        self.stage, self.detail = stage, detail


def _classify(result: Result, stage: str, exc: BaseException, strict: bool) -> None:
    """`rejected` for a documented error refusing the input cleanly (hand schedules only), else
    `fail`: generated code its own compiler refuses, an internal TypeError, a RecursionError or
    any other exception, and under `strict` (the auto scheduler on a valid program) everything.
    A TypeError is a bad argument only where generated arguments meet an API's checks (the random
    schedule, a NetBuilder program's build and numpy reference); lowering, interpreting or
    compiling a program that got past them never raises one for the user's input."""
    first = _first_line(exc)
    broken = (isinstance(exc, CompileError) and first.startswith(_BROKEN_CODE)) or (
        isinstance(exc, TypeError)
        and (first.startswith(_INTERNAL_TYPE_ERRORS) or stage not in _ARGUMENT_STAGES))
    documented = isinstance(exc, DOCUMENTED_ERRORS) and not isinstance(exc, RecursionError)
    result.status = "rejected" if documented and not broken and not strict else "fail"
    result.stage, result.error = stage, f"{type(exc).__name__}: {first}"
    if result.status == "fail" and not documented:
        import traceback  # noqa: PLC0415

        result.detail = "".join(traceback.format_exception(exc)[-6:])


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else ""


def nvrtc_available() -> bool:
    """Whether CUDA C can be compiled here (the optional `nvrtc` extra)."""
    try:
        from cuda.bindings import nvrtc  # noqa: F401, PLC0415  # pyright: ignore[reportAttributeAccessIssue]
    except ImportError:
        return False
    return True


def compile_cuda_auto(func: Any) -> None:
    """The auto-scheduled CUDA kernels of `func` (one per shape bucket with symbolic dims),
    generated and compiled with NVRTC."""
    import cinn_py  # noqa: PLC0415
    from schedules import tactics  # noqa: PLC0415

    if func.scalar_args:
        for _, sch in tactics.auto_schedule_buckets(func, target="cuda"):
            cinn_py.codegen(sch.func, target="cuda").cubin  # noqa: B018  (NVRTC compiles on first access)
    else:
        cinn_py.codegen(func, target="cuda", schedule="auto").cubin  # noqa: B018


def _as_tuple(value: Any) -> tuple[Any, ...]:
    return value if isinstance(value, tuple) else (value,)
