"""Lowering of compute-DSL tensors to the ScheduleBlock AST: `lower(name, tensors) -> LoweredFunc`."""

from cinn_py.lowering.ast_gen import lower

__all__ = ["lower"]
