"""Lowering of compute-DSL tensors to the ScheduleBlock AST: `lower(name, tensors) -> LoweredFunc`."""

from cinn_py.lower.ast_gen import lower

__all__ = ["lower"]
