"""Exactly once per sink: the last sequence a sink kept from each producer, kept with its data.

The socket host stamps every event with its producer's id and its sequence in that producer's
stream (``Event.producer`` / ``Event.seq``, ADR 0057): the same on every redelivery, increasing
in the order the producer logged. A sink that remembers, durably and with its data, the last
sequence it kept from each producer skips a redelivered event exactly, however far back the
redelivery reaches (Kafka's idempotent producer; Flink's two-phase-commit sinks).

* :class:`Sequences` is the rule, for any sink: an event is new when its ``seq`` is above the
  last one taken from its ``producer``; take it, else skip it. The sink stores
  :attr:`Sequences.marks` in the same write (or transaction) as the data it stands for, and
  starts from what it stored.
* :class:`SequenceLog` stores them for an append-only file: before each write of the data file
  it appends ``{"at", "end", "seq"}`` to ``.<file>.seq`` beside it (a write-ahead record). On
  open, a record whose write did not land whole is dropped (and the partial write cut off), so
  the marks never claim more than the file holds, and never less than was acknowledged.
  ``LocalStorageHandler`` and ``CsvHandler`` write through it.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from goggles_io._event.records import Event
from goggles_io._util.append_file import (
    SAFE_FLAGS,
    AppendLog,
    json_line,
    open_regular_fd,
    replace_whole,
    write_all,
)
from goggles_io._util.report import report

__all__ = ["MAX_PRODUCERS", "SequenceLog", "Sequences", "sequence_log_path"]

MAX_PRODUCERS = 4096  # producers a sink remembers; the least recently written are forgotten
_MAX_LOG_BYTES = 64 << 20  # a longer log is not ours to read (it never grows past ~1 MiB)
_COMPACT_RECORDS = 10_000  # records appended before the log is rewritten as one snapshot


class Sequences:
    """The last sequence taken from each producer: which events a sink already has.

    Args:
        marks: what the sink stored with its data (``{producer: last seq}``).
    """

    def __init__(self, marks: Mapping[str, int] | None = None) -> None:
        self.marks: dict[str, int] = dict(marks or {})
        self.skipped = 0  # events found already taken

    def fresh(self, event: Event) -> bool:
        """Whether ``event`` is new to this sink; a new one counts as taken from now on.

        An event no host numbered (``producer`` empty: in-process, a left-over) is always new.
        """
        producer = event.producer
        if not producer:
            return True
        seq = event.seq
        marks = self.marks
        if seq <= marks.get(producer, 0):
            self.skipped += 1
            return False
        marks[producer] = seq
        return True


def sequence_log_path(data: Path) -> Path:
    """Where :class:`SequenceLog` keeps the marks of ``data``: ``.<name>.seq`` beside it."""
    return data.with_name(f".{data.name}.seq")


class SequenceLog(AppendLog):
    """The producers' last sequences an append-only file holds, written ahead of its data.

    Use: open the data file for appending, :meth:`recover` with its descriptor (the marks it
    holds), then for each write :meth:`intend` (where it goes, and the marks of the events in
    it), the write, and :meth:`landed`. :meth:`append` does the three.

    Args:
        data: the data file.
        owner: who writes it, for messages.
    """

    def __init__(self, data: Path, owner: str) -> None:
        self.data = Path(data)
        super().__init__(
            sequence_log_path(self.data),
            owner,
            f"events {self.data} holds",
            "its events may be written twice",
        )
        self.marks: dict[str, int] = {}
        self._ino = 0
        self._records = 0

    # -- open ---------------------------------------------------------------------------------
    def recover(self, fd: int) -> dict[str, int]:
        """Read the marks that hold for the data file open as ``fd`` and start a fresh log.

        A write whose record says it ends past the file's end did not land whole: the part of
        it that did is cut off (its events were not acknowledged, so they come again) and its
        marks do not count. Marks recorded for another file (the data was replaced) or a log
        that is missing, unreadable or not a regular file count for nothing. The log is made
        on the first write of a numbered event: a file that never holds one has none.
        """
        self.close()
        info = os.fstat(fd)
        self._ino = info.st_ino
        size = info.st_size
        records = self._read()
        if records is None:  # no log: nothing numbered was written here
            self.marks = {}
            return {}
        marks, cut = _replay(records, self._ino, size)
        if cut is not None and cut < size:
            os.ftruncate(fd, cut)
            report(
                f"{self.owner}: removed {size - cut} bytes of a write a crash interrupted in "
                f"{self.data} (its events were not acknowledged: they are sent again)"
            )
            size = cut
        self.marks = marks
        self._snapshot(size)
        return dict(marks)

    def _read(self) -> list[dict[str, Any]] | None:
        try:
            fd = os.open(self.path, os.O_RDONLY | SAFE_FLAGS)
        except FileNotFoundError:
            return None
        except OSError as exc:
            report(
                f"{self.owner}: cannot read {self.path} ({exc.strerror or exc}); starting afresh"
            )
            return []
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_size > _MAX_LOG_BYTES:
                report(f"{self.owner}: {self.path} is not a sequence log of ours; starting afresh")
                return []
            chunks = []
            while True:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
        finally:
            os.close(fd)
        records = []
        for line in b"".join(chunks).splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue  # a line a crash cut: its write never happened
            if _well_formed(record):
                records.append(record)
        return records

    def _snapshot(self, size: int) -> None:
        """Replace the log by one record of every mark, for the data file as it is now."""
        self.close()
        marks = self.marks
        if len(marks) > MAX_PRODUCERS:
            self.marks = marks = dict(list(marks.items())[-MAX_PRODUCERS:])
        line = json_line({"ino": self._ino, "at": size, "end": size, "seq": marks, "all": True})
        try:
            self._fd = replace_whole(self.path, line)
        except OSError as exc:
            self._fail(exc)
        self._records = 0

    @staticmethod
    def rebase(data: Path, ino: int, size: int, marks: Mapping[str, int]) -> None:
        """Say that the file of inode ``ino`` (``size`` bytes) holds ``marks``: written before
        that file replaces ``data`` (a rewrite), so that either file, whichever is found after
        a crash, has its marks.

        Raises:
            OSError: the record could not be written.
        """
        path = sequence_log_path(Path(data))
        if not marks and not os.path.lexists(path):
            return  # nothing numbered was ever written: no log to keep
        line = json_line({"ino": ino, "at": size, "end": size, "seq": dict(marks), "all": True})
        fd = open_regular_fd(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            write_all(fd, line)
        finally:
            os.close(fd)

    # -- writes -------------------------------------------------------------------------------
    def intend(self, at: int, end: int, marks: Mapping[str, int]) -> None:
        """Record, before writing bytes ``at``..``end`` of the data file, the marks of the events
        in them. A failure is reported once (a redelivery may then write those events again)."""
        if not marks or self._failed:
            return
        if self._fd is None:
            self._snapshot(at)  # the first numbered write: the log starts with what holds now
            if self._fd is None:
                return
        record = {"ino": self._ino, "at": at, "end": end, "seq": dict(marks)}
        try:
            write_all(self._fd, json_line(record))
        except OSError as exc:
            self._fail(exc)
            return
        self._records += 1

    def landed(self, marks: Mapping[str, int], size: int) -> None:
        """The write :meth:`intend` announced is whole; the file is now ``size`` bytes."""
        own = self.marks
        for producer, seq in marks.items():
            own.pop(producer, None)  # most recently written last: the cap forgets the oldest
            own[producer] = seq
        if self._records >= _COMPACT_RECORDS:
            self._snapshot(size)

    def append(self, fd: int, data: bytes, marks: Mapping[str, int]) -> None:
        """Write ``data`` at the end of the data file open as ``fd`` (``O_APPEND``), recorded
        with ``marks``: :meth:`intend`, the write, :meth:`landed`.

        Raises:
            OSError: the data could not be written whole (its record then counts for nothing).
        """
        at = os.fstat(fd).st_size
        self.intend(at, at + len(data), marks)
        write_all(fd, data)
        self.landed(marks, at + len(data))


def _well_formed(record: Any) -> bool:
    if not isinstance(record, dict):
        return False
    ino, at, end = (record.get(key) for key in ("ino", "at", "end"))
    if type(ino) is not int or type(at) is not int or type(end) is not int:
        return False
    if ino < 0 or not 0 <= at <= end:
        return False
    seq = record.get("seq")
    return isinstance(seq, dict) and all(
        isinstance(k, str) and type(v) is int and v > 0 for k, v in seq.items()
    )


def _replay(
    records: list[dict[str, Any]], ino: int, size: int
) -> tuple[dict[str, int], int | None]:
    """The marks that hold for the data file of inode ``ino`` and ``size`` bytes, and where to
    cut it (the start of a last write that did not land whole), from the log's records.

    The marks are those of the last snapshot for this file, plus each write recorded after it
    that landed whole: the next write starts where it ended (a failed write was cut back), or,
    for the last one, the file reaches its end.
    """
    start = None
    for i, record in enumerate(records):
        if record.get("all") is True and record["ino"] == ino:
            start = i
    if start is None or records[start]["end"] > size:
        return {}, None  # none for this file, or for a longer file that had its inode
    marks = dict(records[start]["seq"])
    pos = records[start]["end"]
    writes: list[dict[str, Any]] = []
    for record in records[start + 1 :]:
        if record["ino"] != ino or record.get("all") is True:
            break  # a snapshot for a rewrite that never replaced this file, and what followed
        writes.append(record)
    cut = None
    for i, write in enumerate(writes):
        if i + 1 < len(writes):
            whole = writes[i + 1]["at"] == write["end"]
        else:
            whole = write["end"] <= size
            if not whole and write["at"] <= size:
                cut = write["at"]
        if whole and write["at"] >= pos:
            for producer, seq in write["seq"].items():
                marks.pop(producer, None)
                marks[producer] = seq
            pos = write["end"]
    return marks, cut
