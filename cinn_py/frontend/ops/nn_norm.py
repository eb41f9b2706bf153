"""The `batchnorm` op at inference: a composite that the builder decomposes into primitive ops
(`(x - mean) / sqrt(variance + epsilon) * scale + bias` per channel), with its infer rule, numpy
reference and op-test cases.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cinn_py.frontend.ops import testing
from cinn_py.frontend.ops.base import (
    Attrs, FrontendError, OpDef, OpPatternKind, SymbolEnv, TensorType, register,
)
from cinn_py.frontend.ops.elementwise_base import binary_operands
from cinn_py.frontend.ops.shapes import fmt_shape, shapes_equal
from cinn_py.frontend.ops.signature import OpCall, Signature, attr, boolean, floating, one_of, tensor
from cinn_py.frontend.ops.testing import Case, Input, OpTest


# ---------------------------------------------------------------------------------------------------------
# batchnorm (inference)
# ---------------------------------------------------------------------------------------------------------
_BN_PARAMS = ("scale", "bias", "mean", "variance")


def _bn_channel_axis(attrs: Attrs, ndim: int) -> int:
    return 1 if attrs["data_layout"] == "NCHW" else ndim - 1


def _bn_infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    x = ins[0]
    if not x.dtype.is_float or x.ndim < 2:
        raise FrontendError(f"batchnorm: x must be a floating-point tensor of rank >= 2, got {x.dtype}"
                            f"{fmt_shape(x.shape)}")
    c = x.shape[_bn_channel_axis(attrs, x.ndim)]
    for name, t in zip(_BN_PARAMS, ins[1:]):
        if t.dtype != x.dtype or not shapes_equal(t.shape, (c,)):
            raise FrontendError(f"batchnorm: argument '{name}' must be {x.dtype}[{c}] (the channels of x "
                                f"{fmt_shape(x.shape)}, {attrs['data_layout']}), got "
                                f"{t.dtype}{fmt_shape(t.shape)}")
    return [x]


def _bn_numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    x = arrays[0]
    view = [1] * x.ndim
    view[_bn_channel_axis(attrs, x.ndim)] = -1
    scale, bias, mean, var = (a.astype(np.float64).reshape(view) for a in arrays[1:])
    y = (x.astype(np.float64) - mean) / np.sqrt(var + attrs["epsilon"]) * scale + bias
    return [y.astype(x.dtype)]


def _bn_decompose(nb: Any, ins: list[Any], attrs: dict[str, Any], name: str) -> Any:
    """y = x * a + b with per-channel a = scale * rsqrt(variance + eps), b = bias - mean * a."""
    x, scale, bias, mean, var = ins
    axis = _bn_channel_axis(attrs, x.ndim)
    a = nb.multiply(scale, nb.rsqrt(nb.scale(var, 1.0, attrs["epsilon"])))
    b = nb.subtract(bias, nb.multiply(mean, a))
    y = nb.multiply(x, a, axis=axis)
    return nb.emit("add", binary_operands(nb, "add", y, b, axis), name=name)


def _bn_build(nb: Any, call: OpCall) -> Any:
    """CINN's batchnorm returns a list of outputs; at inference (is_test) it is [y]."""
    if not call.args["is_test"]:
        raise FrontendError("batchnorm: argument 'is_test' = False (training statistics) is not supported "
                            "(expected True)")
    return [nb.build_op(call)]


def _bn_attrs(ins: Sequence[TensorType], at: dict[str, Any]) -> dict[str, Any]:
    return {"epsilon": at["epsilon"], "data_layout": at["data_layout"]}


def _bn_cases(dtype: str) -> list[Case]:
    def bn(xs: tuple[Any, ...], c: int, **kw: Any) -> Case:
        params = ([Input((c,), low=0.5, high=1.5) for _ in range(2)]
                  + [Input((c,)), Input((c,), low=0.5, high=2.0)])
        return Case((Input(xs), *params), kw)
    return [bn((2, 3, 4, 5), 3), bn((1, 1, 1, 1), 1), bn(("S0", 4, 3), 4),
            bn((2, 3, 5), 5, data_layout="NHWC"),
            bn((2, 3), 3, epsilon=1e-3)]


register(OpDef("batchnorm", OpPatternKind.kNonFusible, _bn_infer, _bn_numpy, composite=True, arity=5,
               decompose=_bn_decompose,
               signature=Signature(
                   (tensor("x"), tensor("scale"), tensor("bias"), tensor("mean"), tensor("variance"),
                    attr("epsilon", floating, 1e-5), attr("momentum", floating, 0.9),
                    attr("data_layout", one_of("NCHW", "NHWC"), "NCHW"), attr("is_test", boolean, True)),
                   attrs=_bn_attrs, build=_bn_build, methods=("batchnorm", "batch_norm"),
                   doc="Batch normalization at inference: `(x - mean) / sqrt(variance + epsilon) * scale + "
                       "bias` "
                       "per channel; returns [y] as CINN."),
               test=OpTest(testing.FLOATS, _bn_cases, rtol=1e-4, atol=1e-5)))
