"""``RunStore``: the collector's runs and points in SQLite, stored exactly once by sequence number.

Each point carries a per-run sequence number; a point whose number was already stored is a
duplicate (a retry after a lost response) and is skipped. A gap in the numbers (batches the
client refused) is counted per run. A point that says who numbered it (``producer``, ``pseq``,
``part``: ADR 0069) is new only when ``(pseq, part)`` is above the last one stored from that
producer for the run; the ``producers`` table keeps that mark, updated in the transaction that
inserts the points, so a batch a dead host's successor sends again is skipped exactly however
far back it reaches (Kafka's idempotent producer). Such a point is stored under the run's next
sequence number: the client's ``seq`` then only counts gaps, since a rebuilt client may number
from a ``last_seq`` its dead predecessor's last request raised after it registered.

A ``running`` run is marked ``stale`` when it is silent for three heartbeat periods, or at once
when its sending process (the registration's ``process``) ran on this machine and is gone
(:func:`~goggles_io._util.liveness.process_gone`). The dashboard reads new points by ``rowid``
through :meth:`RunStore.points_after`, so it never needs the database itself.
"""

from __future__ import annotations

import math
import sqlite3
import threading
import time
from http import HTTPStatus
from typing import Any

import nonfinite_json
from goggles_io._event.remote_protocol import (
    ProtocolError,
    check_finish,
    check_points,
    check_register,
    dump_json,
)
from goggles_io._util.liveness import process_gone

__all__ = ["RunStore"]

