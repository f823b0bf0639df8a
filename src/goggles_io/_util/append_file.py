"""Small append-only files the sinks keep beside their output (sequence logs, ledgers, outboxes).

They are opened never following a symlink and never waiting on a FIFO (``SAFE_FLAGS``), hold one
strict-JSON record a line, and are written whole even when ``os.write`` writes short.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

__all__ = ["SAFE_FLAGS", "json_line", "open_regular_fd", "write_all"]

SAFE_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
"""Never follow a link, never block on a FIFO, never leak into a child."""


def json_line(record: dict[str, Any]) -> bytes:
    """One compact JSON line, newline-terminated, as UTF-8 (records here hold ints and strings)."""
    return (json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n").encode()


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` to ``fd``.

    Raises:
        OSError: the write failed, or wrote nothing (reported as ENOSPC).
    """
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:
            raise OSError(28, "short write")
        view = view[written:]


def open_regular_fd(path: Path, flags: int, mode: int = 0o644) -> int:
    """Open ``path`` with ``flags | SAFE_FLAGS``; only a regular file is kept.

    Raises:
        OSError: it cannot be opened, or it is not a regular file.
    """
    fd = os.open(path, flags | SAFE_FLAGS, mode)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(21, f"{path} is not a regular file")
    return fd
