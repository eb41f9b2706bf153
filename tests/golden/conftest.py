"""Collect golden `.ir` files under tests/golden/ as pytest items, one per `// -----` case.

`pytest --update-goldens` rewrites each case's CHECK lines from the actual output (review the
diff before committing). The machinery lives in `cinn_py.tools.testing.golden`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cinn_py.tools.testing import golden


def pytest_collect_file(parent: pytest.Collector, file_path: Path) -> pytest.Collector | None:
    if file_path.suffix == ".ir" and golden.is_golden_file(file_path):
        return GoldenFile.from_parent(parent, path=file_path)
    return None


class GoldenFile(pytest.File):
    def collect(self) -> Iterator[pytest.Item]:
        for case in golden.load_cases(self.path):
            yield GoldenItem.from_parent(self, name=case.name, case=case)


class GoldenItem(pytest.Item):
    def __init__(self, *, case: golden.GoldenCase, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case

    def runtest(self) -> None:
        try:
            if self.config.getoption("--update-goldens"):
                result = golden.run_case(self.case)
                golden.update_case(self.case.path, self.case.index, result.output, result.is_error)
                for node in result.nodes:
                    golden.assert_roundtrip(node)
                return
            golden.check_case(self.case)
        except golden.GoldenSkip as skip:
            pytest.skip(str(skip))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, (golden.GoldenMismatch, AssertionError)):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, self.case.first_line - 1, f"golden {self.path.name}::{self.name}"
