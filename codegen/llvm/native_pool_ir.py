"""The LLVM IR text of the native parallel-for runtime (`native_pool` describes the design and
compiles it): `cinn_py_parallel_launch` on pthreads + futexes, the persistent workers' wait
(SPIN_ITERATIONS `pause` steps, then YIELD_ITERATIONS `sched_yield` steps, then a futex sleep),
the thread-count cell and the OpenMP hand-off. `runtime_ir(triple)` fills in the constants.
"""

from __future__ import annotations

NUM_THREADS_SYMBOL = "cinn_py_num_threads"
MAX_WORKERS = 1024
# Waiting: SPIN_ITERATIONS `pause` steps (~2 us), then YIELD_ITERATIONS `sched_yield` steps, then a
# futex sleep. Measured on a loaded 2-core machine (tiny kernel, back-to-back calls): pure
# spinning of 4096 steps cost ~200 us per launch (it burns the slice the awaited thread needs),
# 64 pauses + 256 yields ~4 us.
SPIN_ITERATIONS = 64
YIELD_ITERATIONS = 256
_FUTEX, _WAIT, _WAKE = 202, 128, 129  # SYS_futex, FUTEX_WAIT_PRIVATE, FUTEX_WAKE_PRIVATE

_IR = r"""
@cinn_py_num_threads = global i64 1, align 8
@cinn_py_omp_parallel = global ptr null, align 8
@cinn_py_omp_thread_num = global ptr null, align 8
@cinn_py_omp_num_threads = global ptr null, align 8
@gen = internal global i32 0, align 64
@claim = internal global i64 0, align 64
@finished = internal global i32 0, align 64
@sleepers = internal global i32 0, align 64
@waiter = internal global i32 0, align 64
@busy = internal global i32 0, align 64
@task_fn = internal global ptr null, align 8
@closure = internal global ptr null, align 8
@ntasks = internal global i64 0, align 8
@nworkers = internal global i64 0, align 8

declare i64 @syscall(i64, ...)
declare i32 @pthread_create(ptr, ptr, ptr, ptr)
declare i32 @pthread_detach(i64)
declare void @llvm.x86.sse2.pause()
declare i32 @sched_yield()

; Waiting step `k`: a `pause` for the first SPIN steps, then yield the CPU (on a loaded machine
; the thread being waited for may need this core) until the caller gives up and sleeps.
define internal void @backoff(i32 %k) {
entry:
  %spinning = icmp ult i32 %k, SPIN
  br i1 %spinning, label %pause, label %yield
pause:
  call void @llvm.x86.sse2.pause()
  ret void
yield:
  %r = call i32 @sched_yield()
  ret void
}

define internal void @futex_wait(ptr %addr, i32 %expected) {
  %e = zext i32 %expected to i64
  %r = call i64 (i64, ...) @syscall(i64 FUTEX, ptr %addr, i64 WAIT, i64 %e, ptr null)
  ret void
}

define internal void @futex_wake(ptr %addr, i64 %count) {
  %r = call i64 (i64, ...) @syscall(i64 FUTEX, ptr %addr, i64 WAKE, i64 %count, ptr null)
  ret void
}

; Claim the next task of launch `g` and run it: true when one ran. `@claim` holds the generation
; in its high 32 bits and the next task index in its low ones, so a worker that saw an older
; launch claims nothing (its tag no longer matches) and never runs a task with another launch's
; function. The thread finishing the last task wakes a sleeping launcher.
define internal i1 @claim_one(i32 %g, ptr %fn, ptr %cl, i64 %n) {
entry:
  %g64 = zext i32 %g to i64
  %tag = shl i64 %g64, 32
  %c0 = load atomic i64, ptr @claim seq_cst, align 8
  br label %try
try:
  %c = phi i64 [ %c0, %entry ], [ %seen, %cas ]
  %cg = and i64 %c, -4294967296
  %mine = icmp eq i64 %cg, %tag
  br i1 %mine, label %idx, label %no
idx:
  %i = and i64 %c, 4294967295
  %left = icmp slt i64 %i, %n
  br i1 %left, label %cas, label %no
cas:
  %c1 = add i64 %c, 1
  %r = cmpxchg ptr @claim, i64 %c, i64 %c1 seq_cst seq_cst
  %seen = extractvalue { i64, i1 } %r, 0
  %won = extractvalue { i64, i1 } %r, 1
  br i1 %won, label %run, label %try
run:
  call void %fn(i64 %i, i64 %n, ptr %cl)
  %f = atomicrmw add ptr @finished, i32 1 seq_cst
  %f1 = add i32 %f, 1
  %n32 = trunc i64 %n to i32
  %all = icmp eq i32 %f1, %n32
  br i1 %all, label %maybe_wake, label %yes
maybe_wake:
  %w = load atomic i32, ptr @waiter seq_cst, align 4
  %ws = icmp ne i32 %w, 0
  br i1 %ws, label %wake, label %yes
wake:
  call void @futex_wake(ptr @finished, i64 1)
  br label %yes
yes:
  ret i1 true
no:
  ret i1 false
}

; Worker `id` (1..); `arg` = (generation at creation << 16) | id. It claims tasks of each new
; launch until none is left (its id does not matter: a task is whoever claims it first).
define internal ptr @worker(ptr %arg) {
entry:
  %a = ptrtoint ptr %arg to i64
  %g_hi = lshr i64 %a, 16
  %seen0 = trunc i64 %g_hi to i32
  br label %wait
wait:
  %seen = phi i32 [ %seen0, %entry ], [ %g, %claim_more ]
  br label %spin
spin:
  %k = phi i32 [ 0, %wait ], [ %k1, %spin_more ], [ 0, %woke ]
  %g0 = load atomic i32, ptr @gen acquire, align 4
  %changed = icmp ne i32 %g0, %seen
  br i1 %changed, label %run, label %spin_more
spin_more:
  call void @backoff(i32 %k)
  %k1 = add i32 %k, 1
  %more = icmp ult i32 %k1, PATIENCE
  br i1 %more, label %spin, label %sleep
sleep:
  %s0 = atomicrmw add ptr @sleepers, i32 1 seq_cst
  %g1 = load atomic i32, ptr @gen seq_cst, align 4
  %same = icmp eq i32 %g1, %seen
  br i1 %same, label %do_wait, label %woke
do_wait:
  call void @futex_wait(ptr @gen, i32 %seen)
  br label %woke
woke:
  %s1 = atomicrmw sub ptr @sleepers, i32 1 seq_cst
  br label %spin
run:
  %g = phi i32 [ %g0, %spin ]
  ; seq_cst: a field of a newer launch read here orders that launch's closing of the counter
  ; before the claim below, which then fails (its generation no longer matches)
  %fn = load atomic ptr, ptr @task_fn seq_cst, align 8
  %cl = load atomic ptr, ptr @closure seq_cst, align 8
  %n = load atomic i64, ptr @ntasks seq_cst, align 8
  br label %claim_more
claim_more:
  %ran = call i1 @claim_one(i32 %g, ptr %fn, ptr %cl, i64 %n)
  br i1 %ran, label %claim_more, label %wait
}

; Called in the child after os.fork(): the workers were not copied, the pool is empty.
define void @cinn_py_parallel_reset() {
  store ptr null, ptr @cinn_py_omp_parallel, align 8
  store i64 0, ptr @nworkers, align 8
  store i32 0, ptr @busy, align 4
  store i32 0, ptr @sleepers, align 4
  store i64 0, ptr @claim, align 8
  store i32 0, ptr @finished, align 4
  store i32 0, ptr @waiter, align 4
  ret void
}

; Make sure `need` workers exist (called with `busy` held); returns how many exist.
define internal i64 @ensure_workers(i64 %need) {
entry:
  %tid = alloca i64, align 8
  %have = load i64, ptr @nworkers, align 8
  %enough = icmp sge i64 %have, %need
  br i1 %enough, label %out, label %loop
loop:
  %i = phi i64 [ %have, %entry ], [ %id, %created ]
  %id = add i64 %i, 1
  %g = load atomic i32, ptr @gen seq_cst, align 4
  %g64 = zext i32 %g to i64
  %hi = shl i64 %g64, 16
  %packed = or i64 %hi, %id
  %arg = inttoptr i64 %packed to ptr
  %rc = call i32 @pthread_create(ptr %tid, ptr null, ptr @worker, ptr %arg)
  %ok = icmp eq i32 %rc, 0
  br i1 %ok, label %created, label %out
created:
  %t = load i64, ptr %tid, align 8
  %rd = call i32 @pthread_detach(i64 %t)
  store i64 %id, ptr @nworkers, align 8
  %again = icmp slt i64 %id, %need
  br i1 %again, label %loop, label %out
out:
  %n = load i64, ptr @nworkers, align 8
  ret i64 %n
}

define internal void @run_serially(ptr %task, ptr %closure, i64 %n) {
entry:
  br label %loop
loop:
  %k = phi i64 [ 0, %entry ], [ %k1, %loop ]
  call void %task(i64 %k, i64 %n, ptr %closure)
  %k1 = add i64 %k, 1
  %more = icmp slt i64 %k1, %n
  br i1 %more, label %loop, label %out
out:
  ret void
}

; The body of an OpenMP parallel region (GOMP_parallel's `fn(data)`, data = {task, closure, n}):
; thread t of a team of T runs tasks t, t + T, ... below n, so every task runs once whatever
; team size the OpenMP runtime gives.
define internal void @omp_body(ptr %args) {
entry:
  %task = load ptr, ptr %args, align 8
  %cl_p = getelementptr { ptr, ptr, i64 }, ptr %args, i32 0, i32 1
  %cl = load ptr, ptr %cl_p, align 8
  %n_p = getelementptr { ptr, ptr, i64 }, ptr %args, i32 0, i32 2
  %n = load i64, ptr %n_p, align 8
  %tnf = load ptr, ptr @cinn_py_omp_thread_num, align 8
  %ntf = load ptr, ptr @cinn_py_omp_num_threads, align 8
  %tid32 = call i32 %tnf()
  %nt32 = call i32 %ntf()
  %tid = sext i32 %tid32 to i64
  %nt0 = sext i32 %nt32 to i64
  %nt_bad = icmp slt i64 %nt0, 1
  %nt = select i1 %nt_bad, i64 1, i64 %nt0
  %any = icmp slt i64 %tid, %n
  br i1 %any, label %loop, label %out
loop:
  %i = phi i64 [ %tid, %entry ], [ %i1, %loop ]
  call void %task(i64 %i, i64 %n, ptr %cl)
  %i1 = add i64 %i, %nt
  %more = icmp slt i64 %i1, %n
  br i1 %more, label %loop, label %out
out:
  ret void
}

define void @cinn_py_parallel_launch(ptr %task, ptr %closure, i64 %extent) {
entry:
  %omp_args = alloca { ptr, ptr, i64 }, align 8
  %positive = icmp sgt i64 %extent, 0
  br i1 %positive, label %go, label %ret
go:
  %t0 = load i64, ptr @cinn_py_num_threads, align 8
  %t_lo = icmp slt i64 %t0, 1
  %t1 = select i1 %t_lo, i64 1, i64 %t0
  %t_hi = icmp sgt i64 %t1, MAXT
  %t = select i1 %t_hi, i64 MAXT, i64 %t1
  %fewer = icmp slt i64 %extent, %t
  %n = select i1 %fewer, i64 %extent, i64 %t
  %multi = icmp sgt i64 %n, 1
  br i1 %multi, label %lock, label %single
single:
  call void %task(i64 0, i64 1, ptr %closure)
  br label %ret
lock:
  %omp = load atomic ptr, ptr @cinn_py_omp_parallel acquire, align 8
  %shared = icmp ne ptr %omp, null
  br i1 %shared, label %omp_launch, label %own_pool
omp_launch:
  ; one pool with the process's OpenMP runtime (torch's intra-op pool): GOMP_parallel(fn, data,
  ; num_threads, flags) runs the region on the calling thread and the team's workers
  store ptr %task, ptr %omp_args, align 8
  %a1 = getelementptr { ptr, ptr, i64 }, ptr %omp_args, i32 0, i32 1
  store ptr %closure, ptr %a1, align 8
  %a2 = getelementptr { ptr, ptr, i64 }, ptr %omp_args, i32 0, i32 2
  store i64 %n, ptr %a2, align 8
  %n_omp = trunc i64 %n to i32
  call void %omp(ptr @omp_body, ptr %omp_args, i32 %n_omp, i32 0)
  br label %ret
own_pool:
  %cx = cmpxchg ptr @busy, i32 0, i32 1 acquire monotonic
  %locked = extractvalue { i32, i1 } %cx, 1
  br i1 %locked, label %ensure, label %serial
serial:
  call void @run_serially(ptr %task, ptr %closure, i64 %n)
  br label %ret
ensure:
  %need = sub i64 %n, 1
  %avail = call i64 @ensure_workers(i64 %need)
  %avail1 = add i64 %avail, 1
  %capped = icmp slt i64 %avail1, %n
  %n2 = select i1 %capped, i64 %avail1, i64 %n
  %has_workers = icmp sgt i64 %avail, 0
  %n32 = trunc i64 %n2 to i32
  br i1 %has_workers, label %publish, label %alone
alone:
  call void @run_serially(ptr %task, ptr %closure, i64 %n)
  store atomic i32 0, ptr @busy release, align 4
  br label %ret
publish:
  ; close the claim counter under the new generation before the launch's fields change: a worker
  ; still holding the previous generation (descheduled between reading `gen` and claiming) must
  ; not pair that generation's open counter with this launch's task count, function or closure
  %cur = load atomic i32, ptr @gen seq_cst, align 4
  %g = add i32 %cur, 1
  %g64 = zext i32 %g to i64
  %tag = shl i64 %g64, 32
  %closed = or i64 %tag, 4294967295
  store atomic i64 %closed, ptr @claim seq_cst, align 8
  store atomic ptr %task, ptr @task_fn seq_cst, align 8
  store atomic ptr %closure, ptr @closure seq_cst, align 8
  store atomic i64 %n2, ptr @ntasks seq_cst, align 8
  store atomic i32 0, ptr @finished seq_cst, align 4
  store atomic i32 0, ptr @waiter seq_cst, align 4
  store atomic i64 %tag, ptr @claim seq_cst, align 8
  store atomic i32 %g, ptr @gen seq_cst, align 4
  %sl = load atomic i32, ptr @sleepers seq_cst, align 4
  %anyone = icmp ne i32 %sl, 0
  br i1 %anyone, label %wake_all, label %own
wake_all:
  call void @futex_wake(ptr @gen, i64 2147483647)
  br label %own
own:
  %ran = call i1 @claim_one(i32 %g, ptr %task, ptr %closure, i64 %n2)
  br i1 %ran, label %own, label %spin
spin:
  %k = phi i32 [ 0, %own ], [ %k1, %spin_more ]
  %p = load atomic i32, ptr @finished acquire, align 4
  %finished = icmp eq i32 %p, %n32
  br i1 %finished, label %unlock, label %spin_more
spin_more:
  call void @backoff(i32 %k)
  %k1 = add i32 %k, 1
  %more = icmp ult i32 %k1, PATIENCE
  br i1 %more, label %spin, label %sleep
sleep:
  store atomic i32 1, ptr @waiter seq_cst, align 4
  %p2 = load atomic i32, ptr @finished seq_cst, align 4
  %finished2 = icmp eq i32 %p2, %n32
  br i1 %finished2, label %unlock, label %do_wait
do_wait:
  call void @futex_wait(ptr @finished, i32 %p2)
  br label %sleep
unlock:
  store atomic i32 0, ptr @busy release, align 4
  br label %ret
ret:
  ret void
}
"""


def runtime_ir(triple: str) -> str:
    """The runtime module's IR text for `triple`."""
    text = (_IR.replace("FUTEX", str(_FUTEX)).replace("WAIT", str(_WAIT)).replace("WAKE", str(_WAKE))
            .replace("PATIENCE", str(SPIN_ITERATIONS + YIELD_ITERATIONS))
            .replace("SPIN", str(SPIN_ITERATIONS)).replace("MAXT", str(MAX_WORKERS)))
    return f'target triple = "{triple}"\n' + text
