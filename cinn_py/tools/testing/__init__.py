"""Test helpers shared by the test suite and the CLI: golden `.ir` cases and IR assertions."""

from cinn_py.tools.testing.asserts import assert_ir_equal, ir_diff

__all__ = ["assert_ir_equal", "ir_diff"]
