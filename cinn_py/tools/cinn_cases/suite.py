"""A CINN op test declaration as data, and its cases (CINN's `TestCaseHelper` product)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Suite:
    """One CINN `TestCaseHelper` class (or a single hand-written test class: one input, no lists).

    `cases()` is CINN's expansion: the product of the non-empty lists among `inputs`, `dtypes` and
    `attrs`, each case the union of one dict from each, over the test's `fixed` constants."""

    file: str
    """CINN's test file (`test/cinn/ops/<file>`)."""
    name: str
    """CINN's class name."""
    builder: str
    """The family in `builders.BUILDERS` that builds, feeds and checks a case."""
    inputs: tuple[dict[str, Any], ...]
    dtypes: tuple[dict[str, Any], ...] = ()
    attrs: tuple[dict[str, Any], ...] = ()
    fixed: dict[str, Any] = field(default_factory=dict)
    """Constants of CINN's test class: the op, input ranges (`low`, `high`), tolerances."""
    custom: tuple[tuple[dict[str, Any], ...], ...] = ()
    """CINN's `_register_custom_attrs` lists (multiplied in after `attrs`)."""

    def cases(self) -> list[dict[str, Any]]:
        lists = [part for part in (self.inputs, self.dtypes, self.attrs, *self.custom) if part]
        return [
            {**self.fixed, **{k: v for d in combo for k, v in d.items()}}
            for combo in itertools.product(*lists)
        ]


def suite(
    file: str,
    name: str,
    builder: str,
    inputs: list[dict[str, Any]],
    dtypes: list[dict[str, Any]] | None = None,
    attrs: list[dict[str, Any]] | None = None,
    custom: list[list[dict[str, Any]]] | None = None,
    **fixed: Any,
) -> Suite:
    """A `Suite` from CINN's lists as they are written (dicts in lists)."""
    return Suite(
        file,
        name,
        builder,
        tuple(inputs),
        tuple(dtypes or ()),
        tuple(attrs or ()),
        dict(fixed),
        tuple(tuple(c) for c in custom or ()),
    )


def shapes(key: str, *dims: list[int]) -> list[dict[str, Any]]:
    """`[{key: dims}, ...]`: CINN's `inputs` lists of one shape each."""
    return [{key: list(d)} for d in dims]


def dtypes(key: str, *names: str, fp16_error: float | None = 1e-3) -> list[dict[str, Any]]:
    """`[{key: name}, ...]`; float16 entries carry CINN's `max_relative_error` (1e-3) where the
    test gives it."""
    out: list[dict[str, Any]] = []
    for n in names:
        entry: dict[str, Any] = {key: n}
        if n == "float16" and fp16_error is not None:
            entry["max_relative_error"] = fp16_error
        out.append(entry)
    return out
