"""Host side of the PyCUDA Kernel against a recording fake of PyCUDA (no GPU needed).

Checks what the launch code hands to PyCUDA: the prepared-call format and the packed parameter
values in signature order (pointers, int64 symbols, temp spaces last), grid/block/shared bytes,
temp-space allocation (sized from the symbols, reused, zero-filled only when needed), copies of
the outputs back into `out=` arrays, and driver errors turned into CinnErrors.
"""

from __future__ import annotations

import struct
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from cinn_py.diagnostics import CinnError
from codegen.cuda import generate_cuda
from codegen.cuda import kernel as kernel_mod
from tests.codegen.cuda.gpu_programs import drop_reduce_init, symbolic_with_temp


class FakeError(Exception):
    pass


class FakeAlloc:
    def __init__(self, log: list, nbytes: int) -> None:
        self.ptr = 0x10000 * (len(log) + 1)
        log.append(("alloc", nbytes))

    def __int__(self) -> int:
        return self.ptr


class FakeGPUArray:
    _next = 0x900000

    def __init__(self, host: np.ndarray) -> None:
        self.host = host
        FakeGPUArray._next += 0x1000
        self.gpudata = FakeGPUArray._next

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return {"shape": self.host.shape, "typestr": self.host.dtype.str, "data": (self.gpudata, False),
                "strides": None, "version": 3}

    def get(self, ary: np.ndarray | None = None) -> np.ndarray:
        target = np.empty_like(self.host) if ary is None else ary
        assert target.shape == self.host.shape and target.dtype == self.host.dtype
        target[...] = 7  # what the "kernel" wrote
        return target


class FakeFunction:
    def __init__(self, log: list, fail: bool) -> None:
        self.log, self.fail = log, fail

    def get_attribute(self, attr: str) -> int:
        return {"SHARED_SIZE_BYTES": 1024, "NUM_REGS": 18, "MAX_THREADS_PER_BLOCK": 1024}.get(attr, 0)

    def prepare(self, fmt: str) -> None:
        self.fmt = fmt

    def set_attribute(self, attr: str, value: int) -> None:
        self.log.append(("set_attribute", attr, value))

    def prepared_call(self, grid: tuple, block: tuple, *args: Any, shared_size: int = 0) -> None:
        if self.fail:
            raise FakeError("CUDA_ERROR_INVALID_VALUE")
        struct.pack(self.fmt, *args)  # what PyCUDA's _pvt_struct.pack does with them
        self.log.append(("launch", grid, block, args, shared_size))


OOB_STATUS_PTR = 0xB0B0


def fake_pycuda(log: list, fail_launch: bool = False, globals_: dict[int, np.ndarray] | None = None
                ) -> tuple[Any, Any]:
    """`globals_`: device memory of module globals by address (`cinn_oob_status` at OOB_STATUS_PTR)."""
    function = FakeFunction(log, fail_launch)
    memory = globals_ if globals_ is not None else {OOB_STATUS_PTR: np.zeros(2, np.int64)}

    def dtoh(dest: np.ndarray, ptr: int) -> None:
        dest[...] = memory[ptr]

    def htod(ptr: int, src: np.ndarray) -> None:
        memory[ptr][...] = src

    module = SimpleNamespace(get_function=lambda name: function,
                             get_global=lambda name: (OOB_STATUS_PTR, 16) if name
                             == "cinn_oob_status" else None)
    drv = SimpleNamespace(
        Error=FakeError,
        function_attribute=SimpleNamespace(**{name: name for name in (
            "SHARED_SIZE_BYTES", "MAX_DYNAMIC_SHARED_SIZE_BYTES", "NUM_REGS", "LOCAL_SIZE_BYTES",
            "MAX_THREADS_PER_BLOCK")}),
        module_from_buffer=lambda cubin: module,
        mem_alloc=lambda n: FakeAlloc(log, n),
        memset_d8=lambda ptr, value, n: log.append(("memset", ptr, value, n)),
        memcpy_dtoh=dtoh,
        memcpy_htod=htod,
    )
    gpuarray = SimpleNamespace(to_gpu=lambda a: FakeGPUArray(a.copy()),
                               empty=lambda shape, dtype: FakeGPUArray(np.zeros(shape, dtype)))
    return drv, gpuarray


