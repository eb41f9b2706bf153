"""Reverse-mode automatic differentiation of NetBuilder programs (see `core` for the policy).

    from cinn_py.autodiff import grad
    backward = grad(program, outputs=[loss], wrt=[w])   # inputs: forward inputs + loss_grad

Importing this package attaches the gradient rules (`rules_*` modules) to the ops' `OpDef.grad`.
"""

from cinn_py.autodiff import (  # noqa: F401  (attach the rules)
    rules_attention, rules_elementwise, rules_gather, rules_index, rules_nn, rules_structural,
)
from cinn_py.autodiff.core import (
    NON_DIFFERENTIABLE, AutodiffError, GradContext, define_grad, define_no_grad, grad,
)

__all__ = ["NON_DIFFERENTIABLE", "AutodiffError", "GradContext", "define_grad", "define_no_grad", "grad"]
