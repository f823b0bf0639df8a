"""Small append-only files the sinks keep beside their output (sequence logs, ledgers, outboxes).

They are opened never following a symlink and never waiting on a FIFO (``SAFE_FLAGS``), hold one
strict-JSON record a line, and are written whole even when ``os.write`` writes short.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from pathlib import Path
from typing import Any

from goggles_io._util.report import report

__all__ = ["SAFE_FLAGS", "AppendLog", "json_line", "open_regular_fd", "replace_whole", "write_all"]

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


def replace_whole(path: Path, data: bytes) -> int:
    """Replace ``path`` by ``data`` (a temporary file renamed over it, so a crash leaves the old
    file or the new one) and return it opened again for appending.

    Raises:
        OSError: a step failed; the temporary file is gone and ``path`` holds what it held.
    """
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        fd = open_regular_fd(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        try:
            write_all(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        return open_regular_fd(path, os.O_WRONLY | os.O_APPEND)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


class AppendLog:
    """An append-only side file a sink keeps open: its first failure is reported once, with
    what the user risks, and it is closed (the owner then writes no more to it).

    Args:
        path: the file.
        owner: who writes it, for messages.
        holds: what it records, for messages ("events <file> holds").
        risk: what a host's death may then cause ("its events may be written twice").
    """

    def __init__(self, path: Path, owner: str, holds: str, risk: str) -> None:
        self.path = path
        self.owner = owner
        self._holds = holds
        self._risk = risk
        self._fd: int | None = None
        self._failed = False

    def close(self) -> None:
        """Close the file (what it holds stays, for the next reader)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def _fail(self, exc: OSError) -> None:
        self.close()
        if not self._failed:
            self._failed = True
            report(
                f"{self.owner}: cannot record which {self._holds} in {self.path} "
                f"({exc.strerror or exc}); after a host's death {self._risk}"
            )
