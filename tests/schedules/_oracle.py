"""Differential-test oracle for the block-primitive tests: run a LoweredFunc on numpy inputs.

Uses `cinn_py.interp.run_ir` when it is available; until then, a small fallback that translates
the IR into a Python function (nested `for` loops, C integer division) and runs it serially.
Thread-bound loops run as serial loops, which is the meaning the schedule primitives keep.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from cinn_py import ir
from cinn_py.ir import LoweredFunc


def run(func: LoweredFunc, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    try:
        from cinn_py.interp import run_ir  # noqa: PLC0415
    except ImportError:
        return _FallbackRunner(func).run(inputs)
    return run_ir(func, inputs)


def _cdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _cmod(a: int, b: int) -> int:
    return a - b * _cdiv(a, b)


_MATH = {"exp": math.exp, "log": math.log, "sqrt": math.sqrt, "tanh": math.tanh, "erf": math.erf,
         "abs": abs, "floor": math.floor, "ceil": math.ceil}


class _FallbackRunner:
    def __init__(self, func: LoweredFunc) -> None:
        self.func = func
        self.lines: list[str] = []
        self.names: dict[str, str] = {}

    def py_name(self, name: str) -> str:
        return self.names.setdefault(name, f"v{len(self.names)}_{''.join(c if c.isalnum() else '_' for c in name)}")

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        func = self.func
        env: dict[str, Any] = {"_cdiv": _cdiv, "_cmod": _cmod, "math": math, **{f"m_{k}": v for k, v in _MATH.items()}}
        buffers: dict[str, np.ndarray] = {}
        sym_values: dict[str, int] = {}
        for t in func.inputs:
            arr = inputs[t.name]
            for dim, extent in zip(t.shape, arr.shape):
                if isinstance(dim, ir.Var):
                    sym_values[dim.name] = int(extent)
            buffers[t.buffer.name] = np.array(arr, dtype=t.dtype.to_numpy())
        for var in func.scalar_args:
            env[self.py_name(var.name)] = sym_values[var.name]
        self.sym_values = sym_values
        for t in func.outputs:
            buffers[t.buffer.name] = np.zeros(self._shape(t.shape), t.dtype.to_numpy())
        for node in ir.walk(func.body):
            for t in self._tensors_of(node):
                if t.buffer.name not in buffers:
                    buffers[t.buffer.name] = np.full(self._shape(t.buffer.shape), np.nan
                                                     if t.dtype.is_float else 0, t.dtype.to_numpy())
        for name, arr in buffers.items():
            env[self.py_name(name)] = arr
        self.lines = ["def kernel():"]
        self.stmt(func.body, 1)
        self.lines.append("  pass")
        exec("\n".join(self.lines), env)  # noqa: S102 (test oracle)
        env["kernel"]()
        return {t.name: buffers[t.buffer.name] for t in func.outputs}

    def _shape(self, shape: tuple[ir.Expr, ...]) -> tuple[int, ...]:
        out = []
        for dim in shape:
            code = self.expr(dim)
            out.append(int(eval(code, {"_cdiv": _cdiv, "_cmod": _cmod},  # noqa: S307
                                {self.py_name(k): v for k, v in self.sym_values.items()})))
        return tuple(out)

    @staticmethod
    def _tensors_of(node: Any) -> list[ir.Tensor]:
        if isinstance(node, (ir.Load, ir.Store)):
            return [node.tensor]
        return []

    def emit(self, depth: int, text: str) -> None:
        self.lines.append("  " * depth + text)

    def stmt(self, node: Any, depth: int) -> None:
        if isinstance(node, ir.Block):
            for s in node.stmts:
                self.stmt(s, depth)
        elif isinstance(node, ir.For):
            var = self.py_name(node.loop_var.name)
            lo = self.expr(node.min)
            self.emit(depth, f"for {var} in range({lo}, ({lo}) + ({self.expr(node.extent)})):")
            self.emit(depth + 1, "pass")
            self.stmt(node.body, depth + 1)
        elif isinstance(node, ir.IfThenElse):
            self.emit(depth, f"if {self.expr(node.condition)}:")
            self.emit(depth + 1, "pass")
            self.stmt(node.true_case, depth + 1)
            if node.false_case is not None:
                self.emit(depth, "else:")
                self.emit(depth + 1, "pass")
                self.stmt(node.false_case, depth + 1)
        elif isinstance(node, ir.ScheduleBlockRealize):
            for var, value in zip(node.schedule_block.iter_vars, node.iter_values):
                self.emit(depth, f"{self.py_name(var.name)} = {self.expr(value)}")
            self.stmt(node.schedule_block.body, depth)
        elif isinstance(node, ir.Store):
            idx = ", ".join(self.expr(i) for i in node.indices)
            self.emit(depth, f"{self.py_name(node.tensor.buffer.name)}[({idx},)] = {self.expr(node.value)}")
        elif isinstance(node, ir.Let):
            self.emit(depth, f"{self.py_name(node.symbol.name)} = {self.expr(node.body) if node.body else 0}")
        elif isinstance(node, ir.Evaluate):
            return
        else:
            raise NotImplementedError(type(node).__name__)

    def expr(self, e: Any) -> str:
        if isinstance(e, (ir.IntImm, ir.UIntImm)):
            return str(bool(e.value)) if e.dtype.is_bool else str(e.value)
        if isinstance(e, ir.FloatImm):
            return repr(float(e.value))
        if isinstance(e, ir.Var):
            return self.py_name(e.name)
        if isinstance(e, ir.Load):
            idx = ", ".join(self.expr(i) for i in e.indices)
            return f"{self.py_name(e.tensor.buffer.name)}[({idx},)]"
        if isinstance(e, (ir.Div, ir.Mod)):
            a, b = self.expr(e.a), self.expr(e.b)
            if e.dtype.is_float:
                return f"(({a}) / ({b}))" if isinstance(e, ir.Div) else f"math.fmod({a}, {b})"
            return f"{'_cdiv' if isinstance(e, ir.Div) else '_cmod'}({a}, {b})"
        if isinstance(e, (ir.Min, ir.Max)):
            return f"{'min' if isinstance(e, ir.Min) else 'max'}({self.expr(e.a)}, {self.expr(e.b)})"
        if isinstance(e, (ir.And, ir.Or)):
            op = "and" if isinstance(e, ir.And) else "or"
            return f"(({self.expr(e.a)}) {op} ({self.expr(e.b)}))"
        if isinstance(e, ir.BinaryOp):
            return f"(({self.expr(e.a)}) {e.op_symbol} ({self.expr(e.b)}))"
        if isinstance(e, ir.Minus):
            return f"(-({self.expr(e.v)}))"
        if isinstance(e, ir.Not):
            return f"(not ({self.expr(e.v)}))"
        if isinstance(e, ir.Cast):
            conv = "float" if e.dtype.is_float else "bool" if e.dtype.is_bool else "int"
            return f"{conv}({self.expr(e.v)})"
        if isinstance(e, ir.Select):
            return f"(({self.expr(e.true_value)}) if ({self.expr(e.condition)}) else ({self.expr(e.false_value)}))"
        if isinstance(e, ir.Call) and e.name in _MATH:
            return f"m_{e.name}({', '.join(self.expr(a) for a in e.args)})"
        raise NotImplementedError(type(e).__name__)
