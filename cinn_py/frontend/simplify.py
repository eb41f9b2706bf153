"""The graph's algebraic rewrites (`simplify`), written with the pattern API of
`cinn_py.frontend.rewrite`; the first graph pass of `optimize`:

    dropout_infer(scale(x, a, c) + broadcast_to(b), p)       (bias-add + dropout, downgrade_in_infer)
                                  -> scale(x, a*s, c*s) + broadcast_to(scale(b, s)),  s = 1 - p
    dropout_infer(x)              -> scale(x, 1 - p)        (inference: dropout is a scale; CINN)
    scale(x, 1, 0)                -> x                      (upscale_in_train dropout disappears)
    scale(scale(x, s1, b1), s2, b2) -> scale(x, s1*s2, b1'*s2 + b2)   (float dtypes)
    x * sigmoid(x), sigmoid(x) * x  -> silu(x)
    transpose(transpose(x, p1), p2) -> transpose(x, p1[p2])  (x when that is the identity)
    reshape(reshape(x, s1), s2)     -> reshape(x, s2)        (x when s2 is x's shape)

So `dropout_infer(add(x, bias))` of a bias-add (Paddle's fused_bias_dropout at inference) is
`add` followed by one `scale`, or just `add` for upscale_in_train, and a chain of scales is one
op. Where the bias-add's other operand is itself a scale (matmul's `alpha`, attention's
1/sqrt(d)), the dropout factor moves through the add: into that scale and onto the bias before
its broadcast, so the full-size tensor is scaled once instead of twice (`bias_dropout`; a
constant bias then folds). Folding scales reassociates float arithmetic (one rounding instead of two): results
agree
with the unfolded program to the dtype's precision, not bit for bit. Every inner op must be
single-use: a transpose whose result is also read elsewhere is kept, not computed twice.
"""

from __future__ import annotations

from typing import Any

from cinn_py.frontend.net_builder import NetBuilder
from cinn_py.frontend.ops.elementwise_base import scalar_of
from cinn_py.frontend.ops.shapes import shapes_equal
from cinn_py.frontend.program import Operator, Program, Variable
from cinn_py.frontend.rewrite import Match, Rewrite, apply_rewrites, op, var


def _dropout_as_scale(nb: NetBuilder, m: Match) -> Variable:
    return nb.emit("scale", [m["x"]], dict(m.root.attrs), name=m.name)


def _is_identity_scale(o: Operator) -> bool:
    return o.attrs["scale"] == 1 and o.attrs["bias"] == 0


def _affine(o: Operator) -> tuple[float, float]:
    """`scale`'s attributes as `x * s + b`."""
    s, b = float(o.attrs["scale"]), float(o.attrs["bias"])
    return (s, b) if o.attrs["bias_after_scale"] else (s, b * s)


def _is_float(o: Operator) -> bool:
    return o.output.dtype.is_float


def _fold_scales(nb: NetBuilder, m: Match) -> Variable:
    s1, b1 = _affine(m.op("inner"))
    s2, b2 = _affine(m.root)
    d = m.root.output.dtype
    attrs: dict[str, Any] = {"scale": scalar_of(s1 * s2, d, "scale"),
                             "bias": scalar_of(b1 * s2 + b2, d, "scale"),
                             "bias_after_scale": True}
    return nb.emit("scale", [m["x"]], attrs, name=m.name)


def _fold_transposes(nb: NetBuilder, m: Match) -> Variable:
    inner, outer = m.op("inner").attrs["perm"], m.root.attrs["perm"]
    perm = tuple(inner[a] for a in outer)  # output axis k = inner's output axis outer[k]
    if perm == tuple(range(len(perm))):
        return m["x"]
    return nb.emit("transpose", [m["x"]], {"perm": perm}, name=m.name)


def _fold_reshapes(nb: NetBuilder, m: Match) -> Variable:
    x, shape = m["x"], m.root.output.shape
    if shapes_equal(x.shape, shape):
        return x
    return nb.emit("reshape", [x], {"shape": shape}, name=m.name)


def _is_dropout_scaling(o: Operator) -> bool:
    return o.output.dtype.is_float and o.attrs["scale"] != 1


def _bias_dropout(nb: NetBuilder, m: Match) -> Variable:
    """`(x * a + c + bias) * s` as `x * (a*s) + c*s + bias*s`, the bias scaled before its broadcast."""
    s = float(m.root.attrs["scale"])
    a, c = _affine(m.op("xs"))
    d = m.root.output.dtype
    x = nb.emit("scale", [m["x"]],
                {"scale": scalar_of(a * s, d, "scale"), "bias": scalar_of(c * s, d, "scale"),
                                    "bias_after_scale": True})
    bias = nb.emit("scale", [m["b"]], {"scale": scalar_of(s, d, "scale"), "bias": scalar_of(0, d, "scale"),
                                       "bias_after_scale": True})
    bias = nb.emit("broadcast_to", [bias], dict(m.op("bb").attrs))
    add = m.op("add")
    operands = [x, bias] if add.inputs[0] is m.op("xs").output else [bias, x]
    return nb.emit("add", operands, dict(add.attrs), name=m.name)


BIAS_DROPOUT = Rewrite("bias_dropout", op("dropout_infer", op(
    "add", op("scale", var("x"), name="xs", where=_is_float), op("broadcast_to", var("b"), name="bb"),
    name="add", commutative=True), where=_is_dropout_scaling), _bias_dropout)
DROPOUT_AS_SCALE = Rewrite("dropout_as_scale", op("dropout_infer", var("x")), _dropout_as_scale)
IDENTITY_SCALE = Rewrite("identity_scale", op("scale", var("x"), where=_is_identity_scale),
                         lambda nb, m: m["x"])
FOLD_SCALES = Rewrite("fold_scales", op("scale", op("scale", var("x"), name="inner"), where=_is_float),
                      _fold_scales)
SILU = Rewrite("silu", op("multiply", var("x"), op("sigmoid", var("x")), commutative=True),
               lambda nb, m: nb.emit("silu", [m["x"]], name=m.name))
FOLD_TRANSPOSES = Rewrite("fold_transposes", op("transpose", op("transpose", var("x"), name="inner")),
                          _fold_transposes)
FOLD_RESHAPES = Rewrite("fold_reshapes", op("reshape", op("reshape", var("x"))), _fold_reshapes)

RULES: tuple[Rewrite, ...] = (BIAS_DROPOUT, DROPOUT_AS_SCALE, IDENTITY_SCALE, FOLD_SCALES, SILU,
                              FOLD_TRANSPOSES, FOLD_RESHAPES)


def simplify(program: Program) -> Program:
    """`program` with `RULES` applied to a fixpoint (see the module docstring)."""
    return apply_rewrites(program, RULES)
