"""`cinn_py.ir.sanitize`: any name -> a safe, collision-free C / CUDA / LLVM identifier."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cinn_py as cp
from cinn_py.ir.sanitize import (
    C_KEYWORDS, CUDA_RESERVED, MAX_IDENTIFIER_LENGTH, IdentifierMap, is_safe_identifier, sanitize_identifier,
)
from tests.reliability.renaming import rename
from tests.reliability.test_hostile_names import HOSTILE, _bind, _program

C_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@pytest.mark.parametrize("name", ["A", "x0", "my_tensor", "S0", "fn", "reduce_k_1"])
def test_safe_names_are_kept(name: str) -> None:
    assert sanitize_identifier(name) == name


@pytest.mark.parametrize("name", [*HOSTILE.values(), "", "_", "__x", "_Upper", "cinn_buffer_t", "while",
                                  "blockDim", "expf", "L" * (MAX_IDENTIFIER_LENGTH + 1)])
def test_hostile_names_become_safe(name: str) -> None:
    out = sanitize_identifier(name)
    assert is_safe_identifier(out) and C_IDENT.match(out)
    assert out not in C_KEYWORDS | CUDA_RESERVED
    assert len(out) <= MAX_IDENTIFIER_LENGTH
    assert sanitize_identifier(out) == out          # idempotent on its own output
    assert sanitize_identifier(name) == out         # deterministic


def test_readable_part_is_kept() -> None:
    assert sanitize_identifier("my tensor").startswith("my_tensor_")
    assert sanitize_identifier("int").startswith("int_")
    assert sanitize_identifier("0abc").startswith("v_0abc_")


def test_names_that_sanitise_alike_stay_distinct() -> None:
    names = ["a b", "a-b", "a.b", "a  b", "a\nb", "a_b"]
    outs = [sanitize_identifier(n) for n in names]
    assert len(set(outs)) == len(names)
    assert outs[-1] == "a_b"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(min_size=0, max_size=40), min_size=1, max_size=12, unique=True))
def test_identifier_map_is_safe_stable_and_injective(names: list[str]) -> None:
    scope = IdentifierMap()
    scope.reserve("fn_infer_shape")
    first = [scope.get(n) for n in names]
    assert all(is_safe_identifier(i) for i in first)
    assert len(set(first)) == len(names) and "fn_infer_shape" not in first
    assert [scope.get(n) for n in names] == first
    assert all(n in scope for n in names)


def test_identifier_map_resolves_deliberate_collisions() -> None:
    scope = IdentifierMap()
    hostile = scope.get("a b")
    assert scope.get(hostile) != hostile or scope.get("a b") == hostile
    assert scope.get(hostile) != scope.get("a b")   # a user name equal to another's sanitised spelling


def test_type_errors() -> None:
    with pytest.raises(TypeError, match="str"):
        sanitize_identifier(3)  # type: ignore[arg-type]


@pytest.mark.parametrize("key", sorted(HOSTILE))
def test_sanitised_names_compile_with_nvrtc(key: str) -> None:
    """What the CUDA backend gets once it adopts the helper: every hostile name compiles."""
    name = sanitize_identifier(HOSTILE[key])
    func = _bind(rename(_program(), {"A": name, "C": sanitize_identifier(HOSTILE[key] + "_out")},
                        func_name=name))
    code = cp.codegen(func, target="cuda")
    assert code.ptx or code.cubin


def test_reserved_prefix_after_appending_the_hash() -> None:
    """`:cinn` reads as `cinn`, and `cinn_<hash>` would enter the runtime's `cinn_` namespace."""
    assert is_safe_identifier(sanitize_identifier(":cinn"))
    assert not sanitize_identifier(":cinn").startswith("cinn_")
