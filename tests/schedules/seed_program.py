"""The seed example (seed 003 §2.2) for schedule tests: `cinn_py.tools.demo.seed_program` (with a small
reduce extent where a test wants speed) and its numpy reference.

    X[S1, S2, red] -> A = X * 2 -> B = A + 1 -> C = sum_k B -> D = C * 2
                   -> E = broadcast D to [S1, S2, red] -> F = E + 1
"""

from __future__ import annotations

from cinn_py.tools.demo import seed_program, seed_reference
from cinn_py.ir import LoweredFunc

RED = 1024

__all__ = ["RED", "seed_func", "seed_reference"]


def seed_func(red: int = RED) -> LoweredFunc:
    return seed_program(red)
