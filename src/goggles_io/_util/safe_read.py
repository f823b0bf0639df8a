"""Reading files that anyone may have put in a run folder: confined, regular, bounded.

A run folder is data, not code, and the dashboard serves what it reads: so a file is opened
only when it resolves inside the folder it belongs to (a symlink out is refused), only when it
is a regular file (a FIFO would block the reader for ever, a device never ends), and it is read
in bounded pieces: a line longer than :data:`MAX_LINE_BYTES` is discarded up to its end
without being held, and counted. A whole-file read (``run.kv``) is refused over
:data:`MAX_SMALL_FILE_BYTES`. Memory therefore stays bounded whatever is on disk.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import attrs

__all__ = [
    "MAX_LINE_BYTES",
    "MAX_SMALL_FILE_BYTES",
    "LineCursor",
    "RefusedFileError",
    "iter_chunks",
    "open_inside",
    "open_regular",
    "read_lines",
    "read_small",
    "resolves_inside",
]

MAX_LINE_BYTES = 4 << 20
"""A line longer than this (4 MiB) is skipped and counted, never held in memory."""
MAX_SMALL_FILE_BYTES = 4 << 20
"""A file read whole (``run.kv``, ``config.kv``) over this size (4 MiB) is refused."""
_BLOCK = 1 << 20  # read size while looking for a line's end
_SKIP_FACTOR = 64  # a step may discard this many budgets of an over-long line (no memory cost)


class RefusedFileError(OSError):
    """A file is not read: it resolves outside its folder, is not a regular file, or is too big."""


def resolves_inside(base: Path, path: Path) -> bool:
    """Whether ``path`` (symlinks followed) is ``base`` or lies under it (symlinks followed)."""
    try:
        root = base.resolve()
        target = path.resolve()
    except (OSError, RuntimeError, ValueError):  # a symlink loop, a NUL in the name
        return False
    return target == root or root in target.parents


def open_regular(path: Path) -> BinaryIO:
    """Open ``path`` for reading when it is a regular file (a FIFO is never waited on).

    The file is opened non-blocking and checked with ``fstat`` on the descriptor, so what is
    read is what was checked.

    Raises:
        RefusedFileError: not a regular file (a FIFO, a device, a folder).
        OSError: the file cannot be opened (missing, no permission).
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            msg = f"{os.fspath(path)}: not a regular file (a FIFO, device or folder): not read"
            raise RefusedFileError(msg)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def open_inside(base: Path, path: Path) -> BinaryIO:
    """Open ``path`` when it is a regular file resolving inside ``base`` (:func:`open_regular`).

    Raises:
        RefusedFileError: outside ``base``, or not a regular file (the message says which).
        OSError: the file cannot be opened (missing, no permission).
    """
    if not resolves_inside(base, path):
        msg = f"{os.fspath(path)}: resolves outside {os.fspath(base)} (a symlink out): not read"
        raise RefusedFileError(msg)
    return open_regular(path.resolve())


def read_small(path: Path, base: Path | None = None, limit: int = MAX_SMALL_FILE_BYTES) -> bytes:
    """The whole of a small regular file, inside ``base`` when one is given.

    Raises:
        RefusedFileError: refused by :func:`open_inside`, or larger than ``limit`` bytes.
    """
    with open_regular(path) if base is None else open_inside(base, path) as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        msg = f"{os.fspath(path)}: larger than {limit} bytes: not read"
        raise RefusedFileError(msg)
    return data


@attrs.define
class LineCursor:
    """Where reading a file stands: the byte offset, and whether it is inside an over-long line."""

    offset: int = 0
    skipping: bool = False  # inside a line over the limit: bytes are discarded up to its end


def _skip(fh: BinaryIO, cursor: LineCursor, most: int) -> bool:
    """Discard the rest of an over-long line (at most ``most`` bytes); ``True`` once past it."""
    fh.seek(cursor.offset)
    while most > 0:
        block = fh.read(min(_BLOCK, most))
        if not block:
            return False
        end = block.find(b"\n")
        if end >= 0:
            cursor.offset += end + 1
            cursor.skipping = False
            return True
        cursor.offset += len(block)
        most -= len(block)
    return False


def read_lines(
    fh: BinaryIO, cursor: LineCursor, budget: int, *, final: bool = False,
    limit: int = MAX_LINE_BYTES,
) -> tuple[bytes, int]:  # fmt: skip
    """Whole lines from ``cursor`` on: about ``budget`` bytes (one line may need up to ``limit``).

    Returns the lines (ending in a newline; empty when nothing whole is there yet) and how many
    over-long lines were discarded on the way. ``cursor`` moves past what was returned or
    discarded. A last line without its newline waits for it, unless ``final`` (the file is read
    once, to its end): then it is returned too.
    """
    budget = max(1, min(budget, limit))
    too_long = 0
    while True:
        if cursor.skipping and not _skip(fh, cursor, _SKIP_FACTOR * budget):
            return b"", too_long
        fh.seek(cursor.offset)
        data = bytearray(fh.read(budget))
        end = data.rfind(b"\n") + 1
        while not end and len(data) <= limit:  # one line longer than the budget
            more = fh.read(_BLOCK)
            if not more:
                break
            start = len(data)
            data += more
            found = data.find(b"\n", start)
            end = found + 1 if found >= 0 else 0
        first = data.find(b"\n")
        if (first if first >= 0 else len(data)) > limit:  # the first line is over the limit
            too_long += 1
            if first >= 0:
                cursor.offset += first + 1
            else:
                cursor.offset += len(data)
                cursor.skipping = True
            continue
        if not end:
            if final and data:
                cursor.offset += len(data)
                return bytes(data), too_long
            return b"", too_long  # a torn last line so far: wait for its end
        cursor.offset += end
        return bytes(data[:end]), too_long


def iter_chunks(fh: BinaryIO, counted: list[int], budget: int = _BLOCK) -> Iterator[bytes]:
    """``fh`` to its end in blocks of whole lines (the last may lack its newline); over-long
    lines are discarded and added to ``counted[0]``."""
    cursor = LineCursor()
    while True:
        chunk, too_long = read_lines(fh, cursor, budget, final=True)
        counted[0] += too_long
        if chunk:
            yield chunk
        elif cursor.skipping and fh.read(1):
            continue  # the discard budget ran out inside the line: go on
        else:
            return
