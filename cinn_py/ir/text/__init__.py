"""The IR's text format: the printer (CINN's `IrPrinter` format), the `// decl` header that makes a
print exact, the lexer, and the parser (an expression parser and a statement parser sharing one
token cursor and scope, plus tensor inference for header-less text).

Outside code uses the `cinn_py.ir` facade (`print_ir`, `parse_ir`, ...), not these modules.
"""
