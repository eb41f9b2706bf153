// cinn-py CUDA emulator: the launch runtime declared in cuda_emu.h (fibers, barriers, warp
// collectives, deadlock reports).  Built once as a shared library that every emulated kernel
// library resolves against, or included into the race checker's translation unit.
#include "cuda_emu.h"

namespace cinn_emu {

thread_local Launch* g_launch = nullptr;
thread_local Thread* g_thread = nullptr;
thread_local char g_error[4096];

CINN_EMU_RUNTIME void fail(const char* fmt, ...) {
  Launch* L = g_launch;
  if (L->failed) return;
  L->failed = true;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_error, sizeof g_error, fmt, ap);
  va_end(ap);
}

CINN_EMU_RUNTIME static void yield() {
  Launch* L = g_launch;
  Thread* t = g_thread;
#ifdef CINN_EMU_TSAN
  __tsan_switch_to_fiber(L->sched_fiber, 1);  // 1: no happens-before from the switch itself
#endif
  swapcontext(&t->ctx, &L->sched);
}

// A failure inside a thread (a trap, a bad collective) ends the launch: the thread never resumes.
[[noreturn]] CINN_EMU_RUNTIME void abort_thread() {
  g_thread->state = DONE;
  for (;;) yield();
}

CINN_EMU_RUNTIME static void thread_main() {
#ifdef CINN_EMU_TSAN
  // Blocks run one after another and reuse one copy of the shared memory: order every block
  // after the previous one (this also orders their global accesses, see races.py).
  // Two alternating objects: a thread of block b acquires what block b-1 released and releases
  // into its own block's object, so the threads of one block stay unordered.
  __tsan_acquire(&g_launch->block_edge[(g_launch->block_number + 1) % 2]);
#endif
  g_launch->body(g_launch->body_context);
#ifdef CINN_EMU_TSAN
  __tsan_release(&g_launch->block_edge[g_launch->block_number % 2]);
#endif
  g_thread->state = DONE;
  yield();
}

CINN_EMU_RUNTIME void syncthreads(const char* file, int line) {
  Thread* t = g_thread;
  t->state = AT_BARRIER;
  t->file = file;
  t->line = line;
#ifdef CINN_EMU_TSAN
  __tsan_release(&g_launch->barrier_sync);
#endif
  yield();
#ifdef CINN_EMU_TSAN
  __tsan_acquire(&g_launch->barrier_sync);
#endif
}

static unsigned existing_lanes(int warp) {
  const int first = warp * 32;
  const int n = g_launch->nthreads - first < 32 ? g_launch->nthreads - first : 32;
  return n >= 32 ? 0xffffffffu : ((1u << n) - 1u);
}

// Arrive at a warp collective with `value`; returns the values of all lanes (valid for the
// lanes set in `*arrived`).
CINN_EMU_RUNTIME const unsigned long long* warp_collective(unsigned mask, unsigned long long value,
                                                                  const char* what, unsigned* arrived) {
  Thread* t = g_thread;
  if (!(mask >> t->lane & 1u)) {
    fail("%s: thread (%u,%u,%u) of block (%u,%u,%u) calls it with mask 0x%08x, which leaves out its own lane %d",
         what, t->tid.x, t->tid.y, t->tid.z, g_launch->bid.x, g_launch->bid.y, g_launch->bid.z, mask, t->lane);
    abort_thread();
  }
  t->state = AT_WARP;
  t->mask = mask;
  t->value = value;
  t->file = what;
  t->line = 0;
  Warp* w = &g_launch->warps[t->warp];
#ifdef CINN_EMU_TSAN
  __tsan_release(&w->sync);
#endif
  yield();
#ifdef CINN_EMU_TSAN
  __tsan_acquire(&w->sync);
#endif
  *arrived = w->arrived;
  return w->values;
}

CINN_EMU_RUNTIME unsigned vote(unsigned mask, bool pred, const char* what) {
  unsigned arrived = 0;
  const unsigned long long* values = warp_collective(mask, pred ? 1ull : 0ull, what, &arrived);
  unsigned ballot = 0;
  for (int j = 0; j < 32; ++j) {
    if ((arrived & mask) >> j & 1u) ballot |= (values[j] ? 1u : 0u) << j;
  }
  return ballot;
}

CINN_EMU_RUNTIME unsigned activemask() {
  const Thread* t = g_thread;
  const int first = t->warp * 32;
  unsigned m = 0;
  for (int j = 0; j < 32 && first + j < g_launch->nthreads; ++j) {
    if (g_launch->threads[first + j].state != DONE) m |= 1u << j;
  }
  return m;
}

