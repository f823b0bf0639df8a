"""The reference HTTP collector that :class:`~goggles_io.handlers.remote.RemoteHandler` talks to.

Stdlib only (``http.server.ThreadingHTTPServer`` + ``sqlite3``, see ADR 0008): it exists so the
remote protocol (``docs/remote-protocol.md``) has a real peer in tests, examples and on a lab
box, not to be a dashboard. Each point carries a per-run sequence number; a point whose number
was already stored is a duplicate (a retry after a lost response) and is skipped, so every point
is stored exactly once. A gap in the numbers (batches the client refused) is counted per run.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import socket
import sqlite3
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import IO, Any
from urllib.parse import parse_qs, unquote, urlsplit

from goggles_io._remote_protocol import (
    MAX_BODY_BYTES,
    ProtocolError,
    check_finish,
    check_points,
    check_register,
    dump_json,
    parse_content_length,
    parse_json,
)
from goggles_io.exceptions import ConfigurationError

__all__ = ["Collector", "is_loopback"]

_logger = logging.getLogger(__name__)

_DRAIN_LIMIT = (
    4 * MAX_BODY_BYTES
)  # read (and discard) an oversize body up to this, so the 413 is seen
_DEFAULT_HEARTBEAT_S = 60.0  # RemoteHandler's default, for runs registered without one
_ALLOW = "GET, POST"
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


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 1024  # a burst of producers connecting at once waits, not SYN-retries
    collector: Collector

    def handle_error(self, request: Any, client_address: Any) -> None:
        # a client hanging up mid-request is routine here, not worth a traceback on stderr
        _logger.debug("connection from %s ended with an error", client_address, exc_info=True)


def _read_chunked(rfile: IO[bytes], limit: int) -> bytes:
    """Decode a ``Transfer-Encoding: chunked`` body, refusing more than ``limit`` bytes."""
    parts: list[bytes] = []
    total = 0
    while True:
        line = rfile.readline(1026)
        size_text = line.split(b";", 1)[0].strip()
        if not line.endswith(b"\n") or not size_text or len(size_text) > 16:
            raise ProtocolError(HTTPStatus.BAD_REQUEST, "malformed chunk size line")
        try:
            size = int(size_text, 16)
        except ValueError:
            raise ProtocolError(HTTPStatus.BAD_REQUEST, "malformed chunk size line") from None
        if size < 0:
            raise ProtocolError(HTTPStatus.BAD_REQUEST, "malformed chunk size line")
        if size == 0:
            while rfile.readline(1026) not in (b"\r\n", b"\n", b""):
                pass  # trailers: ignored
            return b"".join(parts)
        total += size
        if total > limit:
            msg = f"chunked body over the limit of {limit} bytes; send smaller batches"
            raise ProtocolError(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, msg, limit=limit)
        chunk = rfile.read(size)
        if len(chunk) != size or rfile.readline(3) not in (b"\r\n", b"\n"):
            raise ProtocolError(HTTPStatus.BAD_REQUEST, "chunked body ended early")
        parts.append(chunk)


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive
    disable_nagle_algorithm = True  # TCP_NODELAY: no 40 ms delayed-ACK stall per request
    server: _Server

    def setup(self) -> None:
        self.timeout = self.server.collector.read_timeout_s  # StreamRequestHandler applies it
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

    def _not_allowed(self) -> None:
        self.close_connection = True  # the body (if any) is left unread
        msg = f"method {self.command} is not allowed; the collector answers {_ALLOW}"
        self._respond(HTTPStatus.METHOD_NOT_ALLOWED, {"error": msg}, allow=_ALLOW)

    do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_HEAD = do_TRACE = do_CONNECT = _not_allowed

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """Answer protocol-level errors (bad request line, unknown method) as JSON, then close."""
        self.close_connection = True
        status = HTTPStatus(code)
        if status is HTTPStatus.NOT_IMPLEMENTED:  # an unknown method
            self._not_allowed()
            return
        self._respond(status, {"error": message or status.phrase})

    def _respond(self, status: HTTPStatus, reply: Any, allow: str | None = None) -> None:
        """Status line, headers and body in one write: one segment, no Nagle interplay."""
        data = dump_json(reply)
        head = [
            f"HTTP/1.1 {status.value} {status.phrase}",
            "Content-Type: application/json",
            f"Content-Length: {len(data)}",
        ]
        if allow:
            head.append(f"Allow: {allow}")
        if self.close_connection:
            head.append("Connection: close")
        self.log_request(status.value, len(data))
        self.wfile.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + data)

    def _dispatch(self, method: str) -> None:
        collector = self.server.collector
        collector.requests_received += 1
        try:
            try:
                collector._authorise(self.headers.get("Authorization", ""))
            except ProtocolError:
                self.close_connection = True  # never read a body for a stranger
                raise
            body = self._read_body()
            collector._wait_delay()
            url = urlsplit(self.path)
            parts = [unquote(p) for p in url.path.strip("/").split("/") if p]
            status, reply = collector._route(method, parts, body, parse_qs(url.query))
        except ProtocolError as exc:
            status, reply = exc.status, exc.body
        except TimeoutError:
            self.close_connection = True
            status = HTTPStatus.REQUEST_TIMEOUT
            reply = {"error": f"body not received within {collector.read_timeout_s} s"}
        self._respond(status, reply)

    def _read_body(self) -> Any:
        limit = self.server.collector.max_body_bytes
        encoding = self.headers.get_all("Transfer-Encoding") or []
        lengths = self.headers.get_all("Content-Length") or []
        try:
            if encoding:
                if lengths or [e.strip().lower() for e in encoding] != ["chunked"]:
                    msg = "only Transfer-Encoding: chunked is accepted, without Content-Length"
                    raise ProtocolError(HTTPStatus.BAD_REQUEST, msg)
                raw = _read_chunked(self.rfile, limit)
            else:
                try:
                    length = parse_content_length(lengths, limit)
                except ProtocolError as exc:
                    if exc.status is HTTPStatus.REQUEST_ENTITY_TOO_LARGE:
                        self._discard(lengths)
                    raise
                raw = self.rfile.read(length) if length else b""
                if len(raw) != length:
                    raise ProtocolError(HTTPStatus.BAD_REQUEST, "body shorter than Content-Length")
        except ProtocolError:
            self.close_connection = True
            raise
        return parse_json(raw)

    def _discard(self, lengths: list[str]) -> None:
        """Read an oversize body away (up to a bound) so the client gets to see the 413."""
        left = int(lengths[0].strip())
        if left > _DRAIN_LIMIT:
            return
        while left > 0:
            chunk = self.rfile.read(min(left, 1 << 20))
            if not chunk:
                return
            left -= len(chunk)


class Collector:
    """A small HTTP collector storing runs and points in SQLite.

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
        self._delay_s = response_delay_s
        self._delay_cond = threading.Condition()
        self.requests_received = 0  # counted before any delay: lets tests see a request in flight
        self.read_timeout_s = read_timeout_s
        self.max_body_bytes = max_body_bytes
        self.stale_heartbeats = stale_heartbeats
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
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._conns: set[socket.socket] = set()
        self._conns_lock = threading.Lock()

    @property
    def exposed(self) -> bool:
        """Whether the bound interface reaches beyond this machine."""
        return not is_loopback(self.host)

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
        if self.exposed:
            _logger.warning(
                "collector bound to %s:%d is reachable from other machines; requests need the "
                "API key, and traffic is plain HTTP (put TLS in front for untrusted networks)",
                self.host,
                self.port,
            )
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

    def _track(self, conn: socket.socket, *, add: bool) -> None:
        with self._conns_lock:
            (self._conns.add if add else self._conns.discard)(conn)

    def _authorise(self, header: str) -> None:
        if self._api_key is None:
            return
        scheme, _, token = header.partition(" ")
        if scheme != "Bearer" or not hmac.compare_digest(token.encode(), self._api_key.encode()):
            raise ProtocolError(HTTPStatus.UNAUTHORIZED, "missing or invalid API key")

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
