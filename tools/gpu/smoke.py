"""First contact with a real GPU: versions, one hand-scheduled kernel on numpy and torch inputs, a
checked build, an auto-scheduled softmax, and the torch.compile backend on CUDA tensors.

    python3 tools/gpu/smoke.py          (from the project root, on a machine with a GPU)

Each step prints PASS or FAIL with the error and the script goes on, so one broken step does not
hide the others; the exit status is the number of failed steps.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable

import numpy as np

FAILED: list[str] = []


def step(name: str) -> Callable[[Callable[[], object]], None]:
    def run(fn: Callable[[], object]) -> None:
        try:
            detail = fn()
            print(f"PASS {name}" + (f": {detail}" if detail else ""), flush=True)
        except Exception:
            FAILED.append(name)
            print(f"FAIL {name}\n{traceback.format_exc()[-3000:]}", flush=True)
    return run


@step("versions")
def versions() -> str:
    import pycuda.driver as drv
    import torch

    from cinn_py.target import Target
    from codegen.cuda import nvrtc

    drv.init()
    return (f"torch {torch.__version__} cuda {torch.version.cuda}, pycuda driver {drv.get_driver_version()}, "
            f"nvrtc {nvrtc.nvrtc_version()}, include {nvrtc.cuda_include_dir()}, Target.cuda() "
            f"{Target.cuda().arch}, "
            f"device {torch.cuda.get_device_name()}")


def _relu_kernel(checked: bool = False):  # noqa: ANN202
    import cinn_py as cp
    from schedules import IRSchedule

    A = cp.placeholder((4096,), "float32", "A")
    B = cp.compute((4096,), lambda i: cp.maximum(A[i], 0.0) * 2.0, "B")
    s = IRSchedule(cp.lower("relu2", [A, B]))
    outer, inner = s.split(s.get_loops("B")[0], [-1, 256])
    s.bind(outer, "blockIdx.x")
    s.bind(inner, "threadIdx.x")
    return cp.build(s.func, "cuda", checked=checked)


@step("hand kernel, numpy in/out")
def hand_numpy() -> str:
    k = _relu_kernel()
    a = np.random.default_rng(0).standard_normal(4096).astype(np.float32)
    np.testing.assert_allclose(k(a), np.maximum(a, 0) * 2, rtol=1e-6)
    return repr(k)


@step("hand kernel, torch CUDA in/out")
def hand_torch() -> str:
    import torch

    k = _relu_kernel()
    for _ in range(3):  # the first call validates, the next ones take the cached path
        a = torch.randn(4096, device="cuda")
        out = k(a)
        torch.testing.assert_close(out, torch.relu(a) * 2)
    return f"{type(out).__name__} on {out.device}"


@step("checked kernel")
def checked() -> None:
    k = _relu_kernel(checked=True)
    a = np.random.default_rng(1).standard_normal(4096).astype(np.float32)
    np.testing.assert_allclose(k(a), np.maximum(a, 0) * 2, rtol=1e-6)


@step("auto-scheduled softmax")
def auto_softmax() -> str:
    import torch

    import cinn_py as cp
    from cinn_py.tools.bench_workloads import WORKLOADS

    w = WORKLOADS["softmax"]
    shape = {"rows": 1000, "cols": 1000}
    k = cp.build(w.lower(shape), "cuda", schedule="auto", fast_math=True)
    x = torch.randn(1000, 1000, device="cuda")
    torch.testing.assert_close(k(x), torch.softmax(x, -1), rtol=1e-4, atol=1e-5)
    return repr(k)


@step("torch.compile backend on CUDA")
def torch_compile() -> str:
    import torch

    from cinn_py.torch.backend import cinn_py_backend, last_report

    class Block(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln = torch.nn.LayerNorm(64)
            self.fc = torch.nn.Linear(64, 64)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.softmax(self.fc(torch.nn.functional.gelu(self.ln(x))), -1) + x

    model = Block().cuda().eval()
    x = torch.randn(8, 16, 64, device="cuda")
    compiled = torch.compile(model, backend=cinn_py_backend)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
    return str(last_report())


if __name__ == "__main__":
    print(f"{len(FAILED)} smoke step(s) failed: {FAILED}" if FAILED else "all smoke steps passed")
    raise SystemExit(len(FAILED))
