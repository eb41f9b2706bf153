"""Decomposition of composite ops into primitive ops (Paddle's prim `decomp_rule/composite.h`,
old CINN `frontend/decomposer/*`).

    softmax(x, axes)    = e / reduce_sum(e, axes, keep_dim)       e = exp(x - reduce_max(x, axes, keep_dim))
    rms_norm(x, w, eps) = x * rsqrt(reduce_mean(x * x, axes, keepdim) + eps) * w
    layer_norm(x, g, b) = xc * rsqrt(reduce_mean(xc * xc, axes, keepdim) + eps) * g + b,   xc = x - mean(x)
    gelu(x)             = x * (0.5 + 0.5 * erf(x / sqrt(2)))
    gelu(x, approx)     = x * (0.5 + 0.5 * tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))

Subtracting the max keeps `exp` from overflowing (what every softmax kernel does). The rewritten
program keeps every variable name; a composite op's output is the name of its last primitive
op, and its intermediates are named by the builder (`reduce_max_7`, ...). `+ eps` and the gelu
constants are `scale` ops, so no constant tensors appear.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from cinn_py.frontend.net_builder import NetBuilder
from cinn_py.frontend.ops import get_op
from cinn_py.frontend.program import Operator, Program, Variable
from cinn_py.frontend.rewrite import Match, Rewrite, apply_rewrites, op

Rule = Callable[[NetBuilder, list[Variable], dict[str, Any], str], Variable]


def _final(nb: NetBuilder, op: str, x: Variable, y: Variable, name: str) -> Variable:
    """The last op of a decomposition: it takes the composite op's output name."""
    return nb.emit(op, nb.operands(op, x, y), name=name)


def _softmax(nb: NetBuilder, ins: list[Variable], attrs: dict[str, Any], name: str) -> Variable:
    (x,) = ins
    axes = list(attrs["axes"])
    m = nb.reduce_max(x, axes, keep_dim=True)
    e = nb.exp(nb.subtract(x, m))
    s = nb.reduce_sum(e, axes, keep_dim=True)
    return _final(nb, "divide", e, s, name)


def _norm_axes(x: Variable, attrs: dict[str, Any]) -> list[int]:
    return list(range(attrs["begin_norm_axis"], x.ndim))


def _rms_norm(nb: NetBuilder, ins: list[Variable], attrs: dict[str, Any], name: str) -> Variable:
    x, params = ins[0], dict(zip(attrs["param_names"], ins[1:]))
    ms = nb.reduce_mean(nb.multiply(x, x), _norm_axes(x, attrs), keep_dim=True)
    r = nb.rsqrt(nb.scale(ms, 1.0, attrs["eps"]))
    if "weight" not in params:
        return _final(nb, "multiply", x, r, name)
    return _final(nb, "multiply", nb.multiply(x, r), params["weight"], name)


def _layer_norm(nb: NetBuilder, ins: list[Variable], attrs: dict[str, Any], name: str) -> Variable:
    x, params = ins[0], dict(zip(attrs["param_names"], ins[1:]))
    axes = _norm_axes(x, attrs)
    xc = nb.subtract(x, nb.reduce_mean(x, axes, keep_dim=True))
    var = nb.reduce_mean(nb.multiply(xc, xc), axes, keep_dim=True)
    r = nb.rsqrt(nb.scale(var, 1.0, attrs["eps"]))
    steps: list[tuple[str, Variable]] = [("multiply", r)]
    if "gamma" in params:
        steps.append(("multiply", params["gamma"]))
    if "beta" in params:
        steps.append(("add", params["beta"]))
    y = xc
    for k, (op_name, operand) in enumerate(steps):
        y = (_final(nb, op_name, y, operand, name) if k == len(steps) - 1
             else nb.emit(op_name, nb.operands(op_name, y, operand)))
    return y


def _gelu(nb: NetBuilder, ins: list[Variable], attrs: dict[str, Any], name: str) -> Variable:
    (x,) = ins
    if attrs["approximate"]:
        cube = nb.multiply(x, nb.multiply(x, x))
        inner = nb.scale(nb.add(x, nb.scale(cube, 0.044715)), math.sqrt(2.0 / math.pi))
        t = nb.tanh(inner)
    else:
        t = nb.erf(nb.scale(x, 1.0 / math.sqrt(2.0)))
    return _final(nb, "multiply", x, nb.scale(t, 0.5, 0.5), name)


RULES: dict[str, Rule] = {"softmax": _softmax, "rms_norm": _rms_norm, "layer_norm": _layer_norm,
                          "gelu": _gelu}


def _decompose_op(nb: NetBuilder, m: Match) -> Variable:
    rule = RULES.get(m.root.type) or get_op(m.root.type).decompose
    if rule is None:  # a composite op needs a rule here or its OpDef.decompose
        raise NotImplementedError(f"decompose: composite op '{m.root.type}' has no decomposition rule")
    return rule(nb, list(m.operands), dict(m.root.attrs), m.name)


def _is_composite(o: Operator) -> bool:
    return get_op(o.type).composite


# any composite op, whatever its operands; a rule that emits composite ops is decomposed again
DECOMPOSE = Rewrite("decompose", op(None, where=_is_composite, any_inputs=True), _decompose_op)


def decompose(program: Program) -> Program:
    """A program with every composite op replaced by primitive ops (variable names kept)."""
    return apply_rewrites(program, [DECOMPOSE])