def _kernel(monkeypatch: pytest.MonkeyPatch, func, fail_launch: bool = False) -> tuple[Any, list]:
    log: list = []
    monkeypatch.setattr(kernel_mod, "_pycuda", lambda: fake_pycuda(log, fail_launch))
    return kernel_mod.Kernel(generate_cuda(func), func), log


def test_launch_packs_pointers_symbols_and_temp_spaces(monkeypatch: pytest.MonkeyPatch) -> None:
    func = symbolic_with_temp()
    kernel, log = _kernel(monkeypatch, func)
    assert kernel._function.fmt == "PPqP"
    a = np.ones((10, 64), np.float32)
    out = kernel(a)
    assert out.shape == (10,) and (out == 7).all()
    (alloc,), (launch,) = [e for e in log if e[0] == "alloc"], [e for e in log if e[0] == "launch"]
    assert alloc == ("alloc", 40)  # B: S0 floats
    _, grid, block, args, shared = launch
    assert (grid, block, shared) == ((1, 1, 1), (64, 1, 1), 0)
    assert [type(x) for x in args] == [np.uintp, np.uintp, np.int64, np.uintp]
    assert int(args[2]) == 10 and int(args[3]) == 0x10000
    assert not [e for e in log if e[0] == "memset"]  # B is written before it is read
    kernel(np.ones((5, 64), np.float32))
    assert len([e for e in log if e[0] == "alloc"]) == 1  # 20 bytes fit the 40 held
    kernel(np.ones((100, 64), np.float32))
    assert [e for e in log if e[0] == "alloc"][-1] == ("alloc", 400)


def test_out_is_filled_through_the_validated_view(monkeypatch: pytest.MonkeyPatch) -> None:
    kernel, _ = _kernel(monkeypatch, symbolic_with_temp())
    out = np.zeros(3, np.float32)
    assert kernel(np.ones((3, 64), np.float32), out=out) is out and (out == 7).all()
    with pytest.raises(ValueError, match="expected shape"):
        kernel(np.ones((3, 64), np.float32), out=np.zeros(4, np.float32))


def test_zero_init_temp_space_is_memset(monkeypatch: pytest.MonkeyPatch) -> None:
    kernel, log = _kernel(monkeypatch, drop_reduce_init(symbolic_with_temp()))
    kernel(np.ones((10, 64), np.float32))
    assert [e for e in log if e[0] == "memset"] == [("memset", 0x10000, 0, 40)]


def test_empty_launch_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    kernel, log = _kernel(monkeypatch, symbolic_with_temp(lower=0))
    assert kernel(np.ones((0, 64), np.float32)).shape == (0,)
    assert not [e for e in log if e[0] == "launch"]


def test_driver_launch_error_is_a_cinn_error(monkeypatch: pytest.MonkeyPatch) -> None:
    kernel, _ = _kernel(monkeypatch, symbolic_with_temp(), fail_launch=True)
    with pytest.raises(CinnError, match=r"launch with grid=\(1, 1, 1\) block=\(64, 1, 1\).*INVALID_VALUE"):
        kernel(np.ones((4, 64), np.float32))


def test_large_dynamic_shared_memory_opts_in_once(monkeypatch: pytest.MonkeyPatch) -> None:
    kernel, log = _kernel(monkeypatch, symbolic_with_temp())
    kernel._opt_in_shared(60 * 1024)
    kernel._opt_in_shared(50 * 1024)
    kernel._opt_in_shared(10 * 1024)
    assert [e for e in log if e[0] == "set_attribute"] == [
        ("set_attribute", "MAX_DYNAMIC_SHARED_SIZE_BYTES", 60 * 1024)]
    optin = kernel.code.target.gpu.max_shared_memory_per_block_optin  # the Target's, by arch
    with pytest.raises(CinnError, match=rf"exceed the opt-in limit of {kernel.code.arch} \({optin} bytes"):
        kernel._opt_in_shared(optin)  # plus the 1 KiB static: past what the driver would allow
    assert len([e for e in log if e[0] == "set_attribute"]) == 1


def test_device_inputs_get_device_outputs_without_copies(monkeypatch: pytest.MonkeyPatch) -> None:
    kernel, log = _kernel(monkeypatch, symbolic_with_temp())
    x = FakeGPUArray(np.ones((6, 64), np.float32))
    out = kernel(x)
    assert isinstance(out, FakeGPUArray) and out.host.shape == (6,)
    (_, _, _, args, _), = [e for e in log if e[0] == "launch"]
    assert [int(a) for a in args[:3]] == [x.gpudata, out.gpudata, 6]
    with pytest.raises(TypeError, match="mix of host"):
        kernel(np.ones((6, 64), np.float32), x)


