"""The numpy reference interpreter: `run_ir(func, inputs)` executes any LoweredFunc exactly.

It is the test oracle of cinn-py: schedule, pass and backend tests compare against it. The IR is
compiled once into Python closures; loop nests whose iterations are independent (or that are
reductions) run as numpy vector operations, everything else iteration by iteration. See
`numerics` for the C semantics of integer division, overflow, casts, `cinn_min`/`cinn_max`,
float16 and bfloat16, and `stmts` for the order of vectorised float reductions.
"""

from cinn_py.interp.errors import (DivisionByZeroError, InterpError, OutOfBoundsError,
                                   UnsupportedConstructError)
from cinn_py.interp.numerics import bf16_bits_to_float32, float32_to_bf16_bits, round_bf16
from cinn_py.interp.run import run_ir

__all__ = [
    "DivisionByZeroError", "InterpError", "OutOfBoundsError", "UnsupportedConstructError",
    "bf16_bits_to_float32", "float32_to_bf16_bits", "round_bf16", "run_ir",
]
