"""``CsvHandler``: scalar metrics as a wide ``metrics.csv`` (one row per step) plus run config.

Over 400 lines, one piece: one handler's table (columns, pending rows, the sequence mark) that
every method reads.

The table is what a researcher opens in pandas or a spreadsheet: ``step`` first, ``wall_time``
(when the row's last value was logged, Unix seconds: the dashboard's wall-time axis), then one
column per metric in the order the metrics first appeared. A table written before the time column
existed is continued without it. When a new metric appears after rows were
written, the file is rewritten once with the extended header (temp file + ``os.replace``, so a
reader or a crash sees the old table or the new one, never half). Settings recorded through
:meth:`CsvHandler.record_config` go to ``metrics.config.kv`` beside it (``key=value`` lines).
An event sent again after its host died is skipped when the table holds it: beside it,
``.metrics.csv.seq`` keeps the last sequence the table holds from each producer, written ahead
of every write and carried over a rewrite (ADR 0057).
"""

from __future__ import annotations

import csv
import io
import logging
import os
import re
import tempfile
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from goggles_io._event.records import Event, Kind
from goggles_io._util.kvfile import read_kv, write_kv
from goggles_io._util.report import report
from goggles_io.exceptions import ConfigurationError
from goggles_io.handlers._files import LineFile, drop_torn_tail, read_region
from goggles_io.handlers._resume import CSV_TAIL_BYTES, CsvTail
from goggles_io.handlers.base import BaseHandler, register_handler
from goggles_io.handlers.sequences import SequenceLog, Sequences

__all__ = [
    "CONFIG_FILE",
    "METRICS_FILE",
    "STEP_COLUMN",
    "TIME_COLUMN",
    "CsvHandler",
    "CsvRows",
    "cell",
    "rows_text",
]

METRICS_FILE = "metrics.csv"
CONFIG_FILE = "metrics.config.kv"
STEP_COLUMN = "step"
TIME_COLUMN = "wall_time"  # one of the names the run readers take as wall time
_RENAMED = {STEP_COLUMN: "step (metric)", TIME_COLUMN: "wall_time (metric)"}  # never shadowed
_DEFAULT_ROWS_PER_BATCH = 16
_BAD_KEY = re.compile(r"[=\r\n]")


