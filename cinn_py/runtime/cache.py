"""Compile caches shared by backends: in memory (per process) and on disk (across processes).

A key is a SHA-256 over the IR text (`print_ir(func, decls=True)`, falling back to `print_ir`
while the decls printer is missing) plus the dataclass repr of the signature, body and temp
buffers (dtypes, shapes, scopes the plain text leaves out), and backend facts (target CPU,
features, toolchain versions, options, and `project_digest()`: the project version and a hash of
every source of the three packages, so that no code change can be served a stale kernel).

Disk entries live in `$CINN_PY_CACHE_DIR` (default `$XDG_CACHE_HOME/cinn-py`, i.e.
`~/.cache/cinn-py`), one file per key and namespace:

    b"CINNPY-CACHE-2\n" | HMAC-SHA256(secret, namespace NUL key NUL payload) (32 bytes) | payload
    payload = u32 little-endian length of a JSON header | JSON header | binary blob

The disk cache holds object code that is loaded and executed, so it is trusted only as far as
its directory is:
- the root and the namespace folder must be directories owned by this user and writable by
  nobody else (no group/world write bit); otherwise the disk cache is bypassed (memory only)
  with one `RuntimeWarning` naming the directory and the rule;
- `<root>/.hmac-secret` holds 32 random bytes, created mode 0600 on first use (atomically: a
  temporary file hard-linked into place) and refused when it is not a regular file owned by
  this user with no group/other permissions;
- every entry carries an HMAC over its namespace, its full key and its payload, and its header
  records the key and namespace again; an entry whose HMAC does not verify (planted by someone
  without the secret, corrupted) or that records another key (copied from another kernel's
  file) is deleted and reported as a miss, so the caller recompiles.

Special files (`cinn_py.runtime.files`): an entry that is a FIFO, device, socket, symbolic link or
directory is never read (no blocking open, no endless read; entries over 256 MiB are refused);
it is a miss for that key only, with one warning, and is replaced by the next store (a directory
is left alone: that key is not cached on disk).

Writes are atomic (temporary file in the same directory + `os.replace`), so concurrent writers
from several processes never leave a torn file. A directory that cannot be written makes the
cache fall back to memory only, with one `RuntimeWarning`.
`CINN_PY_DISABLE_DISK_CACHE=1` turns the disk cache off.

The entry format, the secret and the directory checks are `cache_files`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
import threading
import warnings
from collections import OrderedDict
from pathlib import Path
from typing import Any

from cinn_py.ir import LoweredFunc
from cinn_py.runtime.cache_files import (
    UntrustedCacheError, _decode, _encode, _secret, _silent_unlink, check_private_dir, make_private_dir,
)
from cinn_py.runtime.cache_files import MAGIC, SECRET_NAME  # noqa: F401 - re-exported (import path)
from cinn_py.runtime.files import SpecialFileError, read_regular_file

_MEMORY_ENTRIES = 512
MAX_ENTRY_BYTES = 256 << 20
"""The largest disk entry (or source file) read: object code and IR text of one kernel are far
smaller; a symbolic link to /dev/zero or a huge planted file is refused, not read into memory."""

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
    from cinn_py.ir import print_ir

    try:
        return print_ir(func, decls=True)
    except ImportError:  # decls printer not there yet: plain text; the repr below adds the rest
        return print_ir(func)


_FINGERPRINTS: OrderedDict[LoweredFunc, str] = OrderedDict()
_FINGERPRINTS_KEPT = 1024
_FINGERPRINTS_LOCK = threading.Lock()


def func_fingerprint(func: LoweredFunc) -> str:
    """SHA-256 of everything in `func` that affects generated code; remembered per function
    object (functions are immutable and hash by identity), since printing a scheduled kernel
    for its key cost a warm start of BERT's training graphs ~0.5 s of CPU for 67 kernels."""
    with _FINGERPRINTS_LOCK:
        known = _FINGERPRINTS.get(func)
    if known is not None:
        return known
    h = hashlib.sha256()
    h.update(ir_text(func).encode())
    # repr covers dtypes, buffer scopes, Var bounds, vectorize factors (statement uids are repr=False).
    h.update(repr((func.name, func.args, func.body, func.temp_bufs)).encode())
    fingerprint = h.hexdigest()
    remember_fingerprint(func, fingerprint)
    return fingerprint


