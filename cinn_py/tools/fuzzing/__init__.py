"""Building blocks of the fuzzer (`python -m cinn_py.tools.fuzz`): random programs and their numpy
reference (`programs`, `reference`), random schedules (`schedgen`), hypothesis strategies
(`strategies`). The harness itself, which reaches `schedules` and `codegen`, is `cinn_py.tools.fuzz`.
"""