class FakeTorchTensor:
    """What the Kernel reads of a contiguous torch CUDA tensor (named and placed like one)."""

    _next = 0x500000

    def __init__(self, shape: tuple[int, ...], dtype: Any) -> None:
        self.shape, self.dtype, self.device, self.is_cuda = shape, dtype, "cuda:0", True
        FakeTorchTensor._next += 0x1000
        self.ptr = FakeTorchTensor._next

    def data_ptr(self) -> int:
        return self.ptr

    def is_contiguous(self) -> bool:
        return True

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return {"shape": self.shape, "typestr": "<f4", "data": (self.ptr, False), "strides": None,
                "version": 3}


FakeTorchTensor.__name__ = "Tensor"
FakeTorchTensor.__module__ = "torch"


def test_torch_calls_of_a_seen_signature_skip_validation(monkeypatch: pytest.MonkeyPatch) -> None:
    """The second call with the same (dtype, shape, device) launches with the first call's symbols
    and dims without running the validator; a new shape takes the full path again."""
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch, "empty", lambda shape, dtype, device: FakeTorchTensor(tuple(shape), dtype))
    kernel, log = _kernel(monkeypatch, symbolic_with_temp())
    first = kernel(FakeTorchTensor((6, 64), torch.float32))
    assert first.shape == (6,) and first.dtype is torch.float32

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("validated again")

    monkeypatch.setattr(kernel.device_validator, "validate", refuse)
    x = FakeTorchTensor((6, 64), torch.float32)
    second = kernel(x)
    launches = [e for e in log if e[0] == "launch"]
    assert len(launches) == 2 and launches[0][1:3] == launches[1][1:3]
    assert [int(a) for a in launches[1][3][:3]] == [x.ptr, second.ptr, 6]
    with pytest.raises(AssertionError, match="validated again"):
        kernel(FakeTorchTensor((7, 64), torch.float32))


def test_torch_signature_needs_contiguous_cuda_tensors() -> None:
    torch = pytest.importorskip("torch")
    assert kernel_mod.torch_signature((torch.ones(3),)) is None  # a CPU tensor
    assert kernel_mod.torch_signature((FakeTorchTensor((3,), torch.float32), np.ones(3))) is None
    assert (kernel_mod.torch_signature((FakeTorchTensor((3,), torch.float32),))
            == ((torch.float32, (3,), "cuda:0"),))


def test_resource_usage_reads_the_driver_attributes(monkeypatch: pytest.MonkeyPatch) -> None:
    kernel, _ = _kernel(monkeypatch, symbolic_with_temp())
    usage = kernel.resource_usage()
    assert (usage["registers"], usage["shared_static_bytes"], usage["local_bytes"]) == (18, 1024, 0)
    assert usage["kernel"] == "fn" and usage["launch"].startswith("grid=(")


def _constant_kernel(monkeypatch: pytest.MonkeyPatch) -> tuple[Any, list]:
    import cinn_py as cp
    from schedules import IRSchedule

    B = cp.compute((64,), lambda i: cp.cast(i, "float32") * 0.5, "B")
    s = IRSchedule(cp.lower("ramp", [B]))
    s.bind(s.get_loops("B")[0], "threadIdx.x")
    return _kernel(monkeypatch, s.func)


def test_a_kernel_without_inputs_writes_device_outputs_given_as_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """A program's fill_constant group has no input to tell it the device: `empty_outputs(like)`
    allocates its outputs there and `kernel(out=...)` launches on them (the BERT layer's attention
    mask mixed a numpy array into CUDA kernels on an H100 before)."""
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch, "empty", lambda shape, dtype, device: FakeTorchTensor(tuple(shape), dtype))
    kernel, log = _constant_kernel(monkeypatch)
    (out,) = kernel.empty_outputs(FakeTorchTensor((3,), torch.float32))
    assert isinstance(out, FakeTorchTensor) and out.shape == (64,) and out.dtype is torch.float32
    assert kernel(out=out) is out
    (_, _, _, args, _), = [e for e in log if e[0] == "launch"]
    assert [int(a) for a in args] == [out.ptr]
    assert isinstance(kernel(), np.ndarray)  # no device array anywhere: the host path
    with pytest.raises(TypeError, match="mix of host"):
        kernel(np.empty(1, np.float32), out=out)
