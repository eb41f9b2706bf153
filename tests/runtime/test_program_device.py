"""A compiled program on a GPU keeps every value on the device: a group without inputs (a
fill_constant) gets its outputs allocated like the program's device inputs (seen on an H100: the
BERT layer's attention-mask constant came back as numpy and the next kernel refused the mix)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from cinn_py.frontend import NetBuilder
from cinn_py.pipeline import compile_program
from cinn_py.runtime.program import CompiledProgram

# the program compiles for "cuda" in the emulator; its kernels are replaced
pytestmark = pytest.mark.cuda_emulated


class DeviceArray:
    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = shape
        self.__cuda_array_interface__ = {"shape": shape, "typestr": "<f4", "data": (0x1000, False),
                                         "version": 3}


class RecordingKernel:
    """Stands in for a PyCUDA Kernel: records what each call got, returns device arrays."""

    def __init__(self, group: Any, calls: list) -> None:
        self.group, self.calls = group, calls

    def empty_outputs(self, like: Any) -> tuple[DeviceArray, ...]:
        assert isinstance(like, DeviceArray)
        return tuple(DeviceArray(tuple(v.shape)) for v in self.group.outputs)

    def __call__(self, *args: Any, out: Any = None) -> Any:
        self.calls.append((self.group.name, args, out))
        outs = out if out is not None else tuple(DeviceArray(tuple(v.shape)) for v in self.group.outputs)
        return outs if len(outs) > 1 else outs[0]


def test_a_group_without_inputs_gets_device_outputs() -> None:
    nb = NetBuilder("masked")
    x = nb.create_input("float32", [4, 8], "X")
    # a matmul operand: its own group
    out = nb.matmul(nb.exp(x), nb.fill_constant([8, 8], 1.5, "ones", "float32"))
    emulated = compile_program(nb.build([out]), "cuda", schedule="auto")
    assert any(not g.args for g in emulated.groups), "the constant should be a group of its own"
    calls: list = []
    kernels = [RecordingKernel(g, calls) for g in emulated.groups]
    program = CompiledProgram(emulated.program, emulated.plan, emulated.funcs, kernels, emulated.target)
    result = program.run_bound({"X": DeviceArray((4, 8))})
    assert isinstance(result, DeviceArray)
    for name, args, given in calls:
        assert all(isinstance(a, DeviceArray) for a in args), f"{name} got a host array"
        if not args:
            assert given is not None and all(isinstance(o, DeviceArray) for o in given)


def test_host_programs_are_unchanged() -> None:
    nb = NetBuilder("masked_host")
    x = nb.create_input("float32", [4, 8], "X")
    out = nb.matmul(nb.exp(x), nb.fill_constant([8, 8], 1.5, "ones", "float32"))
    compiled = compile_program(nb.build([out]), "cuda", schedule="auto")  # emulated: numpy in, numpy out
    X = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
    np.testing.assert_allclose(compiled(X), np.exp(X) @ np.full((8, 8), 1.5, np.float32), rtol=1e-5)
