"""cinn-py for PyTorch (extra `cinn-py[torch]`).

- `compile_function(program)`: a NetBuilder program as a differentiable torch function
  (cinn_py/torch/function.py).
- `torch.compile(model, backend="cinn_py")`: the TorchDynamo backend (entry point
  `torch_dynamo_backends: cinn_py`), ATen graphs from AOT autograd converted to Programs (static
  or symbolic shapes: cinn_py/torch/symbolic.py), the unsupported ops left to eager PyTorch;
  `last_report()`/`reports()` say what fell back and which partitions raised (cinn_py/torch/backend.py).
"""

from __future__ import annotations

from cinn_py.torch.backend import (GraphReport, PartitionError, cinn_py_backend, last_report, reports,
                                   reset_reports)
from cinn_py.torch.function import CompiledFunction, compile_function, to_numpy, to_torch

__all__ = ["CompiledFunction", "GraphReport", "PartitionError", "cinn_py_backend", "compile_function",
           "last_report", "reports",
           "reset_reports", "to_numpy", "to_torch"]
