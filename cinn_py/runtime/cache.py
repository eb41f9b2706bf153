"""Compile caches shared by backends: in memory (per process) and on disk (across processes).

A key is a SHA-256 over the IR text (`print_ir(func, decls=True)`, falling back to `print_ir`
while the decls printer is missing) plus the dataclass repr of the signature, body and temp
buffers (dtypes, shapes, scopes the plain text leaves out), and backend facts (target CPU,
features, toolchain versions, options, and `source_digest` of the backend's own sources).

Disk entries live in `$CINN_PY_CACHE_DIR` (default `$XDG_CACHE_HOME/cinn-py`, i.e.
`~/.cache/cinn-py`), one file per key and namespace:

    b"CINNPY-CACHE-1\\n" | sha256(payload) (32 bytes) | payload
    payload = u32 little-endian length of a JSON header | JSON header | binary blob

Writes are atomic (temporary file in the same directory + `os.replace`), so concurrent writers
from several processes never leave a torn file. An entry whose checksum or header does not
verify is deleted and reported as a miss, so the caller recompiles. A directory that cannot be
written makes the cache fall back to memory only, with one `RuntimeWarning`.
`CINN_PY_DISABLE_DISK_CACHE=1` turns the disk cache off.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import struct
import tempfile
import threading
import warnings
from collections import OrderedDict
from pathlib import Path
from typing import Any

from cinn_py.ir import LoweredFunc

MAGIC = b"CINNPY-CACHE-1\n"
_DIGEST = 32
_MEMORY_ENTRIES = 512

_cache_dir_override: Path | None = None


def set_cache_dir(path: str | os.PathLike[str] | None) -> None:
    """Use `path` for disk caches of this process (`None`: back to the environment default)."""
    global _cache_dir_override
    _cache_dir_override = None if path is None else Path(path)


def cache_dir() -> Path | None:
    """The disk cache root, or None when the disk cache is disabled."""
    if os.environ.get("CINN_PY_DISABLE_DISK_CACHE", "") not in ("", "0"):
        return None
    if _cache_dir_override is not None:
        return _cache_dir_override
    env = os.environ.get("CINN_PY_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "cinn-py"


def ir_text(func: LoweredFunc) -> str:
    """The text that identifies `func`: printed IR with declarations when the printer has them."""
    from cinn_py.ir.text.printer import print_ir

    try:
        return print_ir(func, decls=True)
    except ImportError:  # decls printer not there yet: plain text; the repr below adds the rest
        return print_ir(func)


def func_fingerprint(func: LoweredFunc) -> str:
    """SHA-256 of everything in `func` that affects generated code."""
    h = hashlib.sha256()
    h.update(ir_text(func).encode())
    # repr covers dtypes, buffer scopes, Var bounds, vectorize factors (statement uids are repr=False).
    h.update(repr((func.name, func.args, func.body, func.temp_bufs)).encode())
    return h.hexdigest()


@functools.lru_cache(maxsize=None)
def source_digest(package_dir: str | os.PathLike[str]) -> str:
    """SHA-256 over the Python sources of a package directory (relative paths + contents,
    sorted, subpackages included), computed once per process and directory.

    Backends put it into their cache keys, so that any change to the code generator
    invalidates the kernels it compiled before, without anyone remembering to bump a version.
    """
    root = Path(package_dir)
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(path.relative_to(root).as_posix().encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()


def make_key(func: LoweredFunc, **facts: Any) -> str:
    """Cache key of `func` compiled under `facts` (target, toolchain versions, options)."""
    h = hashlib.sha256(func_fingerprint(func).encode())
    h.update(json.dumps(facts, sort_keys=True, default=str).encode())
    return h.hexdigest()


class CompileCache:
    """A two-level cache for one backend (`namespace`, e.g. `"x86"` or `"cuda"`)."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self._memory: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()
        self._unwritable: set[Path] = set()

    # -- memory ------------------------------------------------------------------------------------
    def get_memory(self, key: str) -> Any | None:
        with self._lock:
            value = self._memory.get(key)
            if value is not None:
                self._memory.move_to_end(key)
            return value

    def put_memory(self, key: str, value: Any) -> None:
        with self._lock:
            self._memory[key] = value
            self._memory.move_to_end(key)
            while len(self._memory) > _MEMORY_ENTRIES:
                self._memory.popitem(last=False)

    def clear_memory(self) -> None:
        with self._lock:
            self._memory.clear()

    # -- disk --------------------------------------------------------------------------------------
    def _dir(self) -> Path | None:
        root = cache_dir()
        return None if root is None else root / self.namespace

    def entry_path(self, key: str) -> Path | None:
        directory = self._dir()
        return None if directory is None else directory / f"{key}.bin"

    def load(self, key: str) -> tuple[dict[str, Any], bytes] | None:
        """(header, blob) of a verified disk entry, or None (missing, disabled or corrupt)."""
        path = self.entry_path(key)
        if path is None:
            return None
        try:
            data = path.read_bytes()
        except OSError:
            return None
        entry = _decode(data)
        if entry is None:
            self._discard(path)
        return entry

    def store(self, key: str, header: dict[str, Any], blob: bytes) -> bool:
        """Write an entry atomically; False (and one warning per directory) when not writable."""
        directory = self._dir()
        if directory is None or directory in self._unwritable:
            return False
        data = _encode(header, blob)
        tmp_name = None
        try:
            directory.mkdir(parents=True, exist_ok=True)
            fd, tmp_name = tempfile.mkstemp(prefix=f".{key[:16]}.", suffix=".tmp", dir=directory)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp_name, directory / f"{key}.bin")
            return True
        except OSError as exc:
            if tmp_name is not None:
                _silent_unlink(Path(tmp_name))
            self._unwritable.add(directory)
            warnings.warn(f"cinn-py {self.namespace} cache: cannot write to {directory} ({exc.strerror or exc}); "
                          f"compiled kernels are cached in memory only", RuntimeWarning, stacklevel=3)
            return False

    def discard(self, key: str) -> None:
        """Delete the disk entry of `key` (e.g. its content did not load); warns once."""
        path = self.entry_path(key)
        if path is not None and path.exists():
            self._discard(path)

    def _discard(self, path: Path) -> None:
        warnings.warn(f"cinn-py {self.namespace} cache: discarding corrupt entry {path.name}; recompiling",
                      RuntimeWarning, stacklevel=4)
        _silent_unlink(path)


def _encode(header: dict[str, Any], blob: bytes) -> bytes:
    head = json.dumps(header, sort_keys=True).encode()
    payload = struct.pack("<I", len(head)) + head + blob
    return MAGIC + hashlib.sha256(payload).digest() + payload


def _decode(data: bytes) -> tuple[dict[str, Any], bytes] | None:
    if not data.startswith(MAGIC) or len(data) < len(MAGIC) + _DIGEST + 4:
        return None
    digest = data[len(MAGIC):len(MAGIC) + _DIGEST]
    payload = data[len(MAGIC) + _DIGEST:]
    if hashlib.sha256(payload).digest() != digest:
        return None
    (head_len,) = struct.unpack("<I", payload[:4])
    try:
        header = json.loads(payload[4:4 + head_len].decode())
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(header, dict):
        return None
    return header, payload[4 + head_len:]


def _silent_unlink(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass
