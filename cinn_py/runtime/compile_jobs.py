"""A program's groups scheduled and compiled in parallel worker processes, with progress.

Why processes: a group's compile is pure Python (the automatic scheduler, the target passes, the
LLVM IR emitter) and llvmlite's optimiser, both holding the GIL; threads would take turns. Each
worker is a child `python -m cinn_py.runtime.compile_jobs` (not `multiprocessing`: its `spawn`
re-imports the user's `__main__` in every worker, which re-runs a training script without a
`__main__` guard, and `fork` would copy a process running torch's and our threads) that reads
length-prefixed pickles (our own child, our own data) on stdin: it runs the `schedule` and
`target_passes` steps and the x86 build of one group; the build stores the object code in the
disk cache (`cinn_py.runtime.cache`) and the worker sends the final function back. The parent
then builds each kernel from that function, which the disk cache serves (milliseconds), and
links them. Workers start at the first parallel compile and serve the whole process.

Identical groups are compiled once: groups whose lowered functions differ only in their names
(a BERT layer's kernels, once per layer) share the final function, hence the kernel, of the
first of them (a kernel's error then names that group's function).

`CINN_PY_COMPILE_JOBS=N`: worker processes (default: the CPUs this process may run on; 0 or 1:
compile in this process); programs with fewer than `MIN_PARALLEL_GROUPS` distinct groups compile
in this process. Each request carries the parent's `CINN_PY_*` variables of the moment. Parallel compiles need
the disk cache (the workers hand their object
code over through it); without one (`CINN_PY_DISABLE_DISK_CACHE=1`) groups compile here. A worker
that fails (a crash, an unpicklable function) leaves its group to this process, which then
compiles it and raises the real error if there is one.

Progress: a compile that has run for more than 2 s prints `cinn_py: compiling NAME: K/N groups
(T s)` lines on stderr, at most one every 2 s, and a last line when it ends
(`CINN_PY_PROGRESS=0`: none).
"""

from __future__ import annotations

import atexit
import os
import queue
import re
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from cinn_py.ir import LoweredFunc
from cinn_py.runtime import cache
from cinn_py.runtime.frames import FrameChild, read_frame, write_frame

PROGRESS_AFTER_S = 2.0
MIN_PARALLEL_GROUPS = 4
"""Fewer distinct groups compile here: starting workers (an interpreter importing the compiler,
~1-2 s) costs more than it saves on a small program."""


def jobs() -> int:
    """Worker processes to use (`CINN_PY_COMPILE_JOBS`, default the usable CPUs)."""
    text = os.environ.get("CINN_PY_COMPILE_JOBS", "").strip()
    if text:
        try:
            return max(0, int(text))
        except ValueError:
            return 1
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


class Worker(FrameChild):
    """One child compiling groups on request."""

    def __init__(self) -> None:
        super().__init__("cinn_py.runtime.compile_jobs")

    def compile(self, request: tuple[Any, ...]) -> LoweredFunc:
        """The worker's final function; raises whatever failed (the caller compiles here then)."""
        status, payload = self.exchange(request)
        if status != "ok":
            raise RuntimeError(f"compile worker: {payload}")
        return payload


_WORKERS: list[Worker] = []
_WORKERS_LOCK = threading.Lock()
_IN_USE = threading.Lock()  # one parallel compile at a time: a worker serves one request stream


def _workers(count: int) -> list[Worker]:
    with _WORKERS_LOCK:
        _WORKERS[:] = [w for w in _WORKERS if w.proc.poll() is None]
        while len(_WORKERS) < count:
            _WORKERS.append(Worker())
        return _WORKERS[:count]


def shutdown() -> None:
    """Stop the workers (at exit, or to start over)."""
    with _WORKERS_LOCK:
        for worker in _WORKERS:
            worker.close()
        _WORKERS.clear()


atexit.register(shutdown)
os.register_at_fork(after_in_child=_WORKERS.clear)  # a forked child must not share its parent's pipes


def _settings() -> dict[str, str]:
    """The parent's `CINN_PY_*` variables now (the tuning database, the disk cache...): a worker
    started earlier must compile as the parent would at this moment."""
    return {k: v for k, v in os.environ.items() if k.startswith("CINN_PY_")}


GroupSteps = Callable[..., LoweredFunc]
"""What a worker runs on one group: `steps(func, *args)` -> the final function. The pipeline passes
its own (`cinn_py.pipeline.compile_group`); it travels pickled by reference, so this module never
imports the pipeline (which is a layer above the runtime)."""


def _compile_request(steps: GroupSteps, func: LoweredFunc, args: tuple[Any, ...], cache_root: str,
                     settings: dict[str, str]) -> LoweredFunc:
    """In a worker: `steps` on one group, under the parent's settings (the kernel lands in the disk
    cache)."""
    for name in [k for k in os.environ if k.startswith("CINN_PY_") and k not in settings]:
        del os.environ[name]
    os.environ.update(settings)
    cache.set_cache_dir(cache_root)
    return steps(func, *args)


def serve() -> None:
    """The worker's loop: requests on stdin, ("ok", function) or ("error", text) on stdout."""
    requests, replies = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # prints from compiled code paths must not corrupt the replies
    while True:
        try:
            request = read_frame(requests)
        except EOFError:
            return
        try:
            reply: tuple[str, Any] = ("ok", _compile_request(*request))
        except Exception as err:  # noqa: BLE001 (reported to the parent, which compiles the group itself)
            reply = ("error", f"{type(err).__name__}: {err}")
        write_frame(replies, reply)


_DECLARED = re.compile(r"// decl (?:var|tensor|buffer) (\w+)|\b(?:input|output|inout) "
                       r"(\w+)|ScheduleBlock\((\w+)\)"
                       r"|// decl func (\w+)|temp\(([\w, ]*)\)")
_WORD = re.compile(r"\b\w+\b")


def shape_key(func: LoweredFunc) -> str:
    """`func`'s full text (declarations: dtypes, shapes, bounds) with its own names (function,
    tensors, buffers, blocks, loop and iteration variables; not its symbolic dims, which the
    program binds by name) renamed by first appearance: equal
    for groups that compute alike on operands of the same types, whatever their names. Sound:
    only names the function declares are renamed, one to one, to tokens no identifier can be."""
    from cinn_py.ir import print_ir  # noqa: PLC0415

    text = print_ir(func, decls=True)
    names: set[str] = set()
    for match in _DECLARED.finditer(text):
        for group in match.groups():
            names.update(n.strip() for n in (group or "").split(",") if n.strip())
    names |= {f"_{n}" for n in names} | {n[1:] for n in names if n.startswith("_")}
    names -= {v.name for v in func.scalar_args}  # symbolic dims: the program binds them by name
    order: dict[str, str] = {}

    def canonical(match: re.Match[str]) -> str:
        word = match.group(0)
        return order.setdefault(word, f"%{len(order)}") if word in names else word

    return _WORD.sub(canonical, text)


class Progress:
    """`K/N groups` lines on stderr once a compile has run for `PROGRESS_AFTER_S` seconds. K counts
    every group whose function is final: a distinct group done finishes its identical copies too
    (`copies`: how many groups each distinct one stands for), so K grows evenly to N."""

    def __init__(self, name: str, total: int, copies: Counter[int] | None = None) -> None:
        self.name, self.total = name, total
        self.copies = copies if copies is not None else Counter()
        self.done = 0
        self.start = self.last = time.perf_counter()
        self.shown = False
        self.enabled = os.environ.get("CINN_PY_PROGRESS", "1").strip() not in ("0", "false", "no", "off")

    def finished(self, k: int) -> None:
        """Distinct group `k` (and its copies) is final."""
        self.done += self.copies.get(k, 1)
        self.update(self.done)

    def update(self, done: int, final: bool = False) -> None:
        now = time.perf_counter()
        if not self.enabled or now - self.start < PROGRESS_AFTER_S or (not final and now - self.last < 2.0
                                                                          and self.shown):
            return
        self.last, self.shown = now, True
        print(f"cinn_py: compiling {self.name}: {done}/{self.total} groups ({now - self.start:.1f} s)"
              f"{' done' if final else ''}", file=sys.stderr, flush=True)


def compile_groups(name: str, funcs: Sequence[LoweredFunc], steps: GroupSteps, args: tuple[Any, ...],
                   here: Callable[[LoweredFunc], LoweredFunc]) -> list[LoweredFunc]:
    """Every group's final function (scheduled, target passes run), in order; identical groups
    get the same object. In worker processes (`steps(func, *args)`, a module-level function) when
    there are several distinct groups, a disk cache and jobs > 1; `here(func)` runs the steps in
    this process (for what the workers did not do)."""
    first: dict[str, int] = {}
    owner = [first.setdefault(shape_key(f), k) for k, f in enumerate(funcs)]
    distinct = sorted(set(owner))
    progress = Progress(name, len(funcs), Counter(owner))
    finals: dict[int, LoweredFunc] = {}
    root = cache.cache_dir()
    size = min(jobs(), len(distinct))
    if size > 1 and root is not None and len(distinct) >= MIN_PARALLEL_GROUPS:
        finals.update(_in_workers(funcs, distinct, size, (steps, args, str(root), _settings()), progress))
    for k in distinct:
        if k not in finals:
            finals[k] = here(funcs[k])
            progress.finished(k)
    result = [finals[owner[k]] for k in range(len(funcs))]
    progress.update(len(funcs), final=True)
    return result


def _in_workers(funcs: Sequence[LoweredFunc], distinct: Sequence[int], size: int,
                request: tuple[GroupSteps, tuple[Any, ...], str, dict[str, str]],
                progress: Progress) -> dict[int, LoweredFunc]:
    """The distinct groups' final functions from `size` workers (those that failed are missing)."""
    finals: dict[int, LoweredFunc] = {}
    todo: queue.Queue[int] = queue.Queue()
    for k in distinct:
        todo.put(k)
    lock = threading.Lock()

    def drain(worker: Worker) -> None:
        while True:
            try:
                k = todo.get_nowait()
            except queue.Empty:
                return
            try:
                steps, args, root, settings = request
                final = worker.compile((steps, funcs[k], args, root, settings))
            except (OSError, EOFError):  # the worker is gone: this thread stops, the parent compiles the rest
                return
            except RuntimeError:
                continue
            with lock:
                finals[k] = final
                progress.finished(k)

    with _IN_USE:
        try:
            workers = _workers(size)
        except OSError:
            return finals
        threads = [threading.Thread(target=drain, args=(w,), daemon=True) for w in workers]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    return finals


if __name__ == "__main__":
    serve()
