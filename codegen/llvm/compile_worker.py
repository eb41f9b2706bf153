"""LLVM optimisation in a recycled worker process, so that long sessions keep a bounded RSS.

Why: every run of llvmlite 0.50's module pass manager leaks native memory. Measured with RSS
and `mallinfo2` per compile in a loop (`optimize_and_compile` of small kernels, 350 compiles
after a 50-compile warm-up): ~75 KiB per O3 run, ~53 KiB at O1, ~2 KiB at O0, the same with a
fresh or a shared `PassBuilder`, a fresh `LLVMContext` per module, identical or distinct IR, and
after `malloc_trim` (so it is live heap, not fragmentation); parsing, verification and object
emission without the pipeline leak nothing. The cause is in llvmlite's C++
(`LLVMPY_RunNewModulePassManager` registers `StandardInstrumentations` callbacks on the pass
builder's `PassInstrumentationCallbacks`, which `LLVMPY_CreatePassBuilder` allocates and nothing
frees), out of reach from Python: 1,500 compiles grew a process by ~120 MiB.

Workaround: the first `in_process_limit()` compiles of a process run in it (no start-up cost for
tests, scripts and small models); later ones are sent to a child process
(`python -m codegen.llvm.compile_worker`) that runs the same `compile_here` and is replaced after
`worker_recycle()` compiles, so neither process grows without bound. Requests and replies are
length-prefixed pickles over the child's stdin/stdout (our own child, never foreign data).
Environment: `CINN_PY_COMPILE_IN_PROCESS=N` (default 256; `-1`: never use a worker) and
`CINN_PY_COMPILE_WORKER_RECYCLE=M` (default 1024). A worker that cannot start or dies makes the
compile fall back to this process (one `RuntimeWarning`), so the worker never costs a result.
"""

from __future__ import annotations

import atexit
import os
import pickle
import sys
import warnings
from typing import IO, Any

from cinn_py.runtime.frames import FrameChild, read_frame, write_frame


def in_process_limit() -> int:
    """Compiles a process runs itself before using a worker (-1: always itself)."""
    return _int_env("CINN_PY_COMPILE_IN_PROCESS", 256)


def worker_recycle() -> int:
    """Compiles one worker runs before it is replaced."""
    return max(1, _int_env("CINN_PY_COMPILE_WORKER_RECYCLE", 1024))


def _int_env(name: str, default: int) -> int:
    text = os.environ.get(name, "")
    try:
        return int(text) if text.strip() else default
    except ValueError:
        warnings.warn(f"{name}={text!r} is not an integer; using {default}", RuntimeWarning, stacklevel=3)
        return default


class CompileWorker(FrameChild):
    """One child process running `compile_here` on request (callers hold the jit LOCK)."""

    def __init__(self) -> None:
        super().__init__("codegen.llvm.compile_worker", quiet=True)
        self.compiles = 0

    @property
    def pid(self) -> int:
        return self.proc.pid

    def compile(self, ir_text: str, want_asm: bool) -> Any:
        """The worker's `Compiled`; a CompileError raised there is raised here.

        Raises OSError / EOFError when the worker is gone (the caller falls back)."""
        from cinn_py.diagnostics import CompileError  # noqa: PLC0415

        status, *payload = self.exchange((ir_text, want_asm))
        self.compiles += 1
        if status == "error":
            raise CompileError(*payload)
        return payload[0]


class WorkerPool:
    """The process-wide routing: count compiles, hand later ones to a recycled worker."""

    def __init__(self) -> None:
        self.in_process = 0
        self.worker: CompileWorker | None = None
        self.disabled = False
        atexit.register(self.shutdown)
        # a forked child must not talk to its parent's worker over the inherited pipes
        os.register_at_fork(after_in_child=self._forget_worker)

    def _forget_worker(self) -> None:
        self.worker = None

    def wants_worker(self) -> bool:
        limit = in_process_limit()
        return not self.disabled and limit >= 0 and self.in_process >= limit

    def compile(self, ir_text: str, want_asm: bool) -> Any:
        """`Compiled` from the worker (CompileError as raised there), or None when no worker
        could do it."""
        if self.worker is not None and self.worker.compiles >= worker_recycle():
            self.shutdown()
        try:
            if self.worker is None:
                self.worker = CompileWorker()
            return self.worker.compile(ir_text, want_asm)
        except (OSError, EOFError, pickle.UnpicklingError) as exc:
            self.shutdown()
            self.disabled = True
            warnings.warn(f"x86 codegen: the compile worker process failed ({exc}); compiling in this "
                          "process "
                          "from now on (its memory grows ~75 KiB per compile, see "
                          "codegen.llvm.compile_worker)",
                          RuntimeWarning, stacklevel=4)
            return None

    def shutdown(self) -> None:
        if self.worker is not None:
            worker, self.worker = self.worker, None
            worker.close()


def serve(stdin: IO[bytes], stdout: IO[bytes]) -> None:
    """The worker's loop: one reply per request until stdin closes."""
    from cinn_py.diagnostics import CompileError  # noqa: PLC0415
    from codegen.llvm.jit import compile_here  # noqa: PLC0415

    while True:
        try:
            ir_text, want_asm = read_frame(stdin)
        except EOFError:
            return
        try:
            reply: tuple[Any, ...] = ("ok", compile_here(ir_text, want_asm))
        except CompileError as exc:
            reply = ("error", exc.message, exc.detail)
        write_frame(stdout, reply)


if __name__ == "__main__":
    serve(sys.stdin.buffer, sys.stdout.buffer)
