# Type stub for `llvmlite.ir` (llvmlite ships no annotations; its instruction builders are wrapped
# by decorators that hide their return types, so a checker infers `None` for every instruction).
# Classes the code names are declared with the attributes it uses; everything else is `Any`
# through `__getattr__`. Checked against llvmlite 0.50.
from collections.abc import Iterable
from typing import Any

class Type:
    def as_pointer(self, addrspace: int = ...) -> PointerType: ...
    def get_abi_size(self, target_data: Any, context: Any = ...) -> int: ...
    def get_abi_alignment(self, target_data: Any, context: Any = ...) -> int: ...
    def __eq__(self, other: object) -> bool: ...
    def __hash__(self) -> int: ...
    def __getattr__(self, name: str) -> Any: ...

class VoidType(Type):
    def __init__(self) -> None: ...

class IntType(Type):
    width: int
    def __init__(self, bits: int) -> None: ...

class HalfType(Type):
    def __init__(self) -> None: ...

class FloatType(Type):
    def __init__(self) -> None: ...

class DoubleType(Type):
    def __init__(self) -> None: ...

class PointerType(Type):
    pointee: Type
    addrspace: int
    def __init__(self, pointee: Type | None = ..., addrspace: int = ...) -> None: ...

class VectorType(Type):
    element: Type
    count: int
    def __init__(self, element: Type, count: int) -> None: ...

class ArrayType(Type):
    element: Type
    count: int
    def __init__(self, element: Type, count: int) -> None: ...

class LiteralStructType(Type):
    elements: tuple[Type, ...]
    def __init__(self, elements: Iterable[Type], packed: bool = ...) -> None: ...

class FunctionType(Type):
    return_type: Type
    args: tuple[Type, ...]
    def __init__(self, return_type: Type, args: Iterable[Type], var_arg: bool = ...) -> None: ...

class Value:
    type: Type
    name: str
    def __getattr__(self, name: str) -> Any: ...

Undefined: Any

class Constant(Value):
    constant: Any
    def __init__(self, typ: Type, constant: Any) -> None: ...

class Argument(Value):
    attributes: Any

class Block(Value):
    function: Function
    terminator: Any
    is_terminated: bool

class Function(Value):
    module: Module
    args: tuple[Argument, ...]
    attributes: Any
    linkage: str
    blocks: list[Block]
    function_type: FunctionType
    def __init__(self, module: Module, ftype: FunctionType, name: str) -> None: ...
    def append_basic_block(self, name: str = ...) -> Block: ...

class GlobalVariable(Value):
    initializer: Any
    linkage: str
    global_constant: bool
    align: int | None
    def __init__(self, module: Module, typ: Type, name: str, addrspace: int = ...) -> None: ...

class Module:
    name: str
    triple: str
    data_layout: str
    globals: dict[str, Any]
    def __init__(self, name: str = ..., context: Any = ...) -> None: ...
    def get_global(self, name: str) -> Any: ...
    def __getattr__(self, name: str) -> Any: ...

class IRBuilder:
    block: Block
    function: Function
    module: Module
    def __init__(self, block: Block | None = ...) -> None: ...
    # Instructions (add, fadd, icmp_signed, call, load, store, branch, ...): their results are
    # `Value`s or `Any`; llvmlite documents them, its code does not annotate them.
    def __getattr__(self, name: str) -> Any: ...

def __getattr__(name: str) -> Any: ...
