"""Identifier sanitising for code generators: any user name -> a safe C / CUDA / LLVM name.

IR names (function, tensor, buffer, block, variable names) come from users and may contain
spaces, quotes, comment openers (`*/`, `//`), newlines, non-ASCII letters, or be C keywords or
CUDA builtins (`int`, `threadIdx`). A backend must never paste such a name into source text.

`sanitize_identifier(name)` returns `name` itself when it is already safe (a C identifier that
is not a keyword, builtin, or reserved `__x` / `_X` spelling, and not too long), else a safe
spelling that keeps the readable part and appends a short hash of the original, so different
names stay different (`"a b"` -> `a_b_9f86d081`, `"a_b"` stays `a_b`). `IdentifierMap` assigns
names within one scope (one generated module) and guarantees no two user names map to the same
identifier, even in the unlikely case of a hash collision or a user name equal to another
name's sanitised spelling.

Differs from CINN, whose codegen prints names verbatim (the frontend only creates identifiers).
"""

from __future__ import annotations

import hashlib
import re

__all__ = ["C_KEYWORDS", "CUDA_RESERVED", "IdentifierMap", "MAX_IDENTIFIER_LENGTH", "is_safe_identifier",
           "sanitize_identifier"]

MAX_IDENTIFIER_LENGTH = 96

C_KEYWORDS = frozenset("""
    alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t char32_t
    class compl concept const consteval constexpr constinit const_cast continue co_await co_return co_yield
    decltype default delete do double dynamic_cast else enum explicit export extern false float for friend
    goto if inline int long mutable namespace new noexcept not not_eq nullptr operator or or_eq private
    protected public register reinterpret_cast requires restrict return short signed sizeof static
    static_assert static_cast struct switch template this thread_local throw true try typedef typeid
    typename union unsigned using virtual void volatile wchar_t while xor xor_eq
    _Alignas _Alignof _Atomic _Bool _Complex _Generic _Imaginary _Noreturn _Static_assert _Thread_local
    main NULL
""".split())

# CUDA built-in variables, types and functions a kernel body may refer to, and names of the C /
# C++ runtime and of the generated code's helpers (math functions, half types).
CUDA_RESERVED = frozenset("""
    threadIdx blockIdx blockDim gridDim warpSize dim3 uint3 float2 float3 float4 int2 int3 int4
    half half2 __half __half2 nv_bfloat16 __nv_bfloat16 bfloat16 float16 int8_t int16_t int32_t int64_t
    uint8_t uint16_t uint32_t uint64_t size_t ptrdiff_t std
    printf malloc free memcpy memset abort exit assert
    exp expf log logf sqrt sqrtf rsqrt rsqrtf tanh tanhf erf erff pow powf fabs fabsf floor floorf ceil ceilf
    sin sinf cos cosf max min fmax fmaxf fmin fminf isnan isinf isfinite round roundf trunc truncf
""".split())

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_INVALID = re.compile(r"[^A-Za-z0-9_]+")
_RESERVED_PREFIXES = ("__", "cinn_", "llvm.", "nvvm")


def is_safe_identifier(name: str, reserved: frozenset[str] = C_KEYWORDS | CUDA_RESERVED) -> bool:
    """True when `name` can be printed as is in C, CUDA C and LLVM IR."""
    return (isinstance(name, str) and _IDENT.match(name) is not None and name not in reserved
            and not name.startswith(_RESERVED_PREFIXES) and not re.match(r"_[A-Z]", name)
            and len(name) <= MAX_IDENTIFIER_LENGTH)


def _digest(name: str) -> str:
    return hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]


def sanitize_identifier(name: str, reserved: frozenset[str] = C_KEYWORDS | CUDA_RESERVED) -> str:
    """A safe identifier for `name`: `name` itself when safe, else `<readable part>_<hash8>`.

    Raises:
        TypeError: `name` is not a str.
    """
    if not isinstance(name, str):
        raise TypeError(f"sanitize_identifier: expected a str, got {type(name).__name__}")
    if is_safe_identifier(name, reserved):
        return name
    readable = _INVALID.sub("_", name).strip("_")
    readable = re.sub(r"_+", "_", readable)[:MAX_IDENTIFIER_LENGTH - 12]
    # Check the prefix on `readable_` too: "cinn" + "_<hash>" would start with "cinn_".
    if not readable or not readable[0].isalpha() or f"{readable}_".startswith(_RESERVED_PREFIXES):
        readable = "v" + ("_" + readable if readable else "")
    return f"{readable}_{_digest(name)}"


class IdentifierMap:
    """Stable, collision-free identifiers for the names of one scope (one generated module).

    `get(name)` returns the same identifier for the same name every time; two different names
    never share one. Identifiers already used by the generator itself can be reserved first.
    """

    def __init__(self, reserved: frozenset[str] = C_KEYWORDS | CUDA_RESERVED) -> None:
        self._reserved = reserved
        self._by_name: dict[str, str] = {}
        self._taken: set[str] = set()

    def reserve(self, identifier: str) -> None:
        """Keep `identifier` (e.g. a generated helper's name) away from user names."""
        self._taken.add(identifier)

    def get(self, name: str) -> str:
        """The identifier of `name` in this scope."""
        found = self._by_name.get(name)
        if found is not None:
            return found
        candidate = base = sanitize_identifier(name, self._reserved)
        counter = 0
        while candidate in self._taken:
            counter += 1
            candidate = f"{base}_{counter}"
        self._by_name[name] = candidate
        self._taken.add(candidate)
        return candidate

    def __contains__(self, name: object) -> bool:
        return name in self._by_name
