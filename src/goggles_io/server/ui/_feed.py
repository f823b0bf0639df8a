"""Feeding the index: new complete lines of a run's files (whole records of TensorBoard event
files), new rows of the collector database.

Each ``step(budget_bytes)`` reads at most about ``budget_bytes`` and says whether more is
waiting, so one big run never holds up the others and the first answers come while a large
log is still being read. A run's files are read in :func:`metric_sources` order and a later
file waits until the earlier ones are caught up, so the first file to log a metric owns it.
A line over ``MAX_LINE_BYTES`` is discarded without being held and counted as unreadable; a
file that resolves outside its run or is not a regular file (a FIFO) is never opened
(``refused`` in the manifest's extra).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, BinaryIO

from goggles_io._util.safe_read import LineCursor, RefusedFileError, open_inside, read_lines
from goggles_io.runs.lines import Parsed, csv_rows, json_lines, metric_sources
from goggles_io.runs.tfevents import is_tfevents, missing_reader, read_records, tf_events
from goggles_io.server.store import RunStore
from goggles_io.server.ui._index import RunIndex
from goggles_io.server.ui._sidecar import SinkColumns

__all__ = ["DbFeeder", "DirFeeder", "index_folder"]

_NAN = float("nan")
_DB_ROWS = 50_000  # rows of the points table read per step
_PARSE_BYTES = 64 << 10  # lines parsed at once: their objects are what a turn holds at its peak
_POINT_BYTES = 28  # a turn of sink columns takes as many points as its budget holds records


def index_folder(root: Path, kind: str, owner: str) -> Path:
    """Where the index of ``owner`` (a run directory or database path) lives under ``root``."""
    return root / kind / hashlib.sha1(owner.encode("utf-8", "surrogatepass")).hexdigest()[:20]


class DirFeeder:
    """Reads a run directory's metric files into its :class:`RunIndex` as they grow."""

    def __init__(self, run_dir: Path, root: Path) -> None:
        self.run_dir = run_dir
        owner = f"dir:{os.path.abspath(run_dir)}"
        self.index = RunIndex(index_folder(root, "dirs", owner), owner)
        self.pending = 0  # bytes known to be waiting after the last step
        self._columns: dict[str, SinkColumns] = {}  # the sink's columns of each JSONL log

    def step(self, budget_bytes: int) -> bool:
        """Index up to ``budget_bytes`` of new lines; ``True`` when more is waiting."""
        pending = 0
        refused: dict[str, str] = {}
        for path in metric_sources(self.run_dir):
            rel = path.relative_to(self.run_dir).as_posix()
            why = missing_reader() if is_tfevents(path) else None
            if why:  # TensorBoard event files without the tensorboard package: said, not read
                refused[rel] = f"{rel}: {why}"
                continue
            try:
                fh = open_inside(self.run_dir, path)
            except RefusedFileError as exc:  # a symlink out of the run, a FIFO: never read
                refused[rel] = str(exc)
                continue
            except OSError:
                continue
            with fh:
                st = os.fstat(fh.fileno())
                state = self.index.sources.get(rel)
                if state is not None and (
                    st.st_ino != state["inode"] or st.st_size < state["offset"]
                ):
                    self.index.drop_source(rel)  # replaced (a CSV whose header grew): read afresh
                    state = None
                if state is None:
                    state = self.index.sources[rel] = {"inode": st.st_ino, "offset": 0,
                                                       "header": None}  # fmt: skip
                waiting = st.st_size - state["offset"]
                if waiting <= 0:
                    continue
                if pending or budget_bytes <= 0:
                    pending += waiting  # an earlier file is not caught up: this one waits
                    continue
                used = self._read(fh, path, rel, state, min(waiting, budget_bytes))
            budget_bytes -= used
            pending += max(0, waiting - used)
        if refused != self.index.extra.get("refused", {}):
            self.index.extra["refused"] = refused
            self.index.save()
        self.pending = pending
        return pending > 0

    def _read(self, fh: BinaryIO, path: Path, rel: str, state: dict[str, Any], size: int) -> int:
        """Parse the next whole lines (about ``size`` bytes) in pieces of ``_PARSE_BYTES``, the
        points gathered as columns and added to the index once; a line over ``MAX_LINE_BYTES``
        is discarded without being held and counted as unreadable. Returns the bytes passed."""
        if is_tfevents(path):
            return self._read_tfevents(fh, path, rel, state, size)
        if path.suffix == ".jsonl" and not state.get("skipping"):
            taken, size = self._take_columns(fh, path, rel, state, size)
            if taken:
                return taken
        cursor = LineCursor(state["offset"], bool(state.get("skipping")))
        parsed = Parsed()
        folder = "" if path.parent == self.run_dir else path.parent.name
        while cursor.offset - state["offset"] < size:
            left = size - (cursor.offset - state["offset"])
            chunk, too_long = read_lines(fh, cursor, min(left, _PARSE_BYTES))
            parsed.skipped += too_long
            if not chunk:
                break  # only a torn last line so far (or an over-long one): wait for its end
            if path.suffix == ".csv":
                if too_long and state["offset"] == 0 and state["header"] is None:
                    state["header"] = []  # the header itself was unreadable: so is every row
                text = chunk.decode("utf-8", errors="replace")
                _, state["header"] = csv_rows(text, state["header"], parsed)
            else:
                json_lines(chunk.split(b"\n"), folder, parsed)
        used: int = cursor.offset - state["offset"]
        if not used:
            return 0  # only a torn last line so far: wait for its end
        self.index.add(parsed, rel)
        state["offset"], state["skipping"] = cursor.offset, cursor.skipping
        self.index.extra["skipped"] = self.index.extra.get("skipped", 0) + parsed.skipped
        self.index.save()
        return used

    def _take_columns(
        self, fh: BinaryIO, path: Path, rel: str, state: dict[str, Any], size: int
    ) -> tuple[int, int]:
        """Take the points the sink's columns hold from the offset on (ADR 0080): the bytes of
        the log passed (0: none), and how much text to read before the next columns."""
        cols = self._columns.get(rel)
        if cols is None:
            cols = self._columns[rel] = SinkColumns(self.run_dir, path)
        offset = int(state["offset"])
        got = cols.take(fh.fileno(), offset, int(state.get("chunk", 0)),
                        max(size // _POINT_BYTES, 1))  # fmt: skip
        if got.metrics is not None:
            self.index.add_columns(got.metrics, rel)
            state["offset"], state["skipping"], state["chunk"] = got.end, False, got.hint
            self.index.save()
            return max(got.end - offset, 1), size
        if got.text_until is not None:
            size = min(size, got.text_until - offset)
        return 0, size

    def _read_tfevents(
        self, fh: BinaryIO, path: Path, rel: str, state: dict[str, Any], size: int
    ) -> int:
        """Decode the next whole event records (about ``size`` bytes); returns the bytes passed."""
        records, offset, skipped = read_records(fh, state["offset"], size)
        used = int(offset - state["offset"])
        if not used:
            return 0  # only a torn last record so far: wait for its end
        folder = path.parent.relative_to(self.run_dir).as_posix()
        parsed = tf_events(records, "" if folder == "." else folder)
        parsed.skipped += skipped
        self.index.add(parsed, rel)
        state["offset"] = offset
        self.index.extra["skipped"] = self.index.extra.get("skipped", 0) + parsed.skipped
        self.index.save()
        return used


class DbFeeder:
    """Reads the collector database's points (by rowid) into one :class:`RunIndex` per run.

    Each run's manifest records the last rowid it holds, so rows read again after a crash
    (the database-wide position is saved after the runs) are not added twice.
    """

    def __init__(self, store: RunStore, folder: Path, owner: str) -> None:
        self.store = store
        self.folder = folder
        self.owner = owner
        self.runs: dict[str, RunIndex] = {}
        self.pending = 0
        self._state = RunIndex(folder / "state", owner)
        for child in sorted(folder.glob("runs/*")):  # runs indexed before a restart
            try:
                run_id = json.loads((child / "manifest.json").read_text())["extra"]["run_id"]
            except (OSError, ValueError, KeyError, TypeError):
                continue
            if isinstance(run_id, str):
                self.runs[run_id] = RunIndex(child, f"{owner}|{run_id}")

    def index(self, run_id: str) -> RunIndex:
        found = self.runs.get(run_id)
        if found is None:
            owner = f"{self.owner}|{run_id}"
            found = RunIndex(index_folder(self.folder, "runs", owner), owner)
            found.extra["run_id"] = run_id
            self.runs[run_id] = found
        return found

    def step(self, budget_bytes: int) -> bool:
        """Index the next rows of the points table; ``True`` when more were waiting."""
        rowid = int(self._state.extra.get("rowid", 0))
        rows = self.store.points_after(rowid, _DB_ROWS)
        if not rows:
            return False
        per_run: dict[str, tuple[Parsed, int]] = {}
        for row_id, run_id, name, value, step, when in rows:
            index = self.index(run_id)
            if row_id <= int(index.extra.get("rowid", 0)):
                continue  # already in this run's index (read again after a crash)
            parsed, _ = per_run.get(run_id, (Parsed(), 0))
            number = value if type(value) is float else _NAN
            parsed.column(name).add(
                _NAN if step is None else float(step), _NAN if when is None else float(when),
                _NAN, number,
            )  # fmt: skip
            per_run[run_id] = (parsed, row_id)
        for run_id, (parsed, last) in per_run.items():
            index = self.runs[run_id]
            index.add(parsed, "db")
            index.extra["rowid"] = last
            index.save()
        self._state.extra["rowid"] = rows[-1][0]
        self._state.save()
        return len(rows) == _DB_ROWS
