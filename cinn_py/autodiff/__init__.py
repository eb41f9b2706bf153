"""Reverse-mode automatic differentiation of NetBuilder programs (see `core` for the policy).

    from cinn_py.autodiff import grad
    backward = grad(program, outputs=[loss], wrt=[w])   # inputs: forward inputs + loss_grad

Importing this package attaches the gradient rules (`rules_*` modules) to the ops' `OpDef.grad`.
"""

from cinn_py.autodiff import rules_elementwise, rules_index, rules_structural  # noqa: F401  (attach the rules)
from cinn_py.autodiff.core import AutodiffError, GradContext, define_grad, grad

__all__ = ["AutodiffError", "GradContext", "define_grad", "grad"]
