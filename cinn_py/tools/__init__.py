"""Tools built on the compiler, at the command line's level (they may reach `schedules` and
`codegen`, lazily, like `cinn_py.cli`): the x86 and CUDA benchmarks (`bench`, `bench_cuda`,
`bench_workloads`), the seed demo (`demo`), the differential fuzzer (`fuzz`, `fuzzing/`), the
run-and-compare harness (`runner`) and the test helpers (`testing/`: golden `.ir` cases, IR
assertions). The core (`cinn_py` outside this folder) never imports from here.
"""
