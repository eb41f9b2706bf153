"""Out-of-bounds accesses never reach compiled code silently.

`lower` proves every affine index in range (rule-based analyzer, islpy for the rest) and rejects
what is out of bounds for every value of the symbolic dims with a LoweringError naming the tensor,
the index and its range. What it cannot decide (gathers, symbolic offsets) is guarded in a
checked build: the kernel call raises OutOfBoundsAccessError instead of touching memory outside
the tensor (unchecked, `X[i + 1]` on a length-4 tensor returned garbage and a gather at 10**8
segfaulted).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import cinn_py as cp
from cinn_py.analysis.access_bounds import Verdict, check_access_bounds
from cinn_py.diagnostics import LoweringError, OutOfBoundsAccessError
from cinn_py.runtime import checked
from schedules import IRSchedule


def _lower1(body: Callable[..., object], shape: tuple[object, ...] = (4,), xshape: tuple[object, ...] = (4,)
            ) -> cp.ir.LoweredFunc:
    X = cp.placeholder(xshape, "float32", "X")
    Y = cp.compute(shape, lambda *ax: body(X, *ax), "Y")
    return cp.lower("fn", [X, Y])


@pytest.mark.parametrize(("body", "index", "span"), [
    (lambda X, i: X[i + 1], r"\(i \+ 1\)", r"\[1, 4\]"),
    (lambda X, i: X[i + 10**8], r"\(i \+ 100000000\)", r"\[100000000, 100000003\]"),
    (lambda X, i: X[i - 1], r"\(i - 1\)", r"\[-1, 2\]"),
    (lambda X, i: X[3 - i * 2], r"", r""),
    (lambda X, i: cp.select(i >= 0, X[i - 1], 0.0), r"\(i - 1\)", r""),
])
def test_lower_rejects_provably_out_of_bounds_reads(body: Callable[..., object], index: str,
                                                    span: str) -> None:
    with pytest.raises(LoweringError, match=rf"lower\('fn'\): the read of 'X' in block 'Y' is out of bounds: "
                                            rf"index 0 is {index}.*{span}.*dimension 0 of 'X' has extent "
                                            r"4") as err:
        _lower1(body)
    assert "^^^^" in str(err.value)  # the offending store is marked in the printed function


def test_lower_rejects_out_of_bounds_for_every_symbolic_value() -> None:
    S = cp.sym("S")
    with pytest.raises(LoweringError, match=r"index 0 is \(i \+ 1ll\), which takes values in \[1ll, S\], "
                                            r"but dimension 0 of 'X' has extent S"):
        _lower1(lambda X, i: X[i + 1], (S,), (S,))


def test_lower_rejects_a_reduce_axis_longer_than_the_tensor() -> None:
    X = cp.placeholder((8, 4), "float32", "X")
    k = cp.reduce_axis(5, "k")
    with pytest.raises(LoweringError,
                       match="index 1 is k, which takes values in \\[0, 4\\], but dimension 1"):
        cp.lower("fn", [X, cp.compute((8,), lambda i: cp.reduce_sum(X[i, k], [k]), "Y")])


@pytest.mark.parametrize("body", [
    lambda X, i: cp.select(i > 0, X[i - 1], 0.0),                  # guarded halo read
    lambda X, i: cp.select(i < 3, X[i + 1], X[i]),
    lambda X, i: X[3 - i],                                         # reversed
    lambda X, i: X[(i * 5) % 4],
    lambda X, i: cp.maximum(X[cp.minimum(i + 1, 3)], X[i]),        # clamped
])
def test_lower_accepts_accesses_proven_in_range(body: Callable[..., object]) -> None:
    func = _lower1(body)
    assert check_access_bounds(func) == []


def test_undecidable_accesses_are_left_to_checked_builds() -> None:
    S = cp.sym("S")
    X = cp.placeholder((S,), "float32", "X")
    sym_offset = cp.lower("a", [X, cp.compute((S,), lambda i: X[2], "Y")])  # fine only when S > 2
    X = cp.placeholder((4,), "float32", "X")
    index = cp.placeholder((4,), "int32", "I")
    gather = cp.lower("b", [X, index, cp.compute((4,), lambda i: X[index[i]], "Y")])
    for func, tensor in ((sym_offset, "X"), (gather, "X")):
        verdicts = [(c.tensor.name, c.verdict) for c in check_access_bounds(func)]
        assert verdicts == [(tensor, Verdict.UNKNOWN)]


def test_lower_keeps_the_seed_and_padding_programs() -> None:
    X = cp.placeholder((6,), "float32", "X")
    padded = cp.compute((8,), lambda i: cp.select((i >= 1) & (i < 7), X[i - 1], 0.0), "P")
    func = cp.lower("pad", [X, padded])
    out = cp.build(func, "x86")(np.arange(6, dtype=np.float32))
    np.testing.assert_array_equal(out, [0, 0, 1, 2, 3, 4, 5, 0])


# -- checked builds (x86) ---------------------------------------------------------------------------
def _gather() -> cp.ir.LoweredFunc:
    X = cp.placeholder((4,), "float32", "X")
    index = cp.placeholder((4,), "int32", "I")
    return cp.lower("gather", [X, index, cp.compute((4,), lambda i: X[index[i]], "Y")])


@pytest.mark.parametrize("bad", [4, 7, -1, 10**8, -(2**31)])
def test_checked_gather_raises_instead_of_reading_outside(bad: int) -> None:
    kernel = cp.build(_gather(), "x86", checked=True)
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(kernel(x, np.array([3, 2, 1, 0], np.int32)), [3, 2, 1, 0])
    with pytest.raises(OutOfBoundsAccessError,
                       match=rf"kernel 'gather' \(checked build\): the read of X\[I\[i\]\]: "
                                                     r"index 0 \(I\[i\]\) is outside \[0, 4\) of 'X': the "
                                                     r"index "
                                                     rf"was {bad}; the access was not made"):
        kernel(x, np.array([0, bad, 1, 0], np.int32))
    assert isinstance(OutOfBoundsAccessError("x"), IndexError)


def test_checked_symbolic_offset_raises_for_small_dims_only() -> None:
    S = cp.sym("S")
    X = cp.placeholder((S,), "float32", "X")
    kernel = cp.build(cp.lower("offset", [X, cp.compute((S,), lambda i: X[2], "Y")]), "x86", checked=True)
    np.testing.assert_array_equal(kernel(np.arange(5, dtype=np.float32)), np.full(5, 2, np.float32))
    with pytest.raises(OutOfBoundsAccessError, match=r"read of X\[2ll\].*outside \[0, S\).*the index was 2"):
        kernel(np.arange(2, dtype=np.float32))


def test_checked_write_in_a_parallel_loop() -> None:
    X = cp.placeholder((64,), "float32", "X")
    index = cp.placeholder((64,), "int32", "I")
    sch = IRSchedule(cp.lower("scatter", [X, index, cp.compute((64,), lambda i: X[index[i]] * 2.0, "Y")]))
    sch.parallel(sch.get_loops("Y")[0])
    kernel = cp.build(sch, "x86", checked=True, num_threads=2)
    perm = np.arange(64, dtype=np.int32)[::-1].copy()
    np.testing.assert_array_equal(kernel(np.arange(64, dtype=np.float32), perm), perm.astype(np.float32) * 2)
    perm[40] = 999
    with pytest.raises(OutOfBoundsAccessError, match="the index was 999"):
        kernel(np.arange(64, dtype=np.float32), perm)


def test_checked_builds_leave_out_checks_the_loops_prove() -> None:
    X = cp.placeholder((4, 8), "float32", "X")
    func = cp.lower("plain", [X, cp.compute((4, 8), lambda i, j: X[i, j] + 1.0, "Y")])
    assert "oob" not in cp.codegen(func, "x86", checked=True).unoptimized_ir
    assert "oob" in cp.codegen(_gather(), "x86", checked=True).unoptimized_ir
    assert "oob" not in cp.codegen(_gather(), "x86", checked=False).unoptimized_ir


def test_checked_kernels_keep_their_checks_through_the_disk_cache(cache_dir: Path) -> None:
    import codegen.llvm as x86  # noqa: PLC0415

    func = _gather()
    cp.build(func, "x86", checked=True)
    x86.CACHE.clear_memory()
    kernel = cp.build(func, "x86", checked=True)
    assert kernel.from_cache and kernel.checks
    with pytest.raises(OutOfBoundsAccessError, match="the index was 9"):
        kernel(np.arange(4, dtype=np.float32), np.array([9, 0, 0, 0], np.int32))
    assert cp.build(func, "x86", checked=False).checks is None  # a different cache entry


def test_unchecked_is_the_user_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checked, "_default", None)
    monkeypatch.delenv("CINN_PY_CHECKED", raising=False)
    assert checked.default_checked() is False
    monkeypatch.setenv("CINN_PY_CHECKED", "1")
    assert checked.default_checked() is True
    monkeypatch.setenv("CINN_PY_CHECKED", "maybe")
    with pytest.raises(ValueError, match="CINN_PY_CHECKED must be one of"):
        checked.default_checked()
    with pytest.raises(TypeError, match="checked: expected a bool or None, got int"):
        cp.build(_gather(), "x86", checked=1)


# -- checked builds (CUDA: NVRTC here, launches on a GPU machine) ---------------------------------
@pytest.mark.parametrize("schedule", [None, "auto"])
def test_checked_cuda_guards_the_gather_only(schedule: str | None) -> None:
    code = cp.codegen(_gather(), "cuda", checked=True, schedule=schedule)
    guarded = [line for line in code.source.splitlines() if "cinn_checked_index(" in line]
    assert len(guarded) == 1 and guarded[0].count("cinn_checked_index(") == 1  # thread/loop indices proven
    assert code.checks is not None and len(code.checks) == 1
    assert re.fullmatch(r"access X\[I\[.+\]\]: index 0 \(I\[.+\]\) is outside \[0, 4\) of 'X'",
                        code.checks[0])
    assert code.cubin  # NVRTC accepts the guarded kernel and the runtime header's cinn_oob_status
    unchecked = cp.codegen(_gather(), "cuda", schedule=schedule)
    assert "cinn_checked_index(" not in unchecked.source and unchecked.checks is None


@pytest.mark.cuda
def test_checked_cuda_launch_raises() -> None:
    kernel = cp.build(_gather(), "cuda", checked=True, schedule="auto")
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(kernel(x, np.array([3, 2, 1, 0], np.int32)), [3, 2, 1, 0])
    with pytest.raises(OutOfBoundsAccessError, match="the index was 9"):
        kernel(x, np.array([0, 9, 1, 0], np.int32))
    # status was cleared
    np.testing.assert_array_equal(kernel(x, np.array([1, 1, 1, 1], np.int32)), [1, 1, 1, 1])


def test_checked_cuda_host_raises_after_a_failed_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """The host side of a checked CUDA kernel with the PyCUDA fake: the device status the kernel
    would write (check 0 failed at index 9) becomes an OutOfBoundsAccessError, and is cleared."""
    from codegen.cuda import build_cuda  # noqa: PLC0415
    from codegen.cuda import kernel as kernel_mod  # noqa: PLC0415
    from tests.codegen.cuda.test_kernel_host import OOB_STATUS_PTR, fake_pycuda  # noqa: PLC0415

    memory = {OOB_STATUS_PTR: np.zeros(2, np.int64)}
    monkeypatch.setattr(kernel_mod, "_pycuda", lambda: fake_pycuda([], globals_=memory))
    kernel = build_cuda(cp.auto_schedule(_gather(), "cuda").func, arch="sm_90", checked=True)
    x, index = np.arange(4, dtype=np.float32), np.array([0, 9, 1, 0], np.int32)
    kernel(x, index)  # status 0: no error
    memory[OOB_STATUS_PTR][...] = [1, 9]  # what cinn_checked_index records for check 0
    with pytest.raises(OutOfBoundsAccessError,
                       match=r"kernel 'gather' \(checked build\): the access X\[I\[.+\]\]: "
                                                     r"index 0 .* the index was 9; the access went to "
                                                     r"element 0"):
        kernel(x, index)
    assert memory[OOB_STATUS_PTR].tolist() == [0, 0]
    kernel(x, index)
