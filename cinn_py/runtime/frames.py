"""Length-prefixed pickle frames over a pipe: how a parent talks to its compile worker processes
(`cinn_py.runtime.compile_jobs` for whole groups, `codegen.llvm.compile_worker` for LLVM modules).

A frame is an 8-byte little-endian length, then that many bytes of pickle. A short read means the
other side closed its pipe (it exited or crashed): `EOFError`, which the callers turn into a
worker restart or a clear error.
"""

from __future__ import annotations

import pickle
import struct
from typing import IO, Any

from cinn_py.ir import nesting_room

_LENGTH = struct.Struct("<Q")


def write_frame(stream: IO[bytes], obj: Any) -> None:
    """Pickle `obj` as one frame and flush it."""
    with nesting_room():  # deep IR trees pickle recursively
        data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_LENGTH.pack(len(data)) + data)
    stream.flush()


def read_frame(stream: IO[bytes]) -> Any:
    """The next frame's object; `EOFError` when the writer closed its pipe before or inside it."""
    head = stream.read(_LENGTH.size)
    if len(head) != _LENGTH.size:
        raise EOFError("compile worker closed its pipe")
    (size,) = _LENGTH.unpack(head)
    data = stream.read(size)
    if len(data) != size:
        raise EOFError("compile worker closed its pipe mid-reply")
    with nesting_room():
        return pickle.loads(data)