CINN_EMU_RUNTIME static void switch_to(Launch* L, Thread* t) {
  g_thread = t;
#ifdef CINN_EMU_TSAN
  __tsan_switch_to_fiber(t->fiber, 1);
#endif
  swapcontext(&L->sched, &t->ctx);
  g_thread = nullptr;
}

// Release every warp whose waiting lanes' masks are complete; true if one was released.
CINN_EMU_RUNTIME static bool release_warps(Launch* L) {
  bool released = false;
  for (int w = 0; w < L->nwarps; ++w) {
    Thread* lanes = &L->threads[w * 32];
    const unsigned exist = existing_lanes(w);
    unsigned waiting = 0, wanted = 0;
    for (int j = 0; j < 32; ++j) {
      if (!(exist >> j & 1u)) continue;
      if (lanes[j].state == AT_WARP) {
        waiting |= 1u << j;
        wanted |= lanes[j].mask;
      }
    }
    wanted &= exist;
    if (!waiting || (wanted & ~waiting)) continue;
    Warp* wp = &L->warps[w];
    wp->arrived = waiting;
    for (int j = 0; j < 32; ++j) {
      if (waiting >> j & 1u) {
        wp->values[j] = lanes[j].value;
        lanes[j].state = RUNNABLE;
      }
    }
    released = true;
  }
  return released;
}

CINN_EMU_RUNTIME static const char* state_name(int s) {
  return s == RUNNABLE ? "runnable" : s == AT_BARRIER ? "waits at __syncthreads()" : s == AT_WARP ? "waits at" : "exited";
}

// No thread can run: describe who waits where.
CINN_EMU_RUNTIME static void report_deadlock(Launch* L) {
  char detail[3000];
  size_t used = 0;
  int shown = 0;
  int counts[4] = {0, 0, 0, 0};
  for (int i = 0; i < L->nthreads; ++i) counts[L->threads[i].state]++;
  for (int i = 0; i < L->nthreads && shown < 6; ++i) {
    const Thread& t = L->threads[i];
    if (t.state == DONE) continue;
    const bool first_of_kind = true;
    (void)first_of_kind;
    used += snprintf(detail + used, sizeof detail - used, "; thread (%u,%u,%u) %s %s%s%d", t.tid.x, t.tid.y,
                     t.tid.z, state_name(t.state), t.state == AT_WARP ? t.file : "",
                     t.state == AT_WARP ? " (mask 0x" : " at line ", t.state == AT_WARP ? (int)t.mask : t.line);
    if (t.state == AT_WARP) used += snprintf(detail + used, sizeof detail - used, ")");
    ++shown;
    if (used >= sizeof detail - 200) break;
  }
  fail("deadlock in block (%u,%u,%u) of a %ux%ux%u-thread block: %d threads wait at __syncthreads(), %d wait at "
       "a warp collective, %d exited (a barrier or collective not reached by every thread it waits for: "
       "divergent __syncthreads or a thread that returned early)%s",
       L->bid.x, L->bid.y, L->bid.z, L->block.x, L->block.y, L->block.z, counts[AT_BARRIER], counts[AT_WARP],
       counts[DONE], detail);
}

// Every thread waits at a barrier: release it; threads at different source lines are divergent.
CINN_EMU_RUNTIME static void release_barrier(Launch* L) {
  const Thread& first = L->threads[0];
  for (int i = 1; i < L->nthreads; ++i) {
    const Thread& t = L->threads[i];
    if (t.line != first.line || strcmp(t.file, first.file) != 0) {
      fail("divergent __syncthreads() in block (%u,%u,%u): thread (%u,%u,%u) waits at %s:%d, thread (%u,%u,%u) "
           "at %s:%d",
           L->bid.x, L->bid.y, L->bid.z, first.tid.x, first.tid.y, first.tid.z, first.file, first.line, t.tid.x,
           t.tid.y, t.tid.z, t.file, t.line);
      return;
    }
  }
  for (int i = 0; i < L->nthreads; ++i) L->threads[i].state = RUNNABLE;
}