def remember_fingerprint(func: LoweredFunc, fingerprint: str) -> None:
    """`func_fingerprint(func)` is `fingerprint` (computed by an earlier process and kept with
    `func` in a trusted cache entry: `cinn_py.runtime.graph_cache`). The last
    `_FINGERPRINTS_KEPT` functions are remembered."""
    with _FINGERPRINTS_LOCK:
        _FINGERPRINTS[func] = fingerprint
        _FINGERPRINTS.move_to_end(func)
        while len(_FINGERPRINTS) > _FINGERPRINTS_KEPT:
            _FINGERPRINTS.popitem(last=False)


def forget_fingerprints() -> None:
    """Forget every remembered fingerprint (as a new process starts)."""
    with _FINGERPRINTS_LOCK:
        _FINGERPRINTS.clear()


_SOURCE_SUFFIXES = (".py", ".h", ".cuh", ".cpp", ".c", ".cu", ".json")
"""Files that can shape a compiled kernel: Python sources and the C/CUDA headers and runtimes
that generated code includes."""

PROJECT_PACKAGES = ("cinn_py", "schedules", "codegen")


@functools.lru_cache(maxsize=None)
def source_digest(package_dir: str | os.PathLike[str]) -> str:
    """SHA-256 over the sources of a package directory (relative paths + contents, sorted,
    subpackages included; Python files and the C/CUDA headers and runtimes shipped with them),
    computed once per process and directory."""
    root = Path(package_dir)
    h = hashlib.sha256()
    files = sorted(p for p in root.rglob("*") if p.suffix in _SOURCE_SUFFIXES and "__pycache__"
                   not in p.parts)
    for path in files:
        try:
            data, _ = read_regular_file(path, MAX_ENTRY_BYTES)
        except OSError:  # vanished, unreadable or not a file (a FIFO named x.py): its absence is hashed
            continue
        h.update(path.relative_to(root).as_posix().encode() + b"\0")
        h.update(data + b"\0")
    return h.hexdigest()


@functools.lru_cache(maxsize=1)
def project_digest() -> str:
    """SHA-256 of the project version and of the sources of all three packages (`cinn_py`,
    `schedules`, `codegen`), computed once per process (~2 MB of sources: a few milliseconds).

    Every disk cache key includes it. A kernel is shaped by far more than its backend's own
    folder (lowering, passes, the symbolic simplifier, schedules and tactics, the IR printer that
    words its checks), so a change to any project source, or another project version, must miss
    the cache instead of serving a kernel the current code would not produce."""
    from cinn_py import __version__

    root = Path(__file__).resolve().parent.parent.parent  # the folder holding the three packages
    h = hashlib.sha256(f"cinn-py {__version__}\0".encode())
    for name in PROJECT_PACKAGES:
        package = root / name
        h.update(name.encode() + b"\0"
                 + (source_digest(str(package)) if package.is_dir() else "absent").encode())
    return h.hexdigest()


def make_key(func: LoweredFunc, **facts: Any) -> str:
    """Cache key of `func` compiled under `facts` (target, toolchain versions, options)."""
    return fingerprint_key(func=func_fingerprint(func), **facts)


def fingerprint_key(**facts: Any) -> str:
    """Cache key of anything described by JSON-able `facts` (e.g. CUDA source, arch, options)."""
    return hashlib.sha256(json.dumps(facts, sort_keys=True, default=str).encode()).hexdigest()


