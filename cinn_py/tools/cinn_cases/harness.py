"""Run CINN's op test cases through `cinn_py.build_and_get_output` on x86 and count them.

    python -m cinn_py.tools.cinn_cases [--file test_relu_op.py] [--max-elements N] [-v]

Each case (a `Suite` expanded as CINN's `TestCaseHelper` does) is built by its family's builder,
compiled and run with `build_and_get_output(program, DefaultHostTarget(), feeds, datas, fetch)`
and compared with the numpy reference as CINN's `OpTest.check_results` compares: exactly for
integer and bool results and where the test asks for `all_equal` (or the op is exact), else
`np.allclose(expected, actual, rtol=max_relative_error, atol=1e-6)` (the test's tolerance, 1e-5
by default; at least 1e-3 for float16 and 1e-2 for bfloat16, a unit of their precision); NaN must
meet NaN. Cases with more than `max_elements` elements in an
input are counted apart as `too large` (CINN runs them on a GPU; `--max-elements` raises it).
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from cinn_py.tools.cinn_cases import builders, builders_layout
from cinn_py.tools.cinn_cases.builders import Built
from cinn_py.tools.cinn_cases.suite import Suite

DEFAULT_MAX_ELEMENTS = 1 << 24
BUILDERS = {**builders.BUILDERS, **builders_layout.BUILDERS}


@dataclass(frozen=True)
class Outcome:
    """One case: `status` is `pass`, `fail` (a wrong value or an exception) or `too large`."""

    suite: Suite
    index: int
    case: dict[str, Any]
    status: str
    detail: str = ""

    @property
    def label(self) -> str:
        return f"{self.suite.file}::{self.suite.name}{self.index}"


def all_suites() -> list[Suite]:
    from cinn_py.tools.cinn_cases import (  # noqa: PLC0415
        suites_binary,
        suites_layout,
        suites_logic,
        suites_logical,
        suites_math,
        suites_misc,
        suites_unary,
    )

    return [
        *suites_unary.SUITES,
        *suites_math.SUITES,
        *suites_binary.SUITES,
        *suites_logic.SUITES,
        *suites_logical.SUITES,
        *suites_misc.SUITES,
        *suites_layout.SUITES,
    ]


def case_ids(suites: list[Suite]) -> Iterator[tuple[Suite, int]]:
    for s in suites:
        for index in range(len(s.cases())):
            yield s, index


def _largest_input(case: dict[str, Any]) -> int:
    """Elements of the case's largest input (`*shape` keys, and each of a `shapes` list)."""
    shapes = [v for k, v in case.items() if k.endswith("shape") and isinstance(v, (list, tuple))]
    shapes += list(case.get("shapes", []))
    return max((int(np.prod(s)) for s in shapes), default=0)


def run_case(s: Suite, index: int, max_elements: int = DEFAULT_MAX_ELEMENTS) -> Outcome:
    """Build, run and check case `index` of suite `s` (deterministic inputs per case)."""
    import cinn_py  # noqa: PLC0415

    case = s.cases()[index]
    if _largest_input(case) > max_elements:
        return Outcome(s, index, case, "too large", f"{_largest_input(case)} elements > {max_elements}")
    rng = np.random.default_rng(zlib.crc32(f"{s.file}:{s.name}:{index}".encode()))
    try:
        built = BUILDERS[s.builder](case, rng)
        got = cinn_py.build_and_get_output(
            built.program, cinn_py.DefaultHostTarget(), built.feeds, built.datas, built.fetch
        )
    except Exception as exc:  # noqa: BLE001 - every exception of a valid CINN case is a failure
        tail = "".join(traceback.format_exception(exc)[-3:]).strip()
        return Outcome(s, index, case, "fail", f"{type(exc).__name__}: {tail}")
    problem = compare(built, got)
    return Outcome(s, index, case, "fail" if problem else "pass", problem or "")


def compare(built: Built, got: list[np.ndarray]) -> str | None:
    """None when every fetched output matches its reference, else what differs (first element)."""
    if len(got) != len(built.expected):
        return f"expected {len(built.expected)} outputs, got {len(got)}"
    for k, (a, b) in enumerate(zip(got, built.expected)):
        a, b = np.asarray(a), np.asarray(b)
        if built.int_values_only and a.dtype.kind in "iu" and b.dtype.kind in "iu":
            a, b = a.astype(np.int64), b.astype(np.int64)
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"output {k}: got {a.dtype}{list(a.shape)}, expected {b.dtype}{list(b.shape)}"
        if built.exact or a.dtype.kind in "biu":
            bad = ~((a == b) | _both_nan(a, b))
        else:
            wa, wb = a.astype(np.float64), b.astype(np.float64)
            with np.errstate(invalid="ignore"):
                bad = ~(
                    (np.abs(wa - wb) <= built.rtol * np.abs(wa) + built.atol) | _both_nan(a, b) | (wa == wb)
                )
        if bad.any():
            where = tuple(int(i) for i in np.argwhere(bad)[0])
            return (
                f"output {k} ({a.dtype}{list(a.shape)}): {int(bad.sum())}/{bad.size} elements differ "
                f"({'exact' if built.exact else f'rtol {built.rtol:g}, atol {built.atol:g}'}); first at "
                f"{where}: got {a[where]!r}, expected {b[where]!r}"
            )
    return None


def _both_nan(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind != "f":
        return np.zeros(a.shape, bool)
    return np.isnan(a) & np.isnan(b)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m cinn_py.tools.cinn_cases",
        description="CINN's op test cases through build_and_get_output on x86",
    )
    p.add_argument("--file", action="append", default=[], help="only this CINN test file (repeatable)")
    p.add_argument(
        "--max-elements",
        type=int,
        default=DEFAULT_MAX_ELEMENTS,
        help=f"skip cases with a larger input (default {DEFAULT_MAX_ELEMENTS})",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="one line per case")
    ns = p.parse_args(argv)
    suites = [s for s in all_suites() if not ns.file or s.file in ns.file]
    counts: dict[str, dict[str, int]] = {}
    failures: list[Outcome] = []
    start = time.monotonic()
    for s, index in case_ids(suites):
        outcome = run_case(s, index, ns.max_elements)
        per_file = counts.setdefault(s.file, {"pass": 0, "fail": 0, "too large": 0})
        per_file[outcome.status] += 1
        if outcome.status == "fail":
            failures.append(outcome)
        if ns.verbose:
            print(f"{outcome.status:9s} {outcome.label} {outcome.case} {outcome.detail[:300]}", flush=True)
    for file, c in sorted(counts.items()):
        print(
            f"{file:40s} pass {c['pass']:4d} / {c['pass'] + c['fail']:4d}"
            + (f"  (too large: {c['too large']})" if c["too large"] else "")
        )
    total = {k: sum(c[k] for c in counts.values()) for k in ("pass", "fail", "too large")}
    print(
        f"CINN op cases: {total['pass']} / {total['pass'] + total['fail']} pass in {len(counts)} test files "
        f"({total['too large']} too large for --max-elements {ns.max_elements}), "
        f"{time.monotonic() - start:.0f} s"
    )
    for f in failures:
        print(f"FAIL {f.label} {f.case}: {f.detail}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
