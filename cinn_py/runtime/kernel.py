"""What every backend's compiled kernel shares (`codegen.llvm.kernel.Kernel`,
`codegen.cuda.kernel.Kernel`; the interface is `cinn_py.backend.Kernel`): the function it runs,
the bounds checks of a checked build and the error a failed one raises, and the result
convention (one output: the array; several: a tuple in signature order).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cinn_py.diagnostics import OutOfBoundsAccessError
from cinn_py.ir import LoweredFunc


class KernelBase:
    """The shared part of a backend kernel; a backend sets `func` and `checks` and adds `__call__`."""

    func: LoweredFunc
    checks: tuple[str, ...] | None
    """Checked builds: what each bounds check guards (check k is `checks[k]`); None unchecked."""

    @staticmethod
    def results(arrays: Sequence[Any]) -> Any:
        """One output: the array; several: a tuple in signature order."""
        return arrays[0] if len(arrays) == 1 else tuple(arrays)

    def out_of_bounds(self, check: int, index: int, outcome: str) -> OutOfBoundsAccessError:
        """The error of failed bounds check `check` (an index into `checks`) on `index`;
        `outcome` says what the kernel did instead of the access."""
        checks = self.checks or ()
        what = checks[check] if 0 <= check < len(checks) else f"bounds check {check}"
        return OutOfBoundsAccessError(f"kernel '{self.func.name}' (checked build): the {what}: the index was "
                                      f"{index}; {outcome}")


__all__ = ["KernelBase"]
