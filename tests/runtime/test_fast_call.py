"""The cached validation path (`ArgValidator.fast_call`) used for repeated calls."""

from __future__ import annotations

import numpy as np
import pytest

from cinn_py import ir
from cinn_py.ir import dtype as dt
from cinn_py.runtime.args import ArgValidator, data_ptr


def _func(n: int | ir.Var = 8) -> ir.LoweredFunc:
    dim = ir.const(n) if isinstance(n, int) else n
    A = ir.make_tensor("A", (dim,), dt.float32)
    B = ir.make_tensor("B", (dim,), dt.float32)
    args = (ir.Argument(ir.ArgIO.INPUT, A), ir.Argument(ir.ArgIO.OUTPUT, B))
    if isinstance(n, ir.Var):
        args += (ir.Argument(ir.ArgIO.SCALAR, var=n),)
    return ir.LoweredFunc("f", args, ir.Block(()))


def test_first_call_is_never_fast_then_same_signature_is() -> None:
    v = ArgValidator(_func())
    a, out = np.ones(8, np.float32), np.empty(8, np.float32)
    assert v.fast_call((a,), out) is None
    v.validate((a,), out)
    fast = v.fast_call((np.zeros(8, np.float32),), out)
    assert fast is not None and fast.output_ptrs == (out.ctypes.data,) and fast.output_shapes == ((8,),)


def test_symbols_are_cached_per_shape() -> None:
    S = ir.Var("S", dt.int64, lower_bound=ir.const(1, dt.int64), is_symbolic_constant=True)
    v = ArgValidator(_func(S))
    for n in (3, 5):
        v.validate((np.ones(n, np.float32),))
        fast = v.fast_call((np.ones(n, np.float32),))
        assert fast is not None and fast.symbols == {"S": n} and fast.output_shapes == ((n,),)
    assert v.fast_call((np.ones(7, np.float32),)) is None  # unseen shape: full path


@pytest.mark.parametrize("bad", ["wrong_dtype", "wrong_shape", "readonly", "strided", "alias"])
def test_bad_outputs_fall_back_to_the_full_path_and_its_error(bad: str) -> None:
    v = ArgValidator(_func())
    a = np.ones(8, np.float32)
    v.validate((a,), np.empty(8, np.float32))
    out = {"wrong_dtype": np.empty(8, np.float64), "wrong_shape": np.empty(9, np.float32),
           "readonly": np.empty(8, np.float32), "strided": np.empty(16, np.float32)[::2], "alias": a}[bad]
    if bad == "readonly":
        out.flags.writeable = False
    assert v.fast_call((a,), out) is None
    with pytest.raises((TypeError, ValueError)):
        v.validate((a,), out)


def test_non_contiguous_or_foreign_inputs_are_not_cached() -> None:
    v = ArgValidator(_func())
    with pytest.raises(ValueError, match="C-contiguous"):
        v.validate((np.ones(16, np.float32)[::2],))
    assert v.fast_call((np.ones(16, np.float32)[::2],)) is None
    assert v.fast_call(([1.0] * 8,)) is None


def test_data_ptr_matches_numpy_for_views_and_offsets() -> None:
    base = np.arange(1000, dtype=np.float64).reshape(10, 100)
    for arr in (base, base[3:], base[:, 7:], base[2:5, 1:9], base.T, np.empty(0, np.int8),
                np.float32(3) * np.ones(3)):
        assert data_ptr(arr) == arr.ctypes.data


def test_output_overlapping_an_input_or_another_output_is_not_fast() -> None:
    A = ir.make_tensor("A", (ir.const(8),), dt.float32)
    B = ir.make_tensor("B", (ir.const(8),), dt.float32)
    C = ir.make_tensor("C", (ir.const(8),), dt.float32)
    f = ir.LoweredFunc("f2", (ir.Argument(ir.ArgIO.INPUT, A), ir.Argument(ir.ArgIO.OUTPUT, B),
                              ir.Argument(ir.ArgIO.OUTPUT, C)), ir.Block(()))
    v = ArgValidator(f)
    a, buf = np.ones(8, np.float32), np.empty(24, np.float32)
    v.validate((a,), [buf[:8], buf[8:16]])
    assert v.fast_call((a,), [buf[:8], buf[8:16]]) is not None
    assert v.fast_call((a,), [buf[:8], buf[:8]]) is None            # the two outputs alias
    assert v.fast_call((a,), [buf[4:12], buf[12:20]]) is not None
    assert v.fast_call((buf[8:16],), [buf[:8], buf[4:12]]) is None  # overlaps the input and each other
    wide = np.empty(16, np.float32)
    assert v.fast_call((wide[4:12],), [wide[:8], buf[:8]]) is None  # partial overlap with the input
