"""File helpers shared by the file-writing handlers (``storage``, ``csv``).

:class:`LineFile` is how they append: whole lines only. A write that fails part-way (a full
disk) is truncated back to the last complete line, so the file never holds a torn line of
ours; the lines that did not fit are counted, and the first failure is reported once on stderr
with the count (the final count is in the handler's ``losses()`` and so in ``finish()``).
A line torn by a writer that was killed mid-write is removed when the file is opened again
(:func:`drop_torn_tail`): the file stays strict JSON lines (or whole CSV rows), and the event
of that line, redelivered, is written again whole (issue 29).
"""

from __future__ import annotations

import os
from pathlib import Path

from goggles_io._util.report import report
from goggles_io.handlers._columns import ColumnWriter
from goggles_io.handlers.sequences import SequenceLog

__all__ = ["LineFile", "drop_torn_tail", "read_region"]

_CHUNK = 1 << 16


def drop_torn_tail(path: Path, owner: str) -> int:
    """Cut a torn last line (a writer killed mid-line) off ``path``; return the bytes removed.

    A torn line cannot be completed (its end is gone) and a reader would take its cut number
    for a value, so it goes; the cut is reported on stderr. ``0``: absent, empty or whole.
    """
    try:
        handle = open(path, "r+b")
    except FileNotFoundError:
        return 0
    with handle:
        end = handle.seek(0, os.SEEK_END)
        if end == 0:
            return 0
        handle.seek(end - 1)
        if handle.read(1) == b"\n":
            return 0
        keep, pos = 0, end
        while pos > 0:  # back to the last newline, a chunk at a time (a torn line may be long)
            start = max(pos - _CHUNK, 0)
            handle.seek(start)
            newline = handle.read(pos - start).rfind(b"\n")
            if newline >= 0:
                keep = start + newline + 1
                break
            pos = start
        handle.truncate(keep)
    report(f"{owner}: removed the torn last line ({end - keep} bytes) a crash left in {path}")
    return end - keep


def read_region(path: Path, end: int, size: int) -> bytes:
    """The whole lines of ``path`` in its ``size`` bytes before offset ``end`` (b"" if absent).

    A line cut by the region's start is left out, so every line returned is complete.
    """
    start = max(end - size, 0)
    try:
        with open(path, "rb") as handle:
            handle.seek(start)
            data = handle.read(end - start)
    except FileNotFoundError:
        return b""
    if start > 0:
        data = data[data.find(b"\n") + 1 :] if b"\n" in data else b""
    return data


