"""The trust layer of the disk cache (`cache.CompileCache`): the entry format (`MAGIC` | HMAC-SHA256
| payload, encoded and checked here), the per-root secret `<root>/.hmac-secret` (32 random bytes,
created mode 0600 atomically, refused unless a regular file owned by this user with no
group/other permissions), and the private-directory checks (owned by this user, writable by
nobody else) whose failure `UntrustedCacheError` reports. `schedules.tactics.tuning_db` keeps its
database under the same rules.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import stat
import struct
import tempfile
from pathlib import Path
from typing import Any

from cinn_py.runtime.files import read_regular_file


MAGIC = b"CINNPY-CACHE-2\n"
SECRET_NAME = ".hmac-secret"
_DIGEST = 32
_SECRET_BYTES = 32
class UntrustedCacheError(Exception):
    """The cache directory or its secret may be written by someone else (internal: the cache
    turns it into a warning and runs from memory)."""


def make_private_dir(path: Path) -> None:
    """Create `path` (and parents) if missing; the folder itself gets mode 0700."""
    if not path.is_dir():
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:
            pass  # a concurrent process made it (or a file is there: the checks below report it)


def check_private_dir(path: Path) -> None:
    """Raise UntrustedCacheError unless `path` is a directory owned by this user that nobody else
    may write (the rule for every folder cinn-py reads trusted data from)."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise UntrustedCacheError(f"{path} cannot be inspected ({exc.strerror or exc})") from exc
    if not stat.S_ISDIR(st.st_mode):
        raise UntrustedCacheError(f"{path} is not a directory")
    if st.st_uid != os.geteuid():
        raise UntrustedCacheError(f"{path} is owned by uid {st.st_uid}, expected this user (uid "
                                  f"{os.geteuid()})")
    if st.st_mode & 0o022:
        raise UntrustedCacheError(f"{path} is group- or world-writable (mode {stat.S_IMODE(st.st_mode):04o}, "
                                  f"expected no write bit for group and others)")


def _secret(root: Path) -> bytes:
    """The per-user HMAC secret of `root` (created on first use)."""
    path = root / SECRET_NAME
    try:
        data, st = read_regular_file(path, _SECRET_BYTES + 1)  # no link, FIFO, device or directory
    except FileNotFoundError:
        return _create_secret(root)
    except OSError as exc:
        raise UntrustedCacheError(f"{path} cannot be read ({exc.strerror or exc})") from exc
    if st.st_uid != os.geteuid() or st.st_mode & 0o077:
        raise UntrustedCacheError(f"{path} must be a regular file owned by this user with mode 0600 "
                                  f"(found uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):04o})")
    if len(data) != _SECRET_BYTES:
        raise UntrustedCacheError(f"{path} holds {len(data)} bytes, expected {_SECRET_BYTES}")
    return data


def _create_secret(root: Path) -> bytes:
    """Write a new secret atomically: a complete 0600 temporary file is hard-linked into place,
    so a concurrent reader never sees a partial secret and the first writer wins."""
    fd, tmp_name = tempfile.mkstemp(prefix=".secret.", suffix=".tmp", dir=root)   # mode 0600
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(secrets.token_bytes(_SECRET_BYTES))
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp_name, root / SECRET_NAME)
        except FileExistsError:
            pass  # another process created it first: use theirs
    finally:
        _silent_unlink(Path(tmp_name))
    return _secret(root)


def _mac(secret: bytes, namespace: str, key: str, payload: bytes) -> bytes:
    return hmac.new(secret, namespace.encode() + b"\0" + key.encode() + b"\0" + payload,
                    hashlib.sha256).digest()


def _encode(header: dict[str, Any], blob: bytes, secret: bytes, namespace: str, key: str) -> bytes:
    head = json.dumps({**header, "key": key, "namespace": namespace}, sort_keys=True).encode()
    payload = struct.pack("<I", len(head)) + head + blob
    return MAGIC + _mac(secret, namespace, key, payload) + payload


def _decode(data: bytes, secret: bytes, namespace: str, key: str) -> tuple[dict[str, Any], bytes] | None:
    """(header, blob) when `data` is an entry this user's cache wrote for `key`, else None."""
    if not data.startswith(MAGIC) or len(data) < len(MAGIC) + _DIGEST + 4:
        return None
    digest = data[len(MAGIC):len(MAGIC) + _DIGEST]
    payload = data[len(MAGIC) + _DIGEST:]
    if not hmac.compare_digest(_mac(secret, namespace, key, payload), digest):
        return None
    (head_len,) = struct.unpack("<I", payload[:4])
    try:
        header = json.loads(payload[4:4 + head_len].decode())
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(header, dict) or header.get("key") != key or header.get("namespace") != namespace:
        return None
    return header, payload[4 + head_len:]


def _silent_unlink(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass
