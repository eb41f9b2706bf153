"""CINN's public gradient methods of NetBuilder (`net_builder.h`'s decomposer ops): `relu_grad`,
`elementwise_add_grad`, `conv2d_grad`, `batch_norm_grad` (`pool2d_grad` is an op of its own).

CINN decomposes them into primitive ops before fusion; here each method emits those primitives
directly, with CINN's argument names, defaults and output lists, so a program built with them is
an ordinary program of registered ops (the oracle, fusion and autodiff need nothing new).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from cinn_py.frontend.ops.base import FrontendError
from cinn_py.frontend.ops.elementwise_base import broadcast_pair
from cinn_py.frontend.ops.shapes import fmt_shape, numel, shapes_equal

if TYPE_CHECKING:
    from cinn_py.frontend.net_builder import NetBuilder
    from cinn_py.frontend.program import Variable


class GradMethods:
    """Mixed into NetBuilder; `self` is the builder."""

    def relu_grad(self, dout: Any, x: Any) -> Any:
        """dout where x > 0, else 0 (CINN's relu_grad select; `x` may be relu's input or output)."""
        nb: Any = self
        dout, x = nb.variable(dout, "relu_grad", "dout"), nb.variable(x, "relu_grad", "x")
        if not shapes_equal(dout.shape, x.shape) or dout.dtype != x.dtype:
            raise FrontendError(f"relu_grad: arguments 'dout' and 'x' must have one shape and dtype, got "
                                f"{dout.dtype}{fmt_shape(dout.shape)} and {x.dtype}{fmt_shape(x.shape)}")
        zero = nb.fill_constant([], 0, dtype=str(x.dtype))
        zeros = nb.broadcast_to(zero, list(x.shape), []) if x.ndim else zero
        return nb.select(nb.greater_than(x, zeros), dout, zeros)

    def elementwise_add_grad(self, dout: Any, x: Any, y: Any, axis: int = -1) -> list[Any]:
        """[dx, dy]: dout summed down to each operand's shape under CINN's `axis` broadcast rule."""
        nb: Any = self
        method = "elementwise_add_grad"
        dout, x, y = (nb.variable(v, method, n) for v, n in ((dout, "dout"), (x, "x"), (y, "y")))
        out_shape, x_axes, y_axes = broadcast_pair(method, x.shape, y.shape, axis)
        if not shapes_equal(dout.shape, out_shape):
            raise FrontendError(f"{method}: argument 'dout' must have the shape of x + y "
                                f"{fmt_shape(out_shape)}, "
                                f"got {fmt_shape(dout.shape)}")
        return [sum_to(nb, dout, x, x_axes), sum_to(nb, dout, y, y_axes)]

    def conv2d_grad(self, dy: Any, x: Any, w: Any, strides: Sequence[int] = (1, 1),
                    paddings: Sequence[int] = (0, 0), dilations: Sequence[int] = (1, 1), groups: int = 1,
                    data_format: str = "NCHW", padding_algorithm: str = "EXPLICIT") -> list[Any]:
        """[dx, dw] of conv2d(x, w, ...) for the output gradient dy."""
        nb: Any = self
        x, w = nb.variable(x, "conv2d_grad", "x"), nb.variable(w, "conv2d_grad", "w")
        if x.ndim != 4 or w.ndim != 4:
            raise FrontendError(f"conv2d_grad: arguments 'x' and 'w' must be 4-d, got {fmt_shape(x.shape)} "
                                "and "
                                f"{fmt_shape(w.shape)}")
        spatial = [x.shape[2], x.shape[3]] if data_format == "NCHW" else [x.shape[1], x.shape[2]]
        common = {"strides": list(strides), "paddings": list(paddings), "dilations": list(dilations),
                  "groups": groups, "data_format": data_format, "padding_algorithm": padding_algorithm}
        dx = nb.conv2d_grad_data(dy, w, spatial, **common)
        dw = nb.conv2d_grad_filter(x, dy, [w.shape[2], w.shape[3]], **common)  # w is OIHW in both layouts
        return [dx, dw]

    def batch_norm_grad(self, dy: Any, x: Any, scale: Any, save_mean: Any, save_variance: Any,
                        epsilon: float = 1e-5, data_layout: str = "NCHW") -> list[Any]:
        """[x_grad, scale_grad, bias_grad] of training batch norm, from the batch mean and variance
        the forward saved (CINN's decomposer: inv = rsqrt(var + eps), xhat = (x - mean) * inv)."""
        nb: Any = self
        method = "batch_norm_grad"
        dy, x = nb.variable(dy, method, "dy"), nb.variable(x, method, "x")
        if data_layout not in ("NCHW", "NHWC") or x.ndim < 2:
            raise FrontendError(f"{method}: expected data_layout NCHW or NHWC and x of rank >= 2, got "
                                f"{data_layout!r} and {fmt_shape(x.shape)}")
        channel = 1 if data_layout == "NCHW" else x.ndim - 1
        others = [a for a in range(x.ndim) if a != channel]
        count = numel([x.shape[a] for a in others])
        if not isinstance(count, int):
            raise FrontendError(f"{method}: the element count per channel of x {fmt_shape(x.shape)} "
                                "must be static")

        def per_channel(v: Any) -> Any:
            return nb.broadcast_to(v, list(x.shape), [channel])

        inv = nb.rsqrt(nb.scale(save_variance, 1.0, float(epsilon)))
        centered = nb.subtract(x, per_channel(save_mean))
        bias_grad = nb.reduce_sum(dy, others)
        dot = nb.reduce_sum(nb.multiply(dy, centered), others)
        scale_grad = nb.multiply(dot, inv)
        # x_grad = scale * inv * (dy - bias_grad / n - centered * inv^2 * dot / n)
        mean_dy = nb.scale(bias_grad, 1.0 / count)
        mean_dot = nb.scale(nb.multiply(dot, nb.multiply(inv, inv)), 1.0 / count)
        inner = nb.subtract(nb.subtract(dy, per_channel(mean_dy)),
                            nb.multiply(centered, per_channel(mean_dot)))
        x_grad = nb.multiply(inner, per_channel(nb.multiply(scale, inv)))
        return [x_grad, scale_grad, bias_grad]


def sum_to(nb: NetBuilder, g: Variable, target: Variable, axes_map: tuple[int, ...]) -> Variable:
    """Sum `g` down to `target`'s shape; target dim d sits at g's axis axes_map[d] (the
    unbroadcasting of a binary operand: elementwise_add_grad here, broadcast_to's gradient rule
    in `cinn_py.autodiff`)."""
    mapped = dict(zip(axes_map, range(len(axes_map))))
    axes = [a for a in range(g.ndim) if a not in mapped
            or (target.shape[mapped[a]] == 1 and not (isinstance(g.shape[a], int) and g.shape[a] == 1))]
    if axes:
        g = nb.reduce_sum(g, axes, keep_dim=True)
    if shapes_equal(g.shape, target.shape):
        return g
    return nb.reshape(g, list(target.shape))