_DEFAULT_HEARTBEAT_S = 60.0  # RemoteHandler's default, for runs registered without one
_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, name TEXT, config TEXT, info TEXT, status TEXT,
    registered REAL, last_seen REAL, finished REAL, last_seq INTEGER, gaps INTEGER,
    duplicates INTEGER, heartbeats INTEGER, summary TEXT
);
CREATE TABLE IF NOT EXISTS points (
    run_id TEXT, seq INTEGER, name TEXT, value REAL, step INTEGER, time REAL, negzero INTEGER,
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE IF NOT EXISTS producers (
    run_id TEXT, producer TEXT, pseq INTEGER, part INTEGER, PRIMARY KEY (run_id, producer)
);
"""
_MARKS_AT_ONCE = 500  # producers looked up per query (SQLite's variable limit is 32,766)
# A REAL column stores a float with no fractional part as an integer, so -0.0 comes back as
# 0.0: ``negzero`` is 1 for a stored -0.0, and every read puts the sign back in SQL.
_VALUE = "CASE WHEN negzero THEN -0.0 ELSE value END"
_RUN_KEYS = (
    "run_id",
    "name",
    "config",
    "info",
    "status",
    "registered",
    "last_seen",
    "finished",
    "last_seq",
    "gaps",
    "duplicates",
    "heartbeats",
    "summary",
)


class RunStore:
    """Runs and points of the remote protocol in one SQLite database, safe across threads.

    Args:
        db_path: SQLite file, or ``":memory:"``.
        stale_heartbeats: A ``running`` run silent for this many of its heartbeat periods is
            marked ``stale`` when runs are listed (its finish never came).
    """

    def __init__(self, db_path: str = ":memory:", stale_heartbeats: float = 3.0) -> None:
        self.stale_heartbeats = stale_heartbeats
        self.db_path = db_path
        """The database file (or ``":memory:"``): the dashboard keys its index by it."""
        self._db = sqlite3.connect(db_path, check_same_thread=False)
        if db_path != ":memory:":
            # WAL + NORMAL: a commit per batch without an fsync each; a crash loses at most the
            # last batches, which the client's retries resend (seq numbers make that safe).
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(runs)")}
        for column, kind in (("heartbeat_s", "REAL"), ("process", "TEXT")):
            if column not in columns:  # databases from before the stale marking
                self._db.execute(f"ALTER TABLE runs ADD COLUMN {column} {kind}")
        if "negzero" not in {row[1] for row in self._db.execute("PRAGMA table_info(points)")}:
            self._db.execute("ALTER TABLE points ADD COLUMN negzero INTEGER")  # an older database
        self._db.commit()
        self._lock = threading.Lock()

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()

    # -- reading ------------------------------------------------------------------------------
    def runs(self) -> list[dict[str, Any]]:
        """Every registered run with its status, counts and config (stale runs marked first)."""
        now = time.time()
        with self._lock, self._db:
            self._db.execute(
                "UPDATE runs SET status = 'stale' WHERE status = 'running' AND last_seen < "
                "? - ? * COALESCE(heartbeat_s, ?)",
                (now, self.stale_heartbeats, _DEFAULT_HEARTBEAT_S),
            )
            senders = self._db.execute(
                "SELECT run_id, process FROM runs WHERE status = 'running' AND process IS NOT NULL"
            ).fetchall()
            gone = [(run_id,) for run_id, process in senders if _gone(process)]
            if gone:  # its process died on this machine: no heartbeat will come
                self._db.executemany(
                    "UPDATE runs SET status = 'stale' WHERE run_id = ? AND status = 'running'", gone
                )
            rows = self._db.execute(
                f"SELECT {', '.join(_RUN_KEYS)} FROM runs ORDER BY registered"
            ).fetchall()
            counts = dict(
                self._db.execute("SELECT run_id, COUNT(*) FROM points GROUP BY run_id").fetchall()
            )
        result = []
        for row in rows:
            run = dict(zip(_RUN_KEYS, row, strict=True))
            for k in ("config", "info", "summary"):
                run[k] = nonfinite_json.loads(run[k] or "{}")
            run["points"] = counts.get(run["run_id"], 0)
            result.append(run)
        return result

    def points(self, run_id: str, name: str | None = None) -> list[dict[str, Any]]:
        """The points of one run in sequence order, optionally of one metric.

        A value that is not a finite number (text or ``Infinity`` stored by an older collector)
        reads back as ``None``, like NaN: answers are strict JSON.
        """
        query = f"SELECT seq, name, {_VALUE}, step, time FROM points WHERE run_id = ?"
        args: tuple[Any, ...] = (run_id,)
        if name is not None:
            query, args = query + " AND name = ?", (*args, name)
        with self._lock:
            rows = self._db.execute(query + " ORDER BY seq", args).fetchall()
        out = []
        for seq, pname, value, step, when in rows:
            if not isinstance(value, float) or value - value != 0.0:  # text, inf, nan -> null
                value = float(value) if type(value) is int else None
            out.append({"seq": seq, "name": pname, "value": value, "step": step, "time": when})
        return out

    def points_after(self, rowid: int, limit: int) -> list[tuple[Any, ...]]:
        """``(rowid, run_id, name, value, step, time)`` of points stored after ``rowid``."""
        with self._lock:
            return self._db.execute(
                f"SELECT rowid, run_id, name, {_VALUE}, step, time FROM points WHERE rowid > ?"
                " ORDER BY rowid LIMIT ?",
                (rowid, limit),
            ).fetchall()

    def require_run(self, run_id: str) -> None:
        """Raise a 404 :class:`ProtocolError` unless ``run_id`` was registered."""
        with self._lock:
            found = self._db.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if not found:
            raise ProtocolError(HTTPStatus.NOT_FOUND, f"unknown run {run_id!r}; POST /runs first")

    # -- writing (bodies as the protocol sends them; checked here) -----------------------------
    def register(self, body: Any) -> dict[str, Any]:
        """``POST /runs``: a new run, or a re-registration whose config is merged."""
        run = check_register(body)
        run_id, config = run["run_id"], run["config"]
        process = None if run["process"] is None else dump_json(run["process"]).decode()
        now = time.time()
        with self._lock, self._db:
            row = self._db.execute(
                "SELECT config, last_seq FROM runs WHERE run_id = ?", (run_id,)
            ).fetchone()
            if row is None:
                self._db.execute(
                    "INSERT INTO runs (run_id, name, config, info, status, registered, last_seen,"
                    " finished, last_seq, gaps, duplicates, heartbeats, summary, heartbeat_s,"
                    " process) VALUES (?, ?, ?, ?, 'running', ?, ?, NULL, 0, 0, 0, 0, '{}', ?, ?)",
                    (
                        run_id,
                        run["name"],
                        dump_json(config).decode(),
                        dump_json(run["info"]).decode(),
                        now,
                        now,
                        run["heartbeat_s"],
                        process,
                    ),
                )
            else:  # re-registration (a retry, config recorded later, a rebuilt handler)
                merged = {**nonfinite_json.loads(row[0] or "{}"), **config}
                self._db.execute(
                    "UPDATE runs SET config = ?, last_seen = ?,"
                    " heartbeat_s = COALESCE(?, heartbeat_s), process = COALESCE(?, process),"
                    " status = CASE status WHEN 'stale' THEN 'running' ELSE status END"
                    " WHERE run_id = ?",
                    (dump_json(merged).decode(), now, run["heartbeat_s"], process, run_id),
                )
        # last_seq: a client that restarted (a rebuilt handler) numbers its points after it.
        return {"run_id": run_id, "last_seq": 0 if row is None else int(row[1] or 0)}

    def add_points(self, run_id: str, body: dict[str, Any]) -> dict[str, Any]:
        """``POST /runs/<id>/points``: store new points once; count duplicates and gaps.

        A point with a producer is a duplicate when its ``(pseq, part)`` is not above the mark
        of its producer (a redelivery); the marks move in the same transaction as the points.
        """
        rows = check_points(body)
        gaps = repeats = 0
        with self._lock, self._db:
            (last_seq,) = self._db.execute(
                "SELECT last_seq FROM runs WHERE run_id = ?", (run_id,)
            ).fetchone()
            marks = self._marks(run_id, {row[5] for row in rows if row[5] is not None})
            moved: set[str] = set()
            stored: list[tuple[Any, ...]] = []
            next_seq: int | None = None
            # Stored seqs are all <= last_seq, so a seq above it is new: gaps need no lookups.
            for seq, name, value, step, when, producer, pseq, part in rows:
                if seq > last_seq:
                    gaps += seq > last_seq + 1
                    last_seq = seq
                negzero = _negative_zero(value)
                if producer is None:
                    stored.append((run_id, seq, name, value, step, when, negzero))
                    continue
                mark = marks.get(producer)
                if mark is not None and (pseq, part) <= mark:
                    repeats += 1
                    continue
                marks[producer] = (pseq, part)
                moved.add(producer)
                if next_seq is None:
                    (top,) = self._db.execute(
                        "SELECT MAX(seq) FROM points WHERE run_id = ?", (run_id,)
                    ).fetchone()
                    next_seq = top or 0
                next_seq += 1
                stored.append((run_id, next_seq, name, value, step, when, negzero))
            cur = self._db.executemany(
                "INSERT OR IGNORE INTO points VALUES (?, ?, ?, ?, ?, ?, ?)", stored
            )
            accepted = max(cur.rowcount, 0)
            duplicates = len(rows) - accepted
            if moved:
                self._db.executemany(
                    "INSERT INTO producers VALUES (?, ?, ?, ?) ON CONFLICT (run_id, producer)"
                    " DO UPDATE SET pseq = excluded.pseq, part = excluded.part",
                    [(run_id, p, *marks[p]) for p in moved],
                )
            self._db.execute(
                "UPDATE runs SET last_seq = ?, gaps = gaps + ?, duplicates = duplicates + ?,"
                " last_seen = ?, status = CASE status WHEN 'stale' THEN 'running' ELSE status END"
                " WHERE run_id = ?",
                (last_seq, gaps, duplicates, time.time(), run_id),
            )
        return {"accepted": accepted, "duplicates": duplicates, "gaps": gaps}

    def _marks(self, run_id: str, producers: set[str]) -> dict[str, tuple[int, int]]:
        """The last ``(pseq, part)`` stored from each of ``producers`` for the run (lock held)."""
        marks: dict[str, tuple[int, int]] = {}
        names = sorted(producers)
        for at in range(0, len(names), _MARKS_AT_ONCE):
            chunk = names[at : at + _MARKS_AT_ONCE]
            query = (
                "SELECT producer, pseq, part FROM producers WHERE run_id = ? AND producer IN "
                f"({', '.join('?' * len(chunk))})"
            )
            for producer, pseq, part in self._db.execute(query, (run_id, *chunk)):
                marks[producer] = (int(pseq), int(part))
        return marks

    def producer_marks(self, run_id: str) -> dict[str, tuple[int, int]]:
        """Every producer's last ``(pseq, part)`` stored for the run (for tests and tools)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT producer, pseq, part FROM producers WHERE run_id = ?", (run_id,)
            ).fetchall()
        return {producer: (int(pseq), int(part)) for producer, pseq, part in rows}

    def heartbeat(self, run_id: str, body: dict[str, Any]) -> dict[str, Any]:
        """``POST /runs/<id>/heartbeat``: the run is alive (a stale run runs again)."""
        with self._lock, self._db:
            self._db.execute(
                "UPDATE runs SET heartbeats = heartbeats + 1, last_seen = ?,"
                " status = CASE status WHEN 'stale' THEN 'running' ELSE status END"
                " WHERE run_id = ?",
                (time.time(), run_id),
            )
        return {"ok": True}

    def finish(self, run_id: str, body: dict[str, Any]) -> dict[str, Any]:
        """``POST /runs/<id>/finish``: the run's final status and summary."""
        status, summary = check_finish(body)
        now = time.time()
        with self._lock, self._db:
            self._db.execute(
                "UPDATE runs SET status = ?, finished = ?, summary = ?, last_seen = ?"
                " WHERE run_id = ?",
                (status, now, dump_json(summary).decode(), now, run_id),
            )
        return {"ok": True}


def _negative_zero(value: float | None) -> int | None:
    """1 for -0.0 (which the REAL column would store as 0), else ``None``."""
    return 1 if value == 0.0 and math.copysign(1.0, value) < 0.0 else None


def _gone(process: str) -> bool:
    """Whether a registration's sending process surely exited (``False`` when unsure)."""
    try:
        return process_gone(nonfinite_json.loads(process))
    except ValueError:
        return False