class LineFile:
    """Buffered appends of whole lines to one file, truncated back when a write fails.

    With ``sequenced``, each write is recorded with the producers' last sequences of the events
    in it (:class:`~goggles_io.handlers.sequences.SequenceLog`, ADR 0057): :attr:`marks` are
    then what the file holds, recovered at :meth:`open`.

    Args:
        path: the file (created on :meth:`open`, appended to).
        owner: who writes it, for messages (the handler's name).
        buffer_bytes: buffered bytes that trigger a write without waiting for :meth:`flush`.
        sequenced: keep the producers' sequences of what the file holds beside it.
        columns: keep the metric points of its lines as columns beside it (ADR 0080): the
            caller gives each event to :attr:`columns` before buffering its line.
    """

    def __init__(
        self,
        path: Path,
        owner: str,
        buffer_bytes: int = 1 << 16,
        *,
        sequenced: bool = False,
        columns: bool = False,
    ) -> None:
        self.path = path
        self.owner = owner
        self.buffer_bytes = buffer_bytes
        self.lost_lines = 0
        self.log = SequenceLog(path, owner) if sequenced else None
        self.marks: dict[str, int] = {}  # what the file held when opened (sequenced)
        self.columns = ColumnWriter(path, owner) if columns else None
        self._fd: int | None = None
        self._chunks: list[bytes] = []
        self._lines = 0
        self._buffered = 0
        self._pending: dict[str, int] = {}  # the marks of what is buffered
        self._reported = False

    @property
    def is_open(self) -> bool:
        """Whether the file is open."""
        return self._fd is not None

    def open(self) -> None:
        """Open for appending; a torn last line left by a crash is removed first."""
        if self._fd is not None:
            return
        drop_torn_tail(self.path, self.owner)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        if self.log is not None:
            self.marks = self.log.recover(self._fd)
        if self.columns is not None:  # after every cut of the text: they never claim cut text
            self.columns.open(self._fd)

    def size(self) -> int:
        """Bytes in the file (what is buffered not included)."""
        return os.fstat(self._fd).st_size if self._fd is not None else 0

    def add(self, data: bytes, lines: int = 1, producer: str = "", seq: int = 0) -> None:
        """Buffer ``data`` (``lines`` whole lines, each ending in ``\\n``); write when enough.

        ``producer``, ``seq``: the event the line stands for (recorded with the write)."""
        if producer:
            self._pending[producer] = seq
        self._chunks.append(data)
        self._lines += lines
        self._buffered += len(data)
        if self._buffered >= self.buffer_bytes:
            self.flush()

    def add_marks(self, marks: dict[str, int]) -> None:
        """Record ``marks`` with the next write: the events of the lines added before it."""
        self._pending.update(marks)

    def flush(self) -> None:
        """Write what is buffered, as whole lines; count (and report once) what did not fit."""
        if not self._chunks or self._fd is None:
            return
        data, lines = b"".join(self._chunks), self._lines
        self._chunks, self._lines, self._buffered = [], 0, 0
        marks, self._pending = self._pending, {}
        end = self._append(data, lines, marks)
        if self.columns is not None:
            if end is None:
                self.columns.discard()
            else:
                self.columns.landed(end, data)

    def sync(self) -> None:
        """Flush and fsync (a failure to sync is reported, not raised)."""
        self.flush()
        if self._fd is None:
            return
        try:
            os.fsync(self._fd)
        except OSError as exc:
            self._fail(exc, 0)

    def close(self) -> None:
        """Flush, fsync and close; a later :meth:`open` appends."""
        if self._fd is None:
            return
        try:
            self.sync()
        finally:
            fd, self._fd = self._fd, None
            os.close(fd)
            if self.log is not None:
                self.log.close()
            if self.columns is not None:
                self.columns.close()
        if self.lost_lines:
            report(
                f"{self.owner}: {self.lost_lines} lines were not written to {self.path} "
                "(see the error above)"
            )

    def _append(self, data: bytes, lines: int, marks: dict[str, int]) -> int | None:
        """Write ``data``; where it ended when one ``write`` took it whole (else ``None``)."""
        assert self._fd is not None
        start = os.fstat(self._fd).st_size
        log = self.log
        if log is not None:  # ahead of the data: a crash in between claims nothing unwritten
            log.intend(start, start + len(data), marks)
        done, writes = 0, 0
        try:
            while done < len(data):
                written = os.write(self._fd, data[done:])
                if written <= 0:
                    raise OSError(28, "short write")
                done += written
                writes += 1
            # O_APPEND: the offset is where this write ended, whoever else appends
            end = os.lseek(self._fd, 0, os.SEEK_CUR) if writes == 1 else None
        except OSError as exc:
            keep = data.rfind(b"\n", 0, done) + 1  # whole lines that made it
            try:
                os.ftruncate(self._fd, start + keep)
            except OSError:
                pass
            self._fail(exc, lines - data.count(b"\n", 0, keep))
            return None
        if log is not None:
            log.landed(marks, start + len(data))
        return end

    def _fail(self, exc: OSError, lost: int) -> None:
        self.lost_lines += lost
        if not self._reported:
            self._reported = True
            report(
                f"{self.owner}: could not write {self.path} ({exc.strerror or exc}); "
                f"{lost} lines not written; further failures are counted and reported in "
                "finish(), nothing is torn"
            )