@register_handler
class CsvHandler(BaseHandler):
    """Write ``METRIC`` events as a wide CSV table, one row per step.

    Values logged for the same step are merged into one row while the row is pending; rows are
    written in batches of ``rows_per_batch`` steps (and on ``flush()``/``close()``), sorted by
    step, each batch pushed to the OS; ``close()`` also fsyncs. A value for a step whose row was
    already written (an evaluation at step 50 logged after training step 100 left the buffer),
    or a second value for the same metric and step, starts a new row with that step: nothing is
    overwritten, so group by ``step`` when a metric has several cadences. Events without a step
    get an empty ``step`` cell. Non-finite values are written ``nan``/``inf``/``-inf``, which
    ``float()`` and pandas read back.

    Args:
        path: a directory (gets ``metrics.csv`` and ``metrics.config.kv``) or a ``*.csv`` file
            (the config goes beside it as ``<stem>.config.kv``).
        name: bus-wide handler name; defaults to ``"csv:<absolute csv path>"``.
        level: kept for the handler protocol; metrics carry no level.
        rows_per_batch: pending steps kept in memory before a batch is written.

    Raises:
        ConfigurationError: ``path`` is empty or not path-like, or ``rows_per_batch`` < 1.
    """

    capabilities: ClassVar[frozenset[Kind]] = frozenset({Kind.METRIC})
    remote_methods: ClassVar[frozenset[str]] = frozenset({"record_config"})

    def __init__(
        self,
        path: str | os.PathLike[str],
        name: str | None = None,
        level: int = logging.NOTSET,
        *,
        rows_per_batch: int = _DEFAULT_ROWS_PER_BATCH,
    ) -> None:
        if not isinstance(path, (str, os.PathLike)) or not os.fspath(path):
            msg = f"path must be a non-empty str or os.PathLike (got {path!r})."
            raise ConfigurationError(msg, key="path", value=path)
        if isinstance(rows_per_batch, bool) or not isinstance(rows_per_batch, int):
            rows_per_batch = -1
        if rows_per_batch < 1:
            msg = f"rows_per_batch must be an int >= 1 (got {rows_per_batch!r})."
            raise ConfigurationError(msg, key="rows_per_batch", value=rows_per_batch)
        given = Path(os.path.abspath(os.fspath(path)))
        if given.suffix.lower() == ".csv":
            self.csv_path = given
            self.config_path = given.with_name(f"{given.stem}.config.kv")
        else:
            self.csv_path = given / METRICS_FILE
            self.config_path = given / CONFIG_FILE
        self.path = given
        super().__init__(name=f"csv:{self.csv_path}" if name is None else name, level=level)
        self.rows_per_batch = rows_per_batch
        self._columns: list[str] = []
        self._timed = True  # the table has the wall_time column (one written before has not)
        self._pending: dict[int | None, dict[str, Any]] = {}
        self._file: LineFile | None = None
        self._config_lock = threading.Lock()
        self._rows_lost = 0  # rows lost to a failed header rewrite (a full disk)
        # Where the table ended when opened, and its columns then: the rows a dead host's
        # handler wrote last lie before it (read on a redelivered list, or before a rewrite).
        self._opened_at = 0
        self._opened_columns: list[str] = []
        self._tail: CsvTail | None = None
        self.skipped_redelivered = 0  # events of redelivered lists found already written
        self._seqs = Sequences()  # the last sequence taken per producer (ADR 0057)
        self._row_marks: dict[str, int] = {}  # the sequences of the pending rows' events

    def config(self) -> dict[str, Any]:
        return {**super().config(), "path": str(self.path), "rows_per_batch": self.rows_per_batch}

    @property
    def columns(self) -> list[str]:
        """The header as written so far: ``step``, ``wall_time``, then the metric columns."""
        return [STEP_COLUMN, *([TIME_COLUMN] if self._timed else []), *self._columns]

    def open(self) -> None:
        """Open ``metrics.csv`` for appending, continuing the columns of an existing file.

        A row torn by a crash is removed first (its cut number would read as a value).

        Raises:
            ConfigurationError: the file exists but its header does not start with ``step``.
        """
        if self._file is not None:
            return
        self.csv_path.parent.mkdir(parents=True, exist_ok=True)
        drop_torn_tail(self.csv_path, self.name)
        header = _read_header(self.csv_path)
        if header and header[0] != STEP_COLUMN:
            msg = (
                f"{str(self.csv_path)!r} exists but is not a CsvHandler table (header starts "
                f"with {header[0]!r}, not 'step'); pass another path or move the file away."
            )
            raise ConfigurationError(msg, key="path", value=str(self.path))
        self._timed = not header or header[1:2] == [TIME_COLUMN]
        self._columns = header[2:] if header and self._timed else header[1:]
        self._file = self._line_file()
        self._opened_at, self._opened_columns, self._tail = self._file.size(), header[1:], None
        self._seqs, self._row_marks = Sequences(self._file.marks), {}

    def _line_file(self) -> LineFile:
        lines = LineFile(self.csv_path, self.name, sequenced=True)
        lines.lost_lines = self._lost_lines()
        lines.open()
        return lines

    def _lost_lines(self) -> int:
        return self._file.lost_lines if self._file is not None else getattr(self, "_lost", 0)

    def losses(self) -> dict[str, int]:
        """Rows not written (``write_failed``: a full disk), whole rows only, never torn."""
        lost = self._lost_lines() + self._rows_lost
        return {"write_failed": lost} if lost else {}

    def handle(self, event: Event) -> None:
        """Merge the event's values into the pending row of its step."""
        if self._file is None:
            self.open()
        if not self._seqs.fresh(event):  # the table holds it (or a pending row does)
            self.skipped_redelivered += 1
            return
        step = event.step
        values = _values(event)
        row = self._pending.get(step)
        if row is not None and not row.keys().isdisjoint(values):
            self._write_pending()  # same metric, same step again: keep both, in two rows
            row = None
        if row is None:
            if len(self._pending) >= self.rows_per_batch:
                self._write_pending()
            row = self._pending[step] = {}
        row.update(values)
        if event.timestamp:  # 0.0: an event built without one
            row[TIME_COLUMN] = max(event.timestamp, row.get(TIME_COLUMN, 0.0))
        if event.producer:  # written with the rows that hold it, never with earlier ones
            self._row_marks[event.producer] = event.seq

    def handle_redelivered(self, events: list[Event]) -> None:
        """Handle a list a dead host may have written a head of: skip that head, take the rest.

        Numbered events (``Event.seq``, ADR 0057) the table holds are skipped by
        :meth:`handle`, exactly. An unnumbered one (a dead process's left-overs) is found by
        its step and value cells among the last 1 MiB of rows the table held when this handler
        opened it (each cell matches once).
        """
        if self._file is None:
            self.open()
        skip, tail = 0, None if events and events[0].producer else self._rows_before_open()
        if tail is not None:
            cells = [(cell(e.step), {m: cell(v) for m, v in _values(e).items()}) for e in events]
            skip = tail.written_head(cells)
        self.skipped_redelivered += skip
        for event in events[skip:]:
            self.handle(event)

    def _rows_before_open(self) -> CsvTail | None:
        """The last rows the table held when opened (read once; ``None``: it was empty)."""
        if self._tail is None and self._opened_at:
            end = self._opened_at
            region = read_region(self.csv_path, end, CSV_TAIL_BYTES)
            self._tail = CsvTail(region, self._opened_columns, has_header=end <= CSV_TAIL_BYTES)
        return self._tail

    def flush(self) -> None:
        """Write every pending row and push the file buffer to the OS."""
        if self._file is not None:
            self._write_pending()

    def close(self) -> None:
        """Write pending rows, fsync and close; a later ``open`` appends."""
        if self._file is None:
            return
        self._write_pending()
        file, self._file = self._file, None
        try:
            file.close()
        finally:
            self._lost = file.lost_lines

    def record_config(self, mapping: Mapping[str, Any]) -> None:
        """Merge ``mapping`` into ``metrics.config.kv`` (``key=value`` lines), atomically.

        Settings are not metrics: they are recorded once per run, beside the table. Called by
        :meth:`goggles_io.runs.RunContext.set_config`; thread-safe and usable before ``open``.
        A key recorded again takes the new value.

        Raises:
            ConfigurationError: a key is not a non-empty str, or holds ``=`` or a line break.
        """
        items = dict(mapping)
        for key in items:
            if not isinstance(key, str) or not key or _BAD_KEY.search(key):
                msg = (
                    f"config key must be a non-empty str without '=' or line breaks "
                    f"(got {key!r}); rename it, e.g. 'optimizer.lr'."
                )
                raise ConfigurationError(msg, key=str(key), value=items[key])
        with self._config_lock:
            self.config_path.parent.mkdir(parents=True, exist_ok=True)
            merged: dict[str, Any] = {}
            if self.config_path.exists():
                merged.update(read_kv(self.config_path))
            merged.update(items)
            write_kv(self.config_path, merged)

    # -- writing ---------------------------------------------------------------------------
    def _write_pending(self) -> None:
        assert self._file is not None
        if not self._pending:
            self._file.flush()
            return
        pending, self._pending = self._pending, {}
        marks, self._row_marks = self._row_marks, {}
        known = {*self._columns, TIME_COLUMN}
        fresh = [m for row in pending.values() for m in row if m not in known]
        if fresh:
            try:
                self._extend_header(list(dict.fromkeys(fresh)))
            except OSError as exc:
                self._rows_lost += len(pending)
                report(
                    f"{self.name}: could not add columns to {self.csv_path} ({exc.strerror or exc});"
                    f" {len(pending)} rows not written (counted in finish())"
                )
                return
        ordered = sorted(pending.items(), key=lambda item: (item[0] is None, item[0] or 0))
        timed = (TIME_COLUMN,) if self._timed else ()
        self._file.add_marks(marks)  # recorded with the write of these rows
        self._file.add(
            *rows_text(
                [step, *(row.get(c) for c in (*timed, *self._columns))] for step, row in ordered
            )
        )
        self._file.flush()

    def _extend_header(self, fresh: list[str]) -> None:
        """Add columns: write the header of a new file, or rewrite an existing table once."""
        assert self._file is not None
        self._file.flush()
        columns = [*self._columns, *fresh]
        header = [STEP_COLUMN, *([TIME_COLUMN] if self._timed else []), *columns]
        if self._file.size() == 0:
            self._file.add(rows_text([header])[0], 0)
            self._file.flush()
            if self._file.size() == 0:
                raise OSError(28, "the header could not be written")
            self._columns = columns
            return
        self._rows_before_open()  # the rewrite moves them: keep them for a redelivered list
        self._lost = self._file.lost_lines
        held = dict(self._file.log.marks) if self._file.log is not None else {}
        self._file.close()
        self._file = None
        fd, tmp = tempfile.mkstemp(prefix=f".{self.csv_path.name}.", dir=self.csv_path.parent)
        try:
            with (
                os.fdopen(fd, "w", encoding="utf-8", newline="") as out,
                open(self.csv_path, encoding="utf-8", newline="") as old,
            ):
                writer = csv.writer(out, lineterminator="\n")
                writer.writerow(header)
                rows = csv.reader(old)
                next(rows, None)  # the old header
                for row in rows:
                    writer.writerow(row + [""] * (len(header) - len(row)))
                out.flush()
                os.fsync(out.fileno())
                info = os.fstat(out.fileno())
            # The new table holds what the old one did: said before it replaces the old one.
            SequenceLog.rebase(self.csv_path, info.st_ino, info.st_size, held)
            os.replace(tmp, self.csv_path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            self._file = self._line_file()
            raise
        self._columns = columns
        self._file = self._line_file()


def cell(value: Any) -> str:
    """One CSV cell: ``""`` for ``None``, floats as the shortest text that reads back exactly
    (``nan``/``inf``/``-inf`` too), bools as ``1``/``0``, numpy scalars as their value, the
    items of a tuple or list joined by spaces, anything else as ``str``."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (tuple, list)):
        return " ".join(cell(v) for v in value)
    item = getattr(value, "item", None)  # numpy scalars, without importing numpy
    if callable(item) and hasattr(value, "dtype"):
        return cell(item())
    return str(value)


def rows_text(rows: Iterable[Sequence[Any]]) -> tuple[bytes, int]:
    """``rows`` as CSV lines (cells through :func:`cell`), and how many lines that is."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    n = 0
    for row in rows:
        writer.writerow([cell(v) for v in row])
        n += 1
    return buffer.getvalue().encode("utf-8", errors="backslashreplace"), n


class CsvRows:
    """Append rows under a header written once, as whole lines (a full disk loses whole rows,
    counted in :attr:`lost_rows`, never a torn one).

    For tables whose columns are fixed up front, such as experiment_telemetry's
    ``<mode>_stats.csv``; :class:`CsvHandler` uses the same cells and lines for its wide table.
    """

    def __init__(self, path: str | os.PathLike[str], columns: Sequence[str], owner: str) -> None:
        self.path = Path(path)
        self.columns = list(columns)
        self._file = LineFile(self.path, owner)

    @property
    def lost_rows(self) -> int:
        """Rows that could not be written (a full disk)."""
        return self._file.lost_lines

    def append(self, values: Sequence[Any]) -> None:
        """Write one row (in :attr:`columns` order) and push it to the OS."""
        if not self._file.is_open:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file.open()
            if self._file.size() == 0:
                self._file.add(*rows_text([self.columns]))
        self._file.add(*rows_text([values]))
        self._file.flush()

    def close(self) -> None:
        """Fsync and close; a later :meth:`append` appends."""
        if self._file.is_open:
            self._file.close()


def _values(event: Event) -> dict[str, Any]:
    """An event's ``{column: value}`` (a metric named ``step`` or ``wall_time`` has its own)."""
    return {_RENAMED.get(str(m), str(m)): v for m, v in event.payload.items()}


def _read_header(path: Path) -> list[str]:
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            return next(csv.reader(handle), [])
    except FileNotFoundError:
        return []
