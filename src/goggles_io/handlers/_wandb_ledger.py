"""Which events a ``WandBHandler``'s W&B runs hold, kept beside their files (ADR 0070).

Exactly once into W&B across host deaths rests on two records:

* **The ledger** (``<dir>/wandb/goggles-<resume id>-<name hash>.seq``, JSON lines), written
  *before* rows are handed to W&B: for each row, the last sequence of each producer among the
  events in it, and which transaction log (``run-<id>.wandb``) and row index it goes to.
* **W&B's own transaction log**, which says how many of those rows W&B really wrote
  (:mod:`~goggles_io.handlers._wandb_log`).

After a host's death the handler the next host rebuilds reads the ledger and, for each
transaction log it names, counts the rows W&B wrote (once no process has the file open any
more: the dead host's W&B core writes until it exits). The marks are those of the rows written:
an event whose row W&B kept is skipped when sent again, one whose row it lost is taken again.
Neither a gap nor a duplicate, provided the host acknowledges a batch only once its rows are in
the transaction log (:class:`DurableRows`, the ``when_durable`` hook), so that a row W&B lost
always comes again. A row ``run.log`` refused takes no index: :meth:`Ledger.refused` voids what
was recorded from its index on, before the rows after it are recorded again and handed.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from goggles_io._util.append_file import SAFE_FLAGS, AppendLog, json_line, replace_whole, write_all
from goggles_io._util.report import report
from goggles_io._util.ticks import next_tick
from goggles_io.handlers._wandb_log import HistoryCounter, count_history

__all__ = ["DurableRows", "Ledger"]

_MAX_LEDGER_BYTES = 1 << 30
_COMPACT_ENTRIES = 2000  # entries appended before the confirmed ones are folded into one line
_TICK_S = 0.1
_WRITERS_GONE_S = 30.0  # how long recovery waits for a dead host's W&B core to let go


class Ledger(AppendLog):
    """The ledger of one handler's rows (made on the first write).

    Args:
        path: the ledger file.
        owner: who writes it, for messages.
    """

    def __init__(self, path: Path, owner: str) -> None:
        super().__init__(Path(path), owner, "events its W&B runs hold", "W&B may get them twice")
        self.marks: dict[str, int] = {}  # folded: rows confirmed written
        self._entries: list[dict[str, Any]] = []  # since the last fold

    def recover(self) -> dict[str, int]:
        """The marks of every row W&B wrote, from the ledger and the transaction logs it
        names; the ledger is rewritten as those marks alone."""
        records = self._read()
        if not records:
            return {}
        marks: dict[str, int] = {}
        placed: dict[str, list[Mapping[str, int]]] = {}  # each log's rows by index
        for record in records:
            if "all" in record:
                _merge(marks, record["all"])
                continue
            rows, at = placed.setdefault(record["log"], []), record["at"]
            del rows[at:]  # an entry says what goes from its index on (see refused())
            rows += [{}] * (at - len(rows))
            rows += record["rows"]
        for log, rows in placed.items():
            _writers_gone(log, self.owner)
            for row in rows[: count_history(log)]:
                _merge(marks, row)
        self.marks = marks
        self._entries = []
        self._rewrite()
        return dict(marks)

    def _read(self) -> list[dict[str, Any]]:
        try:
            fd = os.open(self.path, os.O_RDONLY | SAFE_FLAGS)
        except FileNotFoundError:
            return []
        except OSError as exc:
            report(f"{self.owner}: cannot read {self.path} ({exc.strerror or exc})")
            return []
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_size > _MAX_LEDGER_BYTES:
                report(f"{self.owner}: {self.path} is not a ledger of ours; not read")
                return []
            data = b"".join(iter(lambda: os.read(fd, 1 << 20), b""))
        finally:
            os.close(fd)
        records = []
        for line in data.splitlines():
            with contextlib.suppress(ValueError):
                record = json.loads(line)
                if _well_formed(record):
                    records.append(record)
        return records

    def intend(self, log: str, at: int, rows: list[dict[str, int]]) -> None:
        """Record, before handing them to W&B, that ``rows`` (each row's marks) go to the
        transaction log ``log`` from row index ``at`` on."""
        if self._failed or not any(rows):
            return
        entry = {"log": log, "at": at, "rows": rows}
        try:
            if self._fd is None:
                self._rewrite()
            if self._fd is not None:
                write_all(self._fd, json_line(entry))
        except OSError as exc:
            self._fail(exc)
            return
        self._entries.append(entry)

    def refused(self, log: str, at: int) -> None:
        """W&B refused the row recorded at index ``at`` of ``log``: it holds no row there, so
        what was recorded from ``at`` on is void (the rows after it land one index earlier and
        are recorded again, before they are handed). Written before the next row is handed."""
        if self._failed:
            return
        keep = []
        for entry in self._entries:
            if entry["log"] == log and entry["at"] + len(entry["rows"]) > at:
                entry["rows"] = entry["rows"][: max(at - entry["at"], 0)]
            if entry["rows"]:
                keep.append(entry)
        self._entries = keep
        if self._fd is None:
            return  # nothing recorded since the ledger was read: nothing to void
        try:
            write_all(self._fd, json_line({"log": log, "at": at, "rows": []}))
        except OSError as exc:
            self._fail(exc)

    def fold(self, written: Mapping[str, int]) -> None:
        """Every so many entries: fold those whose rows W&B has written (``written``: rows per
        transaction log) into one line, so the ledger stays small."""
        if len(self._entries) < _COMPACT_ENTRIES:
            return
        keep = []
        for entry in self._entries:
            if entry["at"] + len(entry["rows"]) <= written.get(entry["log"], 0):
                for row in entry["rows"]:
                    _merge(self.marks, row)
            else:
                keep.append(entry)
        self._entries = keep
        with contextlib.suppress(OSError):
            self._rewrite()

    def _rewrite(self) -> None:
        """Replace the ledger by the folded marks and the entries still open."""
        self.close()
        data = json_line({"all": self.marks}) + b"".join(map(json_line, self._entries))
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = replace_whole(self.path, data)
        except OSError as exc:
            self._fail(exc)


class DurableRows:
    """The rows handed to each transaction log, how many W&B wrote, and the callbacks waiting
    for them (a thread reads the logs while any callback waits)."""

    def __init__(self, owner: str) -> None:
        self.owner = owner
        self._counters: dict[str, HistoryCounter] = {}
        self._handed: dict[str, int] = {}
        self._waiting: deque[tuple[dict[str, int], Callable[[], Any]]] = deque()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._said = False

    def handed(self, log: str, rows: int) -> None:
        """``rows`` rows in all have been handed to W&B for transaction log ``log``."""
        with self._cond:
            if log not in self._counters:
                self._counters[log] = HistoryCounter(log)
            self._handed[log] = rows

    def written(self) -> dict[str, int]:
        """Rows W&B has written per transaction log, as last read."""
        with self._cond:
            return {log: counter.rows for log, counter in self._counters.items()}

    def when_durable(self, callback: Callable[[], Any]) -> None:
        """Call ``callback`` once every row handed so far is in its transaction log."""
        with self._cond:
            targets = {log: n for log, n in self._handed.items() if n > self._counters[log].rows}
            if targets and not self._closed:
                self._waiting.append((targets, callback))
                if self._thread is None:
                    self._thread = threading.Thread(
                        target=self._run, name="goggles-wandb-durable", daemon=True
                    )
                    self._thread.start()
                self._cond.notify()
                return
        callback()

    def _run(self) -> None:
        while True:
            with self._cond:
                if not next_tick(self._cond, lambda: self._closed, self._waiting, _TICK_S):
                    return
                counters = {log: self._counters[log] for log in self._waiting[0][0]}
            for counter in counters.values():
                counter.read()
            self._fire()

    def _fire(self) -> None:
        ready = []
        with self._cond:
            waiting = self._waiting
            while waiting and all(
                self._counters[log].rows >= n or self._counters[log].broken
                for log, n in waiting[0][0].items()
            ):
                ready.append(waiting.popleft()[1])
            broken = [c.broken for c in self._counters.values() if c.broken]
        if broken and not self._said:
            self._said = True
            report(
                f"{self.owner}: {broken[0]}; its rows count as taken when handed to W&B, so a "
                "host's death may lose the rows W&B had not written yet"
            )
        for callback in ready:
            callback()

    def close(self) -> None:
        """The runs are finished: call back everyone, stop the thread."""
        with self._cond:
            self._closed = True
            ready = [callback for _, callback in self._waiting]
            self._waiting.clear()
            self._cond.notify_all()
        for callback in ready:
            callback()


def _merge(marks: dict[str, int], row: Mapping[str, int]) -> None:
    for producer, seq in row.items():
        if seq > marks.get(producer, 0):
            marks[producer] = seq


def _writers_gone(log: str, owner: str) -> None:
    """Wait until no other process has ``log`` open: a dead host's W&B core writes its last
    block until it exits (it watches the host's pid)."""
    deadline = time.monotonic() + _WRITERS_GONE_S
    while _open_elsewhere(log):
        if time.monotonic() > deadline:
            report(f"{owner}: {log} is still open in another process; reading it as it is")
            return
        time.sleep(0.05)


def _open_elsewhere(path: str) -> bool:
    """Whether a process other than this one has ``path`` open (Linux ``/proc``)."""
    try:
        target = os.stat(path)
    except OSError:
        return False
    me = str(os.getpid())
    with contextlib.suppress(OSError):
        for pid in os.listdir("/proc"):
            if not pid.isdigit() or pid == me:
                continue
            with contextlib.suppress(OSError):
                for fd in os.listdir(f"/proc/{pid}/fd"):
                    with contextlib.suppress(OSError):
                        st = os.stat(f"/proc/{pid}/fd/{fd}")
                        if (st.st_ino, st.st_dev) == (target.st_ino, target.st_dev):
                            return True
    return False


def _marks_ok(marks: Any) -> bool:
    return isinstance(marks, dict) and all(
        isinstance(k, str) and type(v) is int and v > 0 for k, v in marks.items()
    )


def _well_formed(record: Any) -> bool:
    if not isinstance(record, dict):
        return False
    if "all" in record:
        return _marks_ok(record["all"])
    log, at, rows = record.get("log"), record.get("at"), record.get("rows")
    return (
        isinstance(log, str)
        and type(at) is int
        and at >= 0
        and isinstance(rows, list)
        and all(map(_marks_ok, rows))
    )
