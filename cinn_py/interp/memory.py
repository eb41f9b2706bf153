"""Storage of one interpreter run: a numpy array per buffer and a view per tensor.

Several tensors may share a buffer (a reduction `B` and its `B__reduce_init` both write `_B`);
a tensor whose shape differs from its buffer's (a flattened 1-D view) sees a reshaped view of the
same memory. Shared and local GPU buffers are ordinary arrays: every loop runs serially here.
"""

from __future__ import annotations

import numpy as np

from cinn_py.interp.errors import InterpError
from cinn_py.interp.numerics import compute_dtype
from cinn_py.ir import Buffer, Tensor


class Memory:
    """Buffer arrays by buffer name and cached tensor views by tensor name."""

    def __init__(self, poison: bool) -> None:
        self.poison = poison
        self.buffers: dict[str, np.ndarray] = {}
        self.views: dict[str, np.ndarray] = {}
        self.tensor_shapes: dict[str, tuple[int, ...]] = {}
        self.tensors_of: dict[str, list[Tensor]] = {}

    def register(self, tensor: Tensor, shape: tuple[int, ...]) -> None:
        """Record a tensor the program accesses and its evaluated shape."""
        self.tensor_shapes[tensor.name] = shape
        owners = self.tensors_of.setdefault(tensor.buffer.name, [])
        if all(t.name != tensor.name for t in owners):
            owners.append(tensor)

    def bind(self, buffer_name: str, array: np.ndarray) -> None:
        """Use `array` as the storage of `buffer_name` (inputs, outputs, allocations)."""
        self.buffers[buffer_name] = array
        for tensor in self.tensors_of.get(buffer_name, ()):
            self.views[tensor.name] = self._view(tensor, array)

    def allocate(self, buffer: Buffer, shape: tuple[int, ...]) -> np.ndarray:
        """A fresh array for `buffer`, filled with NaN (floats) or zeros when poisoning, so that
        reads of never-written elements show up in differential tests."""
        if any(d < 0 for d in shape):
            raise InterpError(f"interp: buffer '{buffer.name}' has a negative extent in shape {shape}")
        dtype = compute_dtype(buffer.dtype)
        if self.poison and dtype.kind == "f":
            array = np.full(shape, np.nan, dtype=dtype)
        else:
            array = np.zeros(shape, dtype=dtype)
        self.bind(buffer.name, array)
        return array

    def free(self, buffer: Buffer) -> None:
        self.buffers.pop(buffer.name, None)
        for tensor in self.tensors_of.get(buffer.name, ()):
            self.views.pop(tensor.name, None)

    def _view(self, tensor: Tensor, array: np.ndarray) -> np.ndarray:
        shape = self.tensor_shapes.get(tensor.name)
        if shape is None or array.shape == shape:
            return array
        if int(np.prod(shape, dtype=np.int64)) == array.size:
            return array.reshape(shape)
        # A buffer resized by a pass (e.g. local memory) keeps its own shape.
        return array
