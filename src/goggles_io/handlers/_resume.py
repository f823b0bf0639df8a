"""What a killed writer already wrote of a redelivered list: the head a file sink skips.

A host killed while its handler was writing a list has written a head of it; the producer
sends the whole list again, marked redelivered, to the next host (issue 29), whose new handler
instance cannot remember what the dead one wrote. It can read it back: the dead instance wrote
in order, so what it wrote of a list is a head of the list, and lies among the last lines it
wrote. These finders look for the longest such head in a bounded tail of the file; the
handler writes only the rest, so each event is in the file once.

* ``log.jsonl``: :func:`written_head` matches lines by :func:`~._layout.identity` (timestamp,
  pid, logger, scope, step, payload …: what was logged), the head's lines being consecutive.
* ``metrics.csv``: :class:`CsvTail` matches an event by its step and its values' cells, each
  cell taken once; a row holds no timestamp, so two identical values logged for the same step
  and metric are one only if both are in the same redelivered list.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from goggles_io._event.records import Event
from goggles_io.handlers._files import read_region
from goggles_io.handlers._layout import identity, record, stamp

__all__ = [
    "CSV_TAIL_BYTES",
    "LOG_TAIL_BYTES",
    "CsvTail",
    "last_written_at",
    "names",
    "written_head",
]

# A socket batch holds at most 1024 events and 4 MiB; the lines a dead host wrote of the lists
# it was not acknowledged for are its last few batches (and a new host's first writes, if any).
LOG_TAIL_BYTES = 16 << 20
CSV_TAIL_BYTES = 1 << 20


def written_head(events: Sequence[Event], region: bytes) -> int:
    """How many of ``events``, from the first, are already lines of ``region`` (whole lines).

    The head's lines are consecutive; where the first event's line appears more than once
    (identical events), the longest run wins.
    """
    if not events or not region:
        return 0
    keys: list[str] = []

    def key(i: int) -> str:
        while len(keys) <= i:
            keys.append(identity(record(events[len(keys)])))
        return keys[i]

    needle = stamp(events[0])
    best = 0
    at = region.find(needle)
    while at >= 0 and best < len(events):
        start = region.rfind(b"\n", 0, at) + 1
        best = max(best, _run(region, start, key, len(events)))
        end = region.find(b"\n", at)
        if end < 0:
            break
        at = region.find(needle, end + 1)
    return best


def names(region: bytes, relative: str) -> bool:
    """Whether a line of ``region`` names the file ``relative`` (a media line's path)."""
    return json.dumps(relative, ensure_ascii=False).encode("utf-8", "backslashreplace") in region


def last_written_at(log: Path) -> float | None:
    """Since when a media file may be without its line in ``log``: the last line's timestamp.

    That line's event was logged before its media file was written; a file written later
    belongs to a line after it, written or not. The log's own time when it holds no line;
    ``None`` when there is no log.
    """
    try:
        info = os.stat(log)
    except FileNotFoundError:
        return None
    lines = read_region(log, info.st_size, 1 << 16).splitlines()
    try:
        logged = json.loads(lines[-1].decode("utf-8"))["timestamp"]
    except (IndexError, ValueError, TypeError, KeyError):
        return info.st_mtime
    if isinstance(logged, bool) or not isinstance(logged, (int, float)):
        return info.st_mtime
    return min(float(logged), info.st_mtime)


def _run(region: bytes, start: int, key: Callable[[int], str], limit: int) -> int:
    """How many lines from ``start`` are the lines of events ``0, 1, …`` (at most ``limit``)."""
    n = 0
    while n < limit:
        end = region.find(b"\n", start)
        if end < 0:
            break
        try:
            line = json.loads(region[start:end].decode("utf-8"))
        except ValueError:
            break
        if not isinstance(line, dict) or identity(line) != key(n):
            break
        n += 1
        start = end + 1
    return n


class CsvTail:
    """The rows a killed ``CsvHandler`` wrote last, kept from the moment the file was reopened.

    Taken at ``open`` (the table may be rewritten later, when a column is added), parsed on the
    first redelivered list. A matched cell is used up, so a value logged twice is skipped only
    as many times as it was written.

    Args:
        region: the table's last whole lines (:func:`~._files.read_region`).
        columns: the header's metric columns (without ``step``) when the region was read.
        has_header: the region starts at the file's start, so its first row is the header.
    """

    def __init__(self, region: bytes, columns: Sequence[str], *, has_header: bool) -> None:
        self._region: bytes | None = region
        self._has_header = has_header
        self._column = {name: i + 1 for i, name in enumerate(columns)}
        self._rows: dict[str, list[list[str | None]]] = {}  # step cell -> rows; None: used up

    def _parse(self) -> None:
        if self._region is None:
            return
        text = self._region.decode("utf-8", errors="replace")
        self._region = None
        rows = csv.reader(io.StringIO(text, newline=""))
        if self._has_header:
            next(rows, None)
        for row in rows:
            if row:
                self._rows.setdefault(row[0], []).append(list(row))

    def written_head(self, cells: Sequence[tuple[str, Mapping[str, str]]]) -> int:
        """How many of the events, from the first, are in the rows; their cells are used up.

        ``cells``: per event, its step cell and ``{column: value cell}``.
        """
        self._parse()
        for n, (step, values) in enumerate(cells):
            if not self._take(step, values):
                return n
        return len(cells)

    def _take(self, step: str, values: Mapping[str, str]) -> bool:
        places = [self._column.get(name) for name in values]
        if not values or None in places:
            return False
        for row in self._rows.get(step, ()):
            wanted = zip(places, values.values(), strict=True)
            if all(i is not None and i < len(row) and row[i] == v for i, v in wanted):
                for i in places:
                    assert i is not None
                    row[i] = None  # used up
                return True
        return False
