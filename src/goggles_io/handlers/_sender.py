"""The background sender behind ``RemoteHandler``: one thread, one keep-alive connection, a bounded queue.

The producer only appends to a bounded deque (refusing, never blocking, when it is full); this
thread owns the ``http.client`` connection and sends in order. Transient failures (connection
refused or reset, timeouts, 5xx, 429) are retried with capped exponential backoff on the same
message, so order is kept; the collector's sequence numbers make the retries idempotent. Other
4xx answers are reported once and not retried.
"""

from __future__ import annotations

import collections
import http.client
import json
import logging
import threading
import time
from typing import Any
from urllib.parse import SplitResult

__all__ = ["Message", "Sender"]

_logger = logging.getLogger("goggles_io.handlers.remote")

_BACKOFF_START_S = 0.05
_BACKOFF_MAX_S = 1.0

# A message is (kind, path, payload, points in it); kind in register/points/heartbeat/finish.
Message = tuple[str, str, Any, int]


class Sender:
    """Queue and thread state; all counters are read by ``RemoteHandler.stats()``."""

    def __init__(
        self,
        url: SplitResult,
        headers: dict[str, str],
        queue_batches: int,
        timeout_s: float,
        heartbeat_s: float,
        heartbeat: Any,
        reregister: Any,
    ) -> None:
        self._url = url
        self._base = url.path.rstrip("/")
        self._headers = headers  # holds the API key: never logged, never in a repr
        self._max = queue_batches
        self._timeout_s = timeout_s
        self._heartbeat_s = heartbeat_s
        self._heartbeat = heartbeat
        self._reregister = reregister
        self._queue: collections.deque[Message] = collections.deque()
        self._cond = threading.Condition()
        self._stopping = False
        self._give_up = threading.Event()
        self._conn: http.client.HTTPConnection | None = None
        self._reported: set[str] = set()
        self._auth_failed = False
        self._last_sent = time.monotonic()
        self.points_sent = 0
        self.refused_batches = 0
        self.refused_points = 0
        self.retries = 0
        self.rejected_points = 0
        self.lost_points = 0
        self._thread = threading.Thread(target=self._run, name="goggles-remote-sender", daemon=True)
        self._thread.start()

    def put(self, message: Message, *, force: bool = False) -> bool:
        """Enqueue without blocking; a full queue refuses (and counts) unless ``force``."""
        with self._cond:
            if not force and len(self._queue) >= self._max:
                self.refused_batches += 1
                self.refused_points += message[3]
                refused = True
            else:
                self._queue.append(message)
                self._cond.notify()
                refused = False
        if refused:
            self.report_once(
                "refused",
                "remote queue full (%d batches): refusing batches instead of blocking; "
                "the tally at close() counts them",
                self._max,
            )
        return not refused

    def pending(self) -> int:
        with self._cond:
            return len(self._queue)

    def shutdown(self, timeout_s: float) -> None:
        """Send what is queued, then stop; after ``timeout_s`` give up and count the rest lost."""
        with self._cond:
            self._stopping = True
            self._cond.notify()
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            self._give_up.set()
            self._thread.join(self._timeout_s + 1.0)
        with self._cond:
            self.lost_points += sum(m[3] for m in self._queue)
            self._queue.clear()
        self._close_conn()

    def report_once(self, key: str, msg: str, *args: Any, level: int = logging.WARNING) -> None:
        if key not in self._reported:
            self._reported.add(key)
            _logger.log(level, msg, *args)

    def _run(self) -> None:
        while True:
            with self._cond:
                message: Message | None = None
                while not self._queue and not self._stopping:
                    if self._auth_failed:  # nothing more is sent: park until put() or shutdown()
                        self._cond.wait()
                        continue
                    quiet = time.monotonic() - self._last_sent
                    if quiet >= self._heartbeat_s:
                        break
                    self._cond.wait(self._heartbeat_s - quiet)
                if self._queue:
                    message = self._queue.popleft()
                elif self._stopping:
                    return
            self._deliver(message or self._heartbeat())

    def _deliver(self, message: Message) -> None:
        kind, path, payload, n_points = message
        if self._auth_failed or self._give_up.is_set():
            if self._auth_failed:
                self.rejected_points += n_points
            else:
                self.lost_points += n_points
            return
        body = json.dumps(payload).encode()
        delay = _BACKOFF_START_S
        reregistered = False
        while True:
            try:
                status, reply = self._post(path, body)
            except (OSError, http.client.HTTPException) as exc:
                status, reply = 0, type(exc).__name__
            self._last_sent = time.monotonic()
            if 200 <= status < 300:
                self.points_sent += n_points
                return
            if status == 404 and kind != "register" and not reregistered:
                reregistered = True  # the collector lost the run (fresh database): announce again
                self._deliver(self._reregister())
                continue
            if 400 <= status < 500 and status != 429:
                self._reject(kind, status, reply, n_points)
                return
            self._close_conn()
            self.report_once(
                "transient",
                "remote collector unreachable or failing (%s); retrying with backoff, training "
                "continues and full batches are refused",
                f"HTTP {status}" if status else reply,
            )
            if self._give_up.wait(delay):
                self.lost_points += n_points
                return
            self.retries += 1
            delay = min(delay * 2.0, _BACKOFF_MAX_S)

    def _reject(self, kind: str, status: int, reply: str, n_points: int) -> None:
        self.rejected_points += n_points
        if status in (401, 403):
            self._auth_failed = True
            self.report_once(
                "auth",
                "remote collector at %s rejected the API key (HTTP %d); nothing more will be "
                "sent this run. Check TELEMETRY_REMOTE_API_KEY in your .env.",
                self._url.netloc,
                status,
                level=logging.ERROR,
            )
            return
        self.report_once(
            f"http-{status}",
            "remote collector rejected a %s request with HTTP %d (%s); not retrying",
            kind,
            status,
            reply[:200],
            level=logging.ERROR,
        )

    def _post(self, path: str, body: bytes) -> tuple[int, str]:
        if self._conn is None:
            cls = (
                http.client.HTTPSConnection
                if self._url.scheme == "https"
                else http.client.HTTPConnection
            )
            self._conn = cls(self._url.hostname or "", self._url.port, timeout=self._timeout_s)
        self._conn.request("POST", self._base + path, body=body, headers=self._headers)
        response = self._conn.getresponse()
        text = response.read().decode("utf-8", errors="replace")
        if response.will_close:
            self._close_conn()
        return response.status, text

    def _close_conn(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
