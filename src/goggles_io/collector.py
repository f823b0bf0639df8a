"""The reference HTTP collector that :class:`~goggles_io.handlers.remote.RemoteHandler` talks to.

Stdlib only (``http.server.ThreadingHTTPServer`` + ``sqlite3``, see ADR 0008): it exists so the
remote protocol (``docs/remote-protocol.md``) has a real peer in tests, examples and on a lab
box, not to be a dashboard. Each point carries a per-run sequence number; a point whose number
was already stored is a duplicate (a retry after a lost response) and is skipped, so every point
is stored exactly once. A gap in the numbers (batches the client refused) is counted per run.
"""

from __future__ import annotations

import hmac
import json
import logging
import socket
import sqlite3
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

__all__ = ["Collector"]

_logger = logging.getLogger(__name__)

_MAX_BODY_BYTES = 16 * 1024 * 1024
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


class _Reject(Exception):
    def __init__(self, status: HTTPStatus, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    collector: Collector

    def handle_error(self, request: Any, client_address: Any) -> None:
        # a client hanging up mid-request is routine here, not worth a traceback on stderr
        _logger.debug("connection from %s ended with an error", client_address, exc_info=True)


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.server.collector._track(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.collector._track(self.connection, add=False)

    def log_message(self, format: str, *args: Any) -> None:
        _logger.debug("%s " + format, self.address_string(), *args)

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def _dispatch(self, method: str) -> None:
        collector = self.server.collector
        collector.requests_received += 1
        try:
            body = self._read_body()
            collector._wait_delay()
            collector._authorise(self.headers.get("Authorization", ""))
            url = urlsplit(self.path)
            parts = [unquote(p) for p in url.path.strip("/").split("/") if p]
            status, reply = collector._route(method, parts, body, parse_qs(url.query))
        except _Reject as exc:
            status, reply = exc.status, {"error": exc.message}
        data = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _read_body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        if length > _MAX_BODY_BYTES:
            self.close_connection = True
            raise _Reject(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"body of {length} bytes too big")
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return {}
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise _Reject(HTTPStatus.BAD_REQUEST, f"body is not JSON: {exc}") from None


class Collector:
    """A small HTTP collector storing runs and points in SQLite.

    Args:
        db_path: SQLite file, or ``":memory:"``. The database stays open across
            :meth:`shutdown` / :meth:`start`, so a restarted collector keeps its runs.
        host: Interface to bind; keep ``127.0.0.1`` unless the API key is set.
        port: Port to bind; ``0`` picks a free one (see :attr:`port` after :meth:`start`).
        api_key: When set, every request needs ``Authorization: Bearer <api_key>``.
        response_delay_s: Seconds to wait before answering each request (for tests); lowering
            it releases requests already waiting, so a test never sits out a long delay.
    """

    def __init__(
        self,
        db_path: str = ":memory:",
        host: str = "127.0.0.1",
        port: int = 0,
        api_key: str | None = None,
        response_delay_s: float = 0.0,
    ) -> None:
        self.host = host
        self.port = port
        self._delay_s = response_delay_s
        self._delay_cond = threading.Condition()
        self.requests_received = 0  # counted before any delay: lets tests see a request in flight
        self._api_key = api_key or None
        self._db = sqlite3.connect(db_path, check_same_thread=False)
        self._db.executescript(_SCHEMA)
        self._db_lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._conns: set[socket.socket] = set()
        self._conns_lock = threading.Lock()

    def __repr__(self) -> str:
        state = "serving" if self._server else "stopped"
        return f"Collector(url={self.url!r}, {state}, auth={'on' if self._api_key else 'off'})"

    @property
    def response_delay_s(self) -> float:
        """Seconds each request waits before its answer."""
        return self._delay_s

    @response_delay_s.setter
    def response_delay_s(self, value: float) -> None:
        with self._delay_cond:
            self._delay_s = value
            self._delay_cond.notify_all()

    def _wait_delay(self) -> None:
        arrived = time.monotonic()
        with self._delay_cond:
            while (left := self._delay_s - (time.monotonic() - arrived)) > 0:
                self._delay_cond.wait(left)

    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:8765``."""
        return f"http://{self.host}:{self.port}"

    def start(self) -> Collector:
        """Bind (the same port again after a :meth:`shutdown`) and serve on a daemon thread."""
        if self._server is not None:
            return self
        server = _Server((self.host, self.port), _RequestHandler)
        server.collector = self
        self.port = server.server_address[1]
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.name = f"collector-{self.port}"
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve on the calling thread until interrupted (the CLI's mode)."""
        self.start()
        assert self._thread is not None
        try:
            while self._thread.is_alive():
                self._thread.join(0.5)
        finally:
            self.shutdown()

    def shutdown(self, timeout_s: float = 5.0) -> None:
        """Stop serving and drop open keep-alive connections, like a collector going down."""
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        with self._conns_lock:
            conns = list(self._conns)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(timeout_s)

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
        """Every registered run with its status, counts and config."""
        with self._db_lock:
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
        """The points of one run in sequence order, optionally of one metric."""
        query = "SELECT seq, name, value, step, time FROM points WHERE run_id = ?"
        args: tuple[Any, ...] = (run_id,)
        if name is not None:
            query, args = query + " AND name = ?", (*args, name)
        with self._db_lock:
            rows = self._db.execute(query + " ORDER BY seq", args).fetchall()
        return [dict(zip(("seq", "name", "value", "step", "time"), r, strict=True)) for r in rows]

    # -- request handling -----------------------------------------------------------------------

    def _track(self, conn: socket.socket, *, add: bool) -> None:
        with self._conns_lock:
            (self._conns.add if add else self._conns.discard)(conn)

    def _authorise(self, header: str) -> None:
        if self._api_key is None:
            return
        scheme, _, token = header.partition(" ")
        if scheme != "Bearer" or not hmac.compare_digest(token.encode(), self._api_key.encode()):
            raise _Reject(HTTPStatus.UNAUTHORIZED, "missing or invalid API key")

    def _route(
        self, method: str, parts: list[str], body: Any, query: dict[str, list[str]]
    ) -> tuple[HTTPStatus, Any]:
        if method == "GET" and parts == ["runs"]:
            return HTTPStatus.OK, {"runs": self.runs()}
        if method == "GET" and len(parts) == 3 and parts[0] == "runs" and parts[2] == "points":
            self._require_run(parts[1])
            name = query.get("name", [None])[0]
            return HTTPStatus.OK, {"points": self.points(parts[1], name)}
        if not isinstance(body, dict):
            raise _Reject(HTTPStatus.BAD_REQUEST, "body must be a JSON object")
        if method == "POST" and parts == ["runs"]:
            return HTTPStatus.OK, self._register(body)
        if method == "POST" and len(parts) == 3 and parts[0] == "runs":
            action = {"points": self._add_points, "heartbeat": self._heartbeat}
            action |= {"finish": self._finish}
            if parts[2] in action:
                self._require_run(parts[1])
                return HTTPStatus.OK, action[parts[2]](parts[1], body)
        raise _Reject(HTTPStatus.NOT_FOUND, f"no route for {method} {'/'.join(parts)!r}")

    def _require_run(self, run_id: str) -> None:
        with self._db_lock:
            found = self._db.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if not found:
            raise _Reject(HTTPStatus.NOT_FOUND, f"unknown run {run_id!r}; POST /runs first")

    def _register(self, body: dict[str, Any]) -> dict[str, Any]:
        run_id = body.get("run_id")
        config = body.get("config") or {}
        if not isinstance(run_id, str) or not run_id or not isinstance(config, dict):
            raise _Reject(HTTPStatus.BAD_REQUEST, "register needs a run_id str and config object")
        now = time.time()
        with self._db_lock, self._db:
            row = self._db.execute("SELECT config FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            if row is None:
                self._db.execute(
                    "INSERT INTO runs VALUES (?, ?, ?, ?, 'running', ?, ?, NULL, 0, 0, 0, 0, '{}')",
                    (
                        run_id,
                        str(body.get("name") or run_id),
                        json.dumps(config),
                        json.dumps(body.get("info") or {}),
                        now,
                        now,
                    ),
                )
            else:  # re-registration (a retry, or config recorded later): merge the config
                merged = {**json.loads(row[0] or "{}"), **config}
                self._db.execute(
                    "UPDATE runs SET config = ?, last_seen = ? WHERE run_id = ?",
                    (json.dumps(merged), now, run_id),
                )
        return {"run_id": run_id}

    def _add_points(self, run_id: str, body: dict[str, Any]) -> dict[str, Any]:
        points = body.get("points")
        if not isinstance(points, list):
            raise _Reject(HTTPStatus.BAD_REQUEST, "points must be a list")
        rows = []
        for p in points:
            if not (
                isinstance(p, dict)
                and isinstance(p.get("seq"), int)
                and isinstance(p.get("name"), str)
            ):
                raise _Reject(HTTPStatus.BAD_REQUEST, f"malformed point {p!r}")
            rows.append((run_id, p["seq"], p["name"], p.get("value"), p.get("step"), p.get("time")))
        accepted = duplicates = gaps = 0
        with self._db_lock, self._db:
            (last_seq,) = self._db.execute(
                "SELECT last_seq FROM runs WHERE run_id = ?", (run_id,)
            ).fetchone()
            for row in rows:
                cur = self._db.execute(
                    "INSERT OR IGNORE INTO points VALUES (?, ?, ?, ?, ?, ?)", row
                )
                if cur.rowcount == 0:
                    duplicates += 1
                    continue
                accepted += 1
                gaps += row[1] > last_seq + 1
                last_seq = max(last_seq, row[1])
            self._db.execute(
                "UPDATE runs SET last_seq = ?, gaps = gaps + ?, duplicates = duplicates + ?,"
                " last_seen = ? WHERE run_id = ?",
                (last_seq, gaps, duplicates, time.time(), run_id),
            )
        return {"accepted": accepted, "duplicates": duplicates, "gaps": gaps}

    def _heartbeat(self, run_id: str, body: dict[str, Any]) -> dict[str, Any]:
        with self._db_lock, self._db:
            self._db.execute(
                "UPDATE runs SET heartbeats = heartbeats + 1, last_seen = ? WHERE run_id = ?",
                (time.time(), run_id),
            )
        return {"ok": True}

    def _finish(self, run_id: str, body: dict[str, Any]) -> dict[str, Any]:
        status = str(body.get("status") or "done")
        with self._db_lock, self._db:
            self._db.execute(
                "UPDATE runs SET status = ?, finished = ?, summary = ?, last_seen = ?"
                " WHERE run_id = ?",
                (status, time.time(), json.dumps(body.get("summary") or {}), time.time(), run_id),
            )
        return {"ok": True}
