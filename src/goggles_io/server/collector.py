"""The collector :class:`~goggles_io.handlers.remote.RemoteHandler` talks to, and the dashboard.

One ASGI application on uvicorn (ADR 0023; the ``[ui]`` extra): the remote protocol
(``docs/remote-protocol.md``) under ``/runs``, stored in SQLite, and the web dashboard of
``telemetry ui`` everywhere else, over the same database plus any run directories. Each point carries a per-run sequence number; a point whose number
was already stored is a duplicate (a retry after a lost response) and is skipped, so every point
is stored exactly once. A gap in the numbers (batches the client refused) is counted per run.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Sequence
from http import HTTPStatus
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qs

from goggles_io._event.remote_protocol import (
    MAX_BODY_BYTES,
    ProtocolError,
    check_finish,
    check_points,
    check_register,
    dump_json,
)
from goggles_io.exceptions import ConfigurationError
from goggles_io.server.asgi import KEY_COOKIE, CollectorApp
from goggles_io.server.uvicorn_thread import ServerThread, missing_ui_extra

__all__ = ["Collector", "is_loopback"]

_logger = logging.getLogger(__name__)

_DEFAULT_HEARTBEAT_S = 60.0  # RemoteHandler's default, for runs registered without one
_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, name TEXT, config TEXT, info TEXT, status TEXT,
    registered REAL, last_seen REAL, finished REAL, last_seq INTEGER, gaps INTEGER,
    duplicates INTEGER, heartbeats INTEGER, summary TEXT
);
CREATE TABLE IF NOT EXISTS points (
    run_id TEXT, seq INTEGER, name TEXT, value REAL, step INTEGER, time REAL,
    PRIMARY KEY (run_id, seq)
);
"""


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the collector on this machine (``localhost``, 127/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # "", "0.0.0.0"-like names and other host names reach beyond this machine


class Collector:
    """A small HTTP collector storing runs and points in SQLite, serving the dashboard too.

    Args:
        db_path: SQLite file, or ``":memory:"``. The database stays open across
            :meth:`shutdown` / :meth:`start`, so a restarted collector keeps its runs.
        host: Interface to bind. Anything beyond loopback needs ``api_key`` and logs a warning
            (the traffic is plain HTTP).
        port: Port to bind; ``0`` picks a free one (see :attr:`port` after :meth:`start`).
        api_key: When set, every request needs ``Authorization: Bearer <api_key>``; checked
            before any body is read.
        response_delay_s: Seconds to wait before answering each request (for tests); lowering
            it releases requests already waiting, so a test never sits out a long delay.
        read_timeout_s: A connection that sends nothing for this long (mid-request or idle
            between keep-alive requests) is closed; a half-sent body gets 408.
        max_body_bytes: Largest accepted body (413 beyond, for any ``Content-Length`` and for
            chunked bodies).
        stale_heartbeats: A ``running`` run silent for this many of its heartbeat periods is
            marked ``stale`` (its finish never came: the process died or could not reach us).
        run_dirs: Run directories, or roots holding them, that the dashboard shows beside the
            database's runs (read only, followed as they grow).

    Raises:
        ConfigurationError: ``host`` is beyond loopback and no ``api_key`` is given.
    """

    def __init__(
        self,
        db_path: str = ":memory:",
        host: str = "127.0.0.1",
        port: int = 0,
        api_key: str | None = None,
        response_delay_s: float = 0.0,
        read_timeout_s: float = 30.0,
        max_body_bytes: int = MAX_BODY_BYTES,
        stale_heartbeats: float = 3.0,
        run_dirs: Sequence[str | os.PathLike[str]] = (),
    ) -> None:
        self.host = host
        self.port = port
        self._api_key = api_key or None
        if not is_loopback(host) and self._api_key is None:
            msg = (
                f"binding the collector to {host!r} exposes it beyond this machine; it then needs "
                "an API key (api_key=..., or TELEMETRY_COLLECTOR_API_KEY for the CLI), or bind "
                "127.0.0.1."
            )
            raise ConfigurationError(msg, key="host", value=host)
        self.response_delay_s = response_delay_s
        self.requests_received = 0  # counted before any delay: lets tests see a request in flight
        self.read_timeout_s = read_timeout_s
        self.max_body_bytes = max_body_bytes
        self.stale_heartbeats = stale_heartbeats
        self.run_dirs = [os.fspath(p) for p in run_dirs]
        self._db = sqlite3.connect(db_path, check_same_thread=False)
        if db_path != ":memory:":
            # WAL + NORMAL: a commit per batch without an fsync each; a crash loses at most the
            # last batches, which the client's retries resend (seq numbers make that safe).
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(runs)")}
        if "heartbeat_s" not in columns:  # databases from before the stale marking
            self._db.execute("ALTER TABLE runs ADD COLUMN heartbeat_s REAL")
            self._db.commit()
        self._db_lock = threading.Lock()
        self._conns: set[Any] = set()  # accepted sockets (tests look at their options)
        self._conns_lock = threading.Lock()
        self.stopping = threading.Event()  # tells the dashboard's live streams to end
        self._server: ServerThread | None = None

    @property
    def exposed(self) -> bool:
        """Whether the bound interface reaches beyond this machine."""
        return not is_loopback(self.host)

    def __repr__(self) -> str:
        state = "serving" if self._server else "stopped"
        return f"Collector(url={self.url!r}, {state}, auth={'on' if self._api_key else 'off'})"

    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:8765``."""
        return f"http://{self.host}:{self.port}"

    def _make_server(self) -> ServerThread:
        try:
            from goggles_io.server.ui import make_ui_app  # needs the [ui] extra, like the server
        except ImportError as exc:
            raise missing_ui_extra(exc) from None
        app = CollectorApp(self, make_ui_app(self, self.run_dirs))
        return ServerThread(app, self.host, self.port, self.read_timeout_s, self._track)

    def start(self) -> Collector:
        """Bind (the same port again after a :meth:`shutdown`) and serve on a daemon thread.

        Raises:
            ImportError: the ``[ui]`` extra (uvicorn, starlette) is not installed.
        """
        if self._server is not None:
            return self
        server = self._make_server()
        self.stopping.clear()
        self.port = server.start()
        self._server = server
        if self.exposed:
            _logger.warning(
                "collector bound to %s:%d is reachable from other machines; requests need the "
                "API key, and traffic is plain HTTP (put TLS in front for untrusted networks)",
                self.host,
                self.port,
            )
        return self

    def serve_forever(self) -> None:
        """Serve on the calling thread until interrupted (the CLI's mode)."""
        self.start()
        assert self._server is not None
        try:
            while self._server.alive:
                self._server.join(0.5)
        finally:
            self.shutdown()

    def shutdown(self, timeout_s: float = 5.0) -> None:
        """Stop serving and drop open keep-alive connections, like a collector going down."""
        server, self._server = self._server, None
        if server is None:
            return
        self.stopping.set()
        server.stop(timeout_s)

    def close(self) -> None:
        """Shut down and close the database."""
        self.shutdown()
        with self._db_lock:
            self._db.close()

    def __enter__(self) -> Collector:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reading back (also used by tests and the example) ------------------------------------

    def runs(self) -> list[dict[str, Any]]:
        """Every registered run with its status, counts and config.

        A ``running`` run silent for ``stale_heartbeats`` of its heartbeat periods is marked
        ``stale`` first (and stored so): its process died, or its finish never got through.
        """
        now = time.time()
        with self._db_lock, self._db:
            self._db.execute(
                "UPDATE runs SET status = 'stale' WHERE status = 'running' AND last_seen < "
                "? - ? * COALESCE(heartbeat_s, ?)",
                (now, self.stale_heartbeats, _DEFAULT_HEARTBEAT_S),
            )
            rows = self._db.execute(
                "SELECT run_id, name, config, info, status, registered, last_seen, finished,"
                " last_seq, gaps, duplicates, heartbeats, summary FROM runs ORDER BY registered"
            ).fetchall()
            counts = dict(
                self._db.execute("SELECT run_id, COUNT(*) FROM points GROUP BY run_id").fetchall()
            )
        keys = ("run_id", "name", "config", "info", "status", "registered", "last_seen")
        keys += ("finished", "last_seq", "gaps", "duplicates", "heartbeats", "summary")
        result = []
        for row in rows:
            run = dict(zip(keys, row, strict=True))
            for k in ("config", "info", "summary"):
                run[k] = json.loads(run[k] or "{}")
            run["points"] = counts.get(run["run_id"], 0)
            result.append(run)
        return result

    def points(self, run_id: str, name: str | None = None) -> list[dict[str, Any]]:
        """The points of one run in sequence order, optionally of one metric.

        A value that is not a finite number (text or ``Infinity`` stored by an older collector)
        reads back as ``None``, like NaN: answers are strict JSON.
        """
        query = "SELECT seq, name, value, step, time FROM points WHERE run_id = ?"
        args: tuple[Any, ...] = (run_id,)
        if name is not None:
            query, args = query + " AND name = ?", (*args, name)
        with self._db_lock:
            rows = self._db.execute(query + " ORDER BY seq", args).fetchall()
        out = []
        for seq, pname, value, step, when in rows:
            if not isinstance(value, float) or value - value != 0.0:  # text, inf, nan -> null
                value = float(value) if type(value) is int else None
            out.append({"seq": seq, "name": pname, "value": value, "step": step, "time": when})
        return out

    # -- request handling -----------------------------------------------------------------------

    def _track(self, conn: Any, add: bool) -> None:
        with self._conns_lock:
            (self._conns.add if add else self._conns.discard)(conn)

    def _authorise(self, header: str, cookie: str = "") -> None:
        if self._api_key is None:
            return
        scheme, _, token = header.partition(" ")
        key = self._api_key.encode()
        if scheme == "Bearer" and hmac.compare_digest(token.encode(), key):
            return
        if cookie:
            jar: SimpleCookie = SimpleCookie()
            try:
                jar.load(cookie)
            except Exception:  # a garbled Cookie header is just no key
                jar = SimpleCookie()
            morsel = jar.get(KEY_COOKIE)
            if morsel is not None and hmac.compare_digest(morsel.value.encode(), key):
                return
        raise ProtocolError(HTTPStatus.UNAUTHORIZED, "missing or invalid API key")

    def _authorise_scope(self, scope: dict[str, Any]) -> None:
        """Bearer header, the dashboard's cookie, or (the page only) ``/?key=``."""
        if self._api_key is None:
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if scope["path"] == "/" and scope["method"] == "GET":
            given = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("key", [""])
            if hmac.compare_digest(given[0].encode(), self._api_key.encode()):
                return
        self._authorise(headers.get("authorization", ""), headers.get("cookie", ""))

    def _route(
        self, method: str, parts: list[str], body: Any, query: dict[str, list[str]]
    ) -> tuple[HTTPStatus, Any]:
        if method == "GET" and parts == ["runs"]:
            return HTTPStatus.OK, {"runs": self.runs()}
        if method == "GET" and len(parts) == 3 and parts[0] == "runs" and parts[2] == "points":
            self._require_run(parts[1])
            name = query.get("name", [None])[0]
            return HTTPStatus.OK, {"points": self.points(parts[1], name)}
        if method == "POST" and parts == ["runs"]:
            return HTTPStatus.OK, self._register(body)
        if method == "POST" and len(parts) == 3 and parts[0] == "runs":
            action = {"points": self._add_points, "heartbeat": self._heartbeat}
            action |= {"finish": self._finish}
            if parts[2] in action:
                if type(body) is not dict:
                    raise ProtocolError(HTTPStatus.BAD_REQUEST, "body must be a JSON object")
                self._require_run(parts[1])
                return HTTPStatus.OK, action[parts[2]](parts[1], body)
        raise ProtocolError(HTTPStatus.NOT_FOUND, f"no route for {method} {'/'.join(parts)!r}")

    def _require_run(self, run_id: str) -> None:
        with self._db_lock:
            found = self._db.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if not found:
            raise ProtocolError(HTTPStatus.NOT_FOUND, f"unknown run {run_id!r}; POST /runs first")

    def _register(self, body: Any) -> dict[str, Any]:
        run = check_register(body)
        run_id, config = run["run_id"], run["config"]
        now = time.time()
        with self._db_lock, self._db:
            row = self._db.execute("SELECT config FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            if row is None:
                self._db.execute(
                    "INSERT INTO runs (run_id, name, config, info, status, registered, last_seen,"
                    " finished, last_seq, gaps, duplicates, heartbeats, summary, heartbeat_s)"
                    " VALUES (?, ?, ?, ?, 'running', ?, ?, NULL, 0, 0, 0, 0, '{}', ?)",
                    (
                        run_id,
                        run["name"],
                        dump_json(config).decode(),
                        dump_json(run["info"]).decode(),
                        now,
                        now,
                        run["heartbeat_s"],
                    ),
                )
            else:  # re-registration (a retry, or config recorded later): merge the config
                merged = {**json.loads(row[0] or "{}"), **config}
                self._db.execute(
                    "UPDATE runs SET config = ?, last_seen = ?,"
                    " heartbeat_s = COALESCE(?, heartbeat_s) WHERE run_id = ?",
                    (dump_json(merged).decode(), now, run["heartbeat_s"], run_id),
                )
        return {"run_id": run_id}

    def _add_points(self, run_id: str, body: dict[str, Any]) -> dict[str, Any]:
        rows = check_points(body)
        gaps = 0
        with self._db_lock, self._db:
            (last_seq,) = self._db.execute(
                "SELECT last_seq FROM runs WHERE run_id = ?", (run_id,)
            ).fetchone()
            # Stored seqs are all <= last_seq, so a seq above it is new: gaps need no lookups.
            for row in rows:
                if row[0] > last_seq:
                    gaps += row[0] > last_seq + 1
                    last_seq = row[0]
            cur = self._db.executemany(
                "INSERT OR IGNORE INTO points VALUES (?, ?, ?, ?, ?, ?)",
                [(run_id, *row) for row in rows],
            )
            accepted = max(cur.rowcount, 0)
            duplicates = len(rows) - accepted
            self._db.execute(
                "UPDATE runs SET last_seq = ?, gaps = gaps + ?, duplicates = duplicates + ?,"
                " last_seen = ?, status = CASE status WHEN 'stale' THEN 'running' ELSE status END"
                " WHERE run_id = ?",
                (last_seq, gaps, duplicates, time.time(), run_id),
            )
        return {"accepted": accepted, "duplicates": duplicates, "gaps": gaps}

    def _heartbeat(self, run_id: str, body: dict[str, Any]) -> dict[str, Any]:
        with self._db_lock, self._db:
            self._db.execute(
                "UPDATE runs SET heartbeats = heartbeats + 1, last_seen = ?,"
                " status = CASE status WHEN 'stale' THEN 'running' ELSE status END"
                " WHERE run_id = ?",
                (time.time(), run_id),
            )
        return {"ok": True}

    def _finish(self, run_id: str, body: dict[str, Any]) -> dict[str, Any]:
        status, summary = check_finish(body)
        now = time.time()
        with self._db_lock, self._db:
            self._db.execute(
                "UPDATE runs SET status = ?, finished = ?, summary = ?, last_seen = ?"
                " WHERE run_id = ?",
                (status, now, dump_json(summary).decode(), now, run_id),
            )
        return {"ok": True}
