"""Length-prefixed pickle frames over a pipe: how a parent talks to its compile worker processes
(`cinn_py.runtime.compile_jobs` for whole groups, `codegen.llvm.compile_worker` for LLVM modules).

A frame is an 8-byte little-endian length, then that many bytes of pickle. A short read means the
other side closed its pipe (it exited or crashed): `EOFError`, which the callers turn into a
worker restart or a clear error. `FrameChild` is the parent's side of one such worker: the child
process (`python -m <module>` of this checkout) and one request / reply exchange.
"""

from __future__ import annotations

import os
import pickle
import struct
import subprocess
import sys
from pathlib import Path
from typing import IO, Any

from cinn_py.ir import nesting_room

_LENGTH = struct.Struct("<Q")
_ROOT = Path(__file__).resolve().parents[2]  # the checkout holding cinn_py/, schedules/, codegen/


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


class FrameChild:
    """A child `python -m <module>` of this checkout (on PYTHONPATH, so it imports this code even
    when the package is not installed) that reads request frames on its stdin and writes one reply
    frame each on its stdout. `quiet=True` discards its stderr (a worker whose failures reach the
    parent as replies or as a closed pipe)."""

    def __init__(self, module: str, quiet: bool = False) -> None:
        env = {**os.environ,
               "PYTHONPATH": os.pathsep.join(filter(None, [str(_ROOT), os.environ.get("PYTHONPATH")]))}
        self.proc = subprocess.Popen([sys.executable, "-m", module], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL if quiet else None,
                                     env=env, cwd=str(_ROOT))

    def exchange(self, request: Any) -> Any:
        """Send `request`, return the reply; `EOFError` (or OSError on the write) when the child
        is gone."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        write_frame(self.proc.stdin, request)
        return read_frame(self.proc.stdout)

    def close(self) -> None:
        """Close its stdin (its serve loop returns), wait for it, kill it when it does not exit."""
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
        finally:
            if self.proc.stdout is not None:
                self.proc.stdout.close()
