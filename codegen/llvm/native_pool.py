"""The native parallel-for runtime: `cinn_py_parallel_launch` in LLVM IR on pthreads + futexes.

CINN's x86 backend outlines a parallel loop into a task and calls
`cinn_backend_parallel_launch(task, closure, n)`, implemented with a native thread pool. This is
the same, written in LLVM IR (JIT-compiled once per process) so that a launch never enters
Python: the old ctypes callback + `ThreadPoolExecutor` cost 20-50 us per launch.

    void cinn_py_parallel_launch(void (*task)(i64 task_id, i64 num_tasks, ptr closure),
                                 ptr closure, i64 extent);

- `num_tasks = min(cinn_py_num_threads, extent)` (a global the Kernel sets before each call);
  the tasks run on the calling thread and on persistent worker threads
  (created on demand with `pthread_create`, detached, never touching Python).
- Hand-off: the launcher closes the claim counter under the new generation (no index left to
  claim), publishes (task, closure, num_tasks), opens the counter and bumps the generation
  counter `gen`; closing first means a worker still holding the previous generation can never
  claim with the new task count, function or closure (it ran an out-of-range task of the old
  closure and overshot `finished`: the launcher then waited forever); every thread of the launch, the launcher
  included, claims task ids from the counter (generation in its high half, next id in the low
  half: a worker still on an older launch claims nothing) and runs them until none is left; the
  launcher then waits until `finished` counts every task. A worker that is not running when a
  launch starts (a loaded machine, another runtime's threads spinning on the cores) leaves its
  task to the launcher instead of holding the launch up until it is scheduled; the task ids and
  their ranges are the same whoever runs them, so results are identical. Waiting spins briefly
  (`pause`), yields the CPU a few times, then sleeps on a futex; sleepers
  are counted so that a launch makes the wake-up system call only when someone sleeps (the
  sleep/wake checks are Dekker pairs of seq_cst operations, so no wake-up is lost).
- One launch at a time uses the workers (a `busy` flag); a launch that finds them busy (a
  kernel called concurrently from another Python thread) runs its tasks serially on its own
  thread, with the same partitioning, so results are identical.
- In a process whose OpenMP runtime is loaded (torch's libgomp), launches run as OpenMP parallel
  regions instead (`GOMP_parallel`; `codegen.llvm.openmp`): one pool for torch's ops and ours, so
  the threads torch leaves spinning after an op are the ones that run our next tasks, never
  competitors for the cores.
- After `os.fork()` the child has no workers: an `os.register_at_fork` handler resets the pool
  (`cinn_py_parallel_reset`). (glibc's `pthread_atfork` is not an exported symbol MCJIT could
  bind to.)
"""

from __future__ import annotations

import ctypes
import os

import llvmlite.binding as llvm

from cinn_py.diagnostics import CompileError

from codegen.llvm.names import LAUNCH_SYMBOL
from codegen.llvm.native_pool_ir import NUM_THREADS_SYMBOL, runtime_ir


class NativePool:
    """The compiled runtime of this process: the launcher's address and the thread-count cell."""

    def __init__(self, launch_address: int, num_threads_address: int, reset_address: int,
                 openmp_addresses: tuple[int, int, int]) -> None:
        self.launch_address = launch_address
        self.num_threads_cell = ctypes.c_int64.from_address(num_threads_address)
        """`cinn_py_num_threads`: threads of the next launches (the Kernel sets it before a call)."""
        self._reset = ctypes.CFUNCTYPE(None)(reset_address)
        self._openmp_cells = tuple(ctypes.c_void_p.from_address(a) for a in openmp_addresses)

    @property
    def openmp(self) -> tuple[int, int, int] | None:
        """The OpenMP entry points launches use (`share_openmp`), None for the pool's own workers."""
        values = tuple(cell.value or 0 for cell in self._openmp_cells)
        return None if not values[0] else (values[0], values[1], values[2])

    def share_openmp(self, entry_points: tuple[int, int, int] | None) -> None:
        """Run launches as OpenMP parallel regions (`GOMP_parallel`, `omp_get_thread_num`,
        `omp_get_num_threads` addresses: one pool with torch's intra-op threads, see
        `codegen.llvm.openmp`), or on the pool's own workers again (None)."""
        parallel, thread_num, num_threads = entry_points or (0, 0, 0)
        self._openmp_cells[0].value = None  # never a half-set triple: the launcher tests the first
        self._openmp_cells[1].value = thread_num or None
        self._openmp_cells[2].value = num_threads or None
        self._openmp_cells[0].value = parallel or None

    def set_num_threads(self, n: int) -> None:
        """Threads of the next launches from any thread."""
        if self.num_threads_cell.value != n:
            self.num_threads_cell.value = n

    def reset_after_fork(self) -> None:
        """Forget the workers (they do not exist in a forked child)."""
        self._reset()


_EXTERNALS = ("syscall", "pthread_create", "pthread_detach", "sched_yield")


def compile_native_pool(target_machine: llvm.TargetMachine) -> NativePool:
    """Compile the runtime (the caller does it once per process: `jit.parallel_runtime`) and
    register `cinn_py_parallel_launch` with MCJIT; the engine takes `target_machine`.

    The engine is deliberately never disposed: worker threads sleep inside its code for the
    life of the process, so its memory must outlive interpreter shutdown.
    """
    missing = [name for name in _EXTERNALS if not llvm.address_of_symbol(name)]
    if missing:
        raise CompileError(f"x86 parallel runtime: this process does not provide {missing} (needs glibc "
                           f"with pthreads)")
    module = llvm.parse_assembly(runtime_ir(llvm.get_process_triple()))
    module.verify()
    engine = llvm.create_mcjit_compiler(module, target_machine)
    engine.finalize_object()
    pool = NativePool(engine.get_function_address(LAUNCH_SYMBOL),
                      engine.get_global_value_address(NUM_THREADS_SYMBOL),
                      engine.get_function_address("cinn_py_parallel_reset"),
                      tuple(engine.get_global_value_address(f"cinn_py_omp_{name}")  # type: ignore[arg-type]
                            for name in ("parallel", "thread_num", "num_threads")))
    engine.detach()  # leak on purpose (see above)
    llvm.add_symbol(LAUNCH_SYMBOL, pool.launch_address)
    os.register_at_fork(after_in_child=pool.reset_after_fork)
    return pool