CINN_EMU_RUNTIME static void run_block(Launch* L) {
  for (int i = 0; i < L->nthreads; ++i) {
    Thread& t = L->threads[i];
    t.state = RUNNABLE;
    t.file = "";
    t.line = 0;
    getcontext(&t.ctx);
    t.ctx.uc_stack.ss_sp = L->stacks + (size_t)i * L->stack_bytes;
    t.ctx.uc_stack.ss_size = L->stack_bytes;
    t.ctx.uc_link = &L->sched;
    makecontext(&t.ctx, thread_main, 0);
  }
  for (;;) {
    bool ran = false;
    for (int i = 0; i < L->nthreads && !L->failed; ++i) {
      if (L->threads[i].state == RUNNABLE) {
        switch_to(L, &L->threads[i]);
        ran = true;
      }
    }
    if (L->failed) return;
    if (ran || release_warps(L)) continue;
    int done = 0, barrier = 0;
    for (int i = 0; i < L->nthreads; ++i) {
      done += L->threads[i].state == DONE;
      barrier += L->threads[i].state == AT_BARRIER;
    }
    if (done == L->nthreads) return;
    if (barrier == L->nthreads) {
      release_barrier(L);
      if (L->failed) return;
      continue;
    }
    report_deadlock(L);
    return;
  }
}

CINN_EMU_RUNTIME static size_t stack_bytes() {
#ifdef CINN_EMU_TSAN
  return 512 * 1024;
#else
  return 128 * 1024;
#endif
}

// Run a grid; 0 on success, else 1 with the message in `g_error`.
CINN_EMU_RUNTIME int launch(const unsigned* dims, unsigned long long dynamic_shared, void (*body)(void*),
                                   void* body_context) {
  g_error[0] = 0;
  Launch L;
  memset((void*)&L, 0, sizeof L);
  L.grid = {dims[0], dims[1], dims[2]};
  L.block = {dims[3], dims[4], dims[5]};
  L.nthreads = (int)(L.block.x * L.block.y * L.block.z);
  L.nwarps = (L.nthreads + 31) / 32;
  L.body = body;
  L.body_context = body_context;
  g_launch = &L;
  if (dynamic_shared > CINN_EMU_MAX_DYNAMIC_SHARED) {
    fail("launch: %llu bytes of dynamic shared memory exceed the emulator's %d", dynamic_shared,
         CINN_EMU_MAX_DYNAMIC_SHARED);
    g_launch = nullptr;
    return 1;
  }
  if (L.nthreads == 0 || L.grid.x == 0 || L.grid.y == 0 || L.grid.z == 0) return 0;
  L.stack_bytes = stack_bytes();
  const size_t total = L.stack_bytes * (size_t)L.nthreads;
  void* stacks = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (stacks == MAP_FAILED) {
    fail("launch: cannot map %zu bytes of fiber stacks", total);
    g_launch = nullptr;
    return 1;
  }
  L.stacks = (char*)stacks;
  Thread* threads = (Thread*)calloc((size_t)L.nwarps * 32, sizeof(Thread));
  Warp* warps = (Warp*)calloc((size_t)L.nwarps, sizeof(Warp));
  L.threads = threads;
  L.warps = warps;
  for (int i = 0; i < L.nthreads; ++i) {
    Thread& t = threads[i];
    t.tid = {(unsigned)i % L.block.x, (unsigned)i / L.block.x % L.block.y, (unsigned)i / (L.block.x * L.block.y)};
    t.lane = i % 32;
    t.warp = i / 32;
#ifdef CINN_EMU_TSAN
    t.fiber = __tsan_create_fiber(0);
#endif
  }
#ifdef CINN_EMU_TSAN
  L.sched_fiber = __tsan_get_current_fiber();
  __tsan_release(&L.block_edge[0]);  // the host's writes (the arguments) happen before the grid
  __tsan_release(&L.block_edge[1]);
#endif
  for (unsigned z = 0; z < L.grid.z && !L.failed; ++z) {
    for (unsigned y = 0; y < L.grid.y && !L.failed; ++y) {
      for (unsigned x = 0; x < L.grid.x && !L.failed; ++x) {
        L.bid = {x, y, z};
        run_block(&L);
        ++L.block_number;
      }
    }
  }
#ifdef CINN_EMU_TSAN
  __tsan_acquire(&L.block_edge[0]);  // the grid happens before the host reads the results
  __tsan_acquire(&L.block_edge[1]);
  for (int i = 0; i < L.nthreads; ++i) __tsan_destroy_fiber(threads[i].fiber);
#endif
  const bool failed = L.failed;
  free(threads);
  free(warps);
  munmap(stacks, total);
  g_launch = nullptr;
  return failed ? 1 : 0;
}

}  // namespace cinn_emu
