"""What a host (CPU) array argument may be, checked before numpy reads it.

A kernel reads raw memory, so anything whose meaning lives outside that memory is refused with
an error naming the argument, instead of numpy's or torch's own exception or a silent change of
meaning: a numpy masked array (its mask would be dropped: the kernel would read the masked-out
values), a torch tensor that requires grad (a kernel call is invisible to autograd), one on the
`meta` device (no data) or on a GPU. A torch bfloat16 tensor, which DLPack cannot hand to numpy,
is passed as its uint16 bit patterns (the kernels' bfloat16 storage).
"""

from __future__ import annotations

from typing import Any

import numpy as np


def _is_torch_tensor(value: Any) -> bool:
    return type(value).__module__.startswith("torch") and hasattr(value, "requires_grad") \
        and hasattr(value, "device")


def host_array(value: Any, label: str) -> Any:
    """`value`, or for a torch bfloat16 tensor a uint16 numpy view of its bits; raises TypeError /
    ValueError naming `label` for what a kernel cannot read faithfully (see the module doc)."""
    if isinstance(value, np.ma.MaskedArray):
        raise TypeError(f"{label}: a numpy masked array is not accepted: its mask would be ignored and the "
                        "kernel would read the masked-out values; pass x.filled(value) or np.ma.getdata(x)")
    if not _is_torch_tensor(value):
        return value
    if value.requires_grad:
        raise TypeError(f"{label}: the torch tensor requires grad, and a kernel call is invisible to "
                        "autograd; "
                        "pass x.detach() (or compile the model with torch.compile(backend='cinn_py'))")
    device = value.device.type
    if device == "meta":
        raise ValueError(f"{label}: the torch tensor is on the 'meta' device, which has no data; "
                         "materialise it (x.to_empty(device='cpu') or a real tensor) first")
    if device != "cpu":
        raise ValueError(f"{label}: expected a CPU tensor, got a torch tensor on '{value.device}'; "
                         "use x.cpu() or a CUDA kernel")
    if str(value.dtype) == "torch.bfloat16":
        import torch  # noqa: PLC0415 -- only reached with a torch tensor in hand

        return np.from_dlpack(value.view(torch.int16)).view(np.uint16)
    return value
