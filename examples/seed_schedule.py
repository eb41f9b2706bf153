"""The seed's GPU schedule (CINN article §2.2 steps (2)-(7)) as an IRSchedule script.

Run with `cinn-py dump-ir examples/seed_example.py --schedule examples/seed_schedule.py`;
`sch` (an IRSchedule of the lowered seed example) is in scope.
"""

sch.align_iter_space()                                   # (2) every nest -> [sp] or [sp, rb]
for name in "ABCDEF":                                    # (3) tile: sp [-1, 16, 32], rb [-1, 32]
    loops = sch.get_loops(name)
    sch.split(loops[0], [-1, 16, 32])
    if len(loops) == 2:
        sch.split(sch.get_loops(name)[3], [-1, 32])
for name in "ABDE":                                      # (4) inline the elementwise producers
    sch.compute_inline(name)
sch.bind(sch.get_loops("C")[3], "threadIdx.x")           # (5) two-step reduce over threadIdx.x
sch.factorize_reduction(sch.get_loops("C")[3], 2)
sch.simple_compute_at("F", sch.get_loops("C")[2])        # (6) fuse F into C's spatial loops
sch.bind(sch.get_loops("C")[1], "blockIdx.x")            # (7) bind the CUDA axes
sch.bind(sch.get_loops("C")[2], "threadIdx.y")
sch.bind(sch.get_loops("F")[3], "threadIdx.x")
