"""CINN's own op test cases (PaddlePaddle `test/cinn/ops/test_*_op.py`) run through cinn-py.

CINN declares each op test as `TestCaseHelper` classes: lists of `inputs` (shapes), `dtypes` and
`attrs` whose product is the set of cases, plus per-test constants (the input range of
`self.random(...)`, the op a shared test class calls). `suites_*` hold those declarations as data
(`Suite`: CINN's file and class, our builder, the lists), transcribed from CINN's tests; `builders`
says how each family builds its NetBuilder program, its inputs and an independent numpy reference;
`harness` runs every case through `cinn_py.build_and_get_output` on x86 and compares.

    python -m cinn_py.tools.cinn_cases                 # every case, a pass/total line per CINN test
    python -m cinn_py.tools.cinn_cases --file test_relu_op.py -v
"""
