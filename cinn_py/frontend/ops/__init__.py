"""The NetBuilder op registry: every op's infer-shape/dtype rule, `OpPatternKind`, numpy reference
and compute-DSL definition (see `base.OpDef`). Importing this package registers all ops."""

from cinn_py.frontend.ops import (  # noqa: F401 - registration
    attention, axis_scan, composite, elementwise, elementwise_attr, generators, indexing, injective,
    manipulation, manipulation_region, nn, nn_gemm, nn_grad, nn_norm, nn_pool_grad, nn_tiled, reduce, scatter,
    slice_concat, sorting,
)
from cinn_py.frontend.ops.base import (
    REGISTRY, Dim, FrontendError, OpDef, OpPatternKind, Shape, TensorType, get_op,
)

__all__ = ["REGISTRY", "Dim", "FrontendError", "OpDef", "OpPatternKind", "Shape", "TensorType", "get_op"]
