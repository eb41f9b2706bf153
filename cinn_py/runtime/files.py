"""Reading files that someone else may have replaced: only regular files, never a hang.

A cache entry, the HMAC secret or the tuning database can be replaced by a FIFO (opening it for
reading blocks until a writer comes), a device (`/dev/zero` reads forever), a directory or a
symbolic link. `read_regular_file` opens without blocking (`O_NONBLOCK`), checks what it opened
with `fstat` (no race between a check and the open) and reads at most a size limit, so each of
these is a `SpecialFileError` the caller can report and skip.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link"))


class SpecialFileError(OSError):
    """The path is not a regular file (or is larger than the reader accepts)."""


def file_kind(mode: int) -> str:
    """What a file of `mode` is, in words ("a FIFO (named pipe)", "a regular file", ...)."""
    for test, words in _KINDS:
        if test(mode):
            return words
    return "a regular file" if stat.S_ISREG(mode) else f"a special file (mode {mode:o})"


def read_regular_file(path: str | os.PathLike[str], limit: int,
                      follow_symlinks: bool = False) -> tuple[bytes, os.stat_result]:
    """(contents, fstat of the opened file) of `path`, a regular file of at most `limit` bytes.

    Raises FileNotFoundError when it is missing, SpecialFileError when it is anything but a
    regular file (a symbolic link too, unless `follow_symlinks`; then what the link points to
    counts) or too large, and OSError when it cannot be read."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow_symlinks:
            raise SpecialFileError(f"{path} is a symbolic link, not a regular file") from None
        raise
    try:
        st = os.fstat(fd)  # before fdopen, which refuses a directory with a bare EISDIR
        if not stat.S_ISREG(st.st_mode):
            raise SpecialFileError(f"{path} is {file_kind(st.st_mode)}, not a regular file")
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise SpecialFileError(f"{Path(path)} holds more than {limit} bytes (the most accepted here)")
    return data, st
