"""``key=value`` files (``run.kv``, ``config.kv``, ``metrics.config.kv``): read and written whole.

``.kv`` files are ``key=value`` lines (UTF-8, sorted by insertion), written to a temporary file
and moved into place with :func:`os.replace`, so a reader never sees half a file. Newlines and
backslashes in values are escaped (``\\n``, ``\\\\``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from goggles_io._util.safe_read import read_small
from goggles_io.exceptions import RunFileError

__all__ = ["overwrite_kv", "read_kv", "write_kv"]


def _escape(value: Any) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")


def _unescape(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            out.append({"n": "\n", "r": "\r", "\\": "\\"}.get(nxt, "\\" + nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _kv_text(mapping: Mapping[str, Any]) -> bytes:
    text = "".join(f"{k}={_escape(v)}\n" for k, v in mapping.items())
    return text.encode("utf-8", errors="backslashreplace")


def write_kv(path: str | os.PathLike[str], mapping: Mapping[str, Any]) -> None:
    """Write ``mapping`` as ``key=value`` lines, atomically (temp file + ``os.replace``).

    On failure (a full disk) the temporary file is removed and the error raised; the old file
    is untouched.
    """
    target = Path(path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(_kv_text(mapping))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def overwrite_kv(path: str | os.PathLike[str], mapping: Mapping[str, Any]) -> None:
    """Rewrite an existing ``.kv`` file in place: the last resort when the disk is full.

    Not atomic, but it reuses the file's blocks, so it usually succeeds where a new file
    cannot be created.
    """
    with open(path, "r+b") as fh:
        fh.write(_kv_text(mapping))
        fh.truncate()
        fh.flush()
        os.fsync(fh.fileno())


def read_kv(
    path: str | os.PathLike[str], *, inside: str | os.PathLike[str] | None = None
) -> dict[str, str]:
    """Read a ``.kv`` file; lines without ``=`` are skipped, values stay strings.

    Only a regular file of at most 4 MiB is read (``MAX_SMALL_FILE_BYTES``), and with
    ``inside`` only one that resolves inside that folder (a run's ``run.kv`` symlinked out of
    the run is not read).

    Raises:
        RunFileError: a line is not valid UTF-8 (the message names the file and line).
        RefusedFileError: a FIFO or other non-regular file, too big, or outside ``inside``
            (an ``OSError``).
        OSError: the file cannot be read.
    """
    result: dict[str, str] = {}
    base = None if inside is None else Path(inside)
    raw_lines = read_small(Path(path), base).splitlines()
    for number, raw in enumerate(raw_lines, start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            msg = f"{os.fspath(path)}: line {number}: not valid UTF-8 ({exc.reason})"
            raise RunFileError(msg, os.fspath(path), number) from None
        key, sep, value = line.partition("=")
        if sep and key:
            result[key] = _unescape(value)
    return result