class CompileCache:
    """A two-level cache for one backend (`namespace`, e.g. `"x86"` or `"cuda"`)."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self._memory: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()
        self._unwritable: set[Path] = set()
        self._warned: set[tuple[str, str]] = set()

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

    def _trusted(self, create: bool) -> tuple[Path, bytes] | None:
        """(namespace folder, HMAC secret) when the cache directory may be trusted, else None
        (after one warning per directory and reason). `create`: make missing folders (0700)."""
        root = cache_dir()
        if root is None:
            return None
        directory = root / self.namespace
        try:
            if create:
                make_private_dir(root)
                make_private_dir(directory)
            elif not directory.is_dir():
                return None
            for path in (root, directory):
                check_private_dir(path)
            return directory, _secret(root)
        except UntrustedCacheError as exc:
            self._warn_once(("untrusted", str(root)),
                            f"cinn-py {self.namespace} cache: not using {root}: {exc}; "
                            f"compiled kernels are cached in memory only")
            return None

    def load(self, key: str) -> tuple[dict[str, Any], bytes] | None:
        """(header, blob) of a verified disk entry, or None (missing, disabled, untrusted
        directory, corrupt, or written for another key)."""
        trusted = self._trusted(create=False)
        if trusted is None:
            return None
        directory, secret = trusted
        path = directory / f"{key}.bin"
        try:
            data, _ = read_regular_file(path, MAX_ENTRY_BYTES)
        except SpecialFileError as exc:
            self._skip_special(path, exc)
            return None
        except OSError:
            return None
        entry = _decode(data, secret, self.namespace, key)
        if entry is None:
            self._discard(path)
        return entry

    def store(self, key: str, header: dict[str, Any], blob: bytes) -> bool:
        """Write an entry atomically; False (and one warning per directory) when the directory
        is not writable or not trusted."""
        root = cache_dir()
        if root is None or root / self.namespace in self._unwritable:
            return False
        tmp_name = None
        try:
            trusted = self._trusted(create=True)
            if trusted is None:
                return False
            directory, secret = trusted
            data = _encode(header, blob, secret, self.namespace, key)
            target = directory / f"{key}.bin"
            if target.is_dir() and not target.is_symlink():  # os.replace cannot replace it
                self._skip_special(target, SpecialFileError(f"{target} is a directory, not a regular file"))
                return False
            fd, tmp_name = tempfile.mkstemp(prefix=f".{key[:16]}.", suffix=".tmp", dir=directory)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp_name, target)  # also replaces a FIFO, device node or link planted there
            return True
        except OSError as exc:
            if tmp_name is not None:
                _silent_unlink(Path(tmp_name))
            self._unwritable.add(root / self.namespace)
            warnings.warn(f"cinn-py {self.namespace} cache: cannot write to {root / self.namespace} "
                          f"({exc.strerror or exc}); compiled kernels are cached in memory only",
                          RuntimeWarning, stacklevel=3)
            return False

    def _skip_special(self, path: Path, exc: SpecialFileError) -> None:
        """Something other than an entry file is where an entry belongs: this entry is skipped
        (a FIFO or device is never opened for a blocking read; a directory is left alone and only
        its key is not cached on disk), the rest of the disk cache keeps working."""
        self._warn_once(("special", str(path)),
                        f"cinn-py {self.namespace} cache: ignoring {path.name}: {exc}; "
                        f"this kernel is recompiled")
        if not path.is_dir() or path.is_symlink():
            _silent_unlink(path)  # a FIFO, device node or link: ours to remove, the next store writes a file

    def discard(self, key: str) -> None:
        """Delete the disk entry of `key` (e.g. its content did not load); warns once."""
        path = self.entry_path(key)
        if path is not None and path.exists():
            self._discard(path)

    def _discard(self, path: Path) -> None:
        warnings.warn(f"cinn-py {self.namespace} cache: discarding corrupt or foreign entry {path.name} "
                      f"(checksum, HMAC or recorded key does not match); recompiling", RuntimeWarning,
                      stacklevel=4)
        _silent_unlink(path)

    def _warn_once(self, token: tuple[str, str], message: str) -> None:
        with self._lock:
            if token in self._warned:
                return
            self._warned.add(token)
        warnings.warn(message, RuntimeWarning, stacklevel=4)
