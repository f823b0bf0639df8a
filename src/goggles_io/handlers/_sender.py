"""The background sender behind ``RemoteHandler``: one thread, one keep-alive connection, a bounded queue.

The producer only appends to the queue (:mod:`goggles_io.handlers._point_queue`: memory within
a byte budget, then a spool on disk; refusing, never blocking, when both are full); this thread
owns the ``http.client`` connection and sends in order. Transient failures (connection
refused or reset, timeouts, 5xx, 429) are retried with capped exponential backoff on the same
message, so order is kept; the collector's sequence numbers make the retries idempotent. Other
4xx answers are reported once and not retried.

The sender never stalls on one point (ADR 0021): consecutive queued batches are sent as one
request while they fit, a body over ``max_body_bytes`` (or answered 413) is split in halves,
and a 422 naming the points the collector cannot store drops exactly those (counted as
rejected) and sends the rest. A keep-alive connection the server closed while idle is reopened
once at once, without counting a retry.
"""

from __future__ import annotations

import http.client
import json
import logging
import threading
import time
from typing import Any
from urllib.parse import SplitResult

from goggles_io._util.report import ReportOnce
from goggles_io.handlers._point_queue import PointQueue

__all__ = ["Message", "Point", "Sender", "encode_points"]

_logger = logging.getLogger("goggles_io.handlers.remote")

_BACKOFF_START_S = 0.05
_BACKOFF_MAX_S = 1.0
_COALESCE_POINTS = 5000  # points per request when batches queue up behind a slow request
_STALE_CONNECTION = (
    http.client.RemoteDisconnected,
    ConnectionResetError,
    BrokenPipeError,
    ConnectionAbortedError,
)

# A message is (kind, path, payload, points in it); kind in register/points/heartbeat/finish.
# A points message's payload is {"points": [Point, ...]}, encoded only on the sender thread.
Message = tuple[str, str, Any, int]
# (seq, name, value or None, step or None, time): validated by RemoteHandler.log_scalar.
Point = tuple[int, str, "float | None", "int | None", float]

_NAMES: dict[str, str] = {}  # metric name -> its JSON string literal (a handful of names)


def encode_points(points: list[Point], base: int = 0) -> list[str]:
    """One JSON object text per point, as the protocol spells it.

    About 3x cheaper than building a dict per point for ``json.dumps``: the name's JSON literal
    is cached, and ``repr`` of a finite float is its shortest JSON number.
    """
    out: list[str] = []
    append = out.append
    names = _NAMES
    for seq, name, value, step, when in points:
        literal = names.get(name)
        if literal is None:
            literal = json.dumps(name)
            if len(names) < 10_000:
                names[name] = literal
        v = "null" if value is None else repr(value)
        s = "null" if step is None else str(step)
        n = seq + base
        append(f'{{"seq":{n},"name":{literal},"value":{v},"step":{s},"time":{when!r}}}')
    return out


class Sender:
    """Queue and thread state; all counters are read by ``RemoteHandler.stats()``."""

    def __init__(
        self,
        url: SplitResult,
        headers: dict[str, str],
        queue: PointQueue,
        timeout_s: float,
        heartbeat_s: float,
        heartbeat: Any,
        reregister: Any,
        max_body_bytes: int = 4 * 1024 * 1024,
    ) -> None:
        self._url = url
        self._base = url.path.rstrip("/")
        self._headers = headers  # holds the API key: never logged, never in a repr
        self._timeout_s = timeout_s
        self._heartbeat_s = heartbeat_s
        self._heartbeat = heartbeat
        self._reregister = reregister
        self._max_body = max_body_bytes
        self._inflight = 0  # points taken off the queue and not yet settled
        self._queue = queue
        self.seq_base = 0  # added to every point's seq: the run's last seq at registration
        self._based = False
        self._cond = threading.Condition()
        self._stopping = False
        self._give_up = threading.Event()
        self._conn: http.client.HTTPConnection | None = None
        self.report_once = ReportOnce(_logger)
        self._auth_failed = False
        self._last_sent = time.monotonic()
        self.points_sent = 0
        self.refused_batches = 0
        self.refused_points = 0
        self.retries = 0
        self.rejected_points = 0
        self.lost_points = 0
        self.split_requests = 0
        self._thread = threading.Thread(target=self._run, name="goggles-remote-sender", daemon=True)
        self._thread.start()

    def put(self, message: Message, *, force: bool = False) -> bool:
        """Enqueue without blocking; refused (and counted) only when memory and spool are full."""
        with self._cond:
            refused = not self._queue.push(message, force=force)
            if refused:
                self.refused_batches += 1
                self.refused_points += message[3]
            else:
                self._cond.notify()
        if refused:
            self.report_once(
                "refused",
                "remote queue full (%d bytes in memory, then the spool: %s): refusing batches "
                "instead of blocking; the tally at close() counts them",
                self._queue.max_bytes,
                self._queue.failure or "spilling is off",
            )
        return not refused

    def stats(self) -> dict[str, int]:
        """Counters: points sent / refused / rejected / lost, batches refused, retries, queued."""
        names = ("points_sent", "refused_batches", "refused_points", "retries")
        names += ("rejected_points", "lost_points", "split_requests")
        return {**{n: getattr(self, n) for n in names}, "queued": self.pending()}

    def pending(self) -> int:
        with self._cond:
            return len(self._queue)

    def unsent_points(self) -> int:
        """Points queued or in flight: what a timed-out ``close()`` has not got through yet."""
        with self._cond:
            return self._queue.points() + self._inflight

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
            self.lost_points += self._queue.clear() + self._queue.lost
        self._close_conn()

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
                    message = self._take_locked()
                elif self._stopping:
                    return
            try:
                self._deliver(message or self._heartbeat())
            finally:
                with self._cond:
                    self._inflight = 0

    def _take_locked(self) -> Message | None:
        """Pop the next message; consecutive point batches of one run travel as one request."""
        first = self._queue.pop()
        if first is None:
            return None
        kind, path, payload, n_points = first
        if kind == "points":
            merged = None
            while n_points < _COALESCE_POINTS:
                nxt = self._queue.peek()
                if nxt is None:
                    break
                nkind, npath, npayload, nn = nxt
                if nkind != "points" or npath != path or n_points + nn > _COALESCE_POINTS:
                    break
                self._queue.pop()
                if merged is None:
                    merged = list(payload["points"])
                merged.extend(npayload["points"])
                n_points += nn
            if merged is not None:
                payload = {"points": merged}
        self._inflight = n_points
        return kind, path, payload, n_points

    def _deliver(self, message: Message) -> None:
        kind, path, payload, n_points = message
        if self._auth_failed or self._give_up.is_set():
            if self._auth_failed:
                self.rejected_points += n_points
            else:
                self.lost_points += n_points
            return
        if kind == "points":
            self._deliver_points(path, encode_points(payload["points"], self.seq_base))
            return
        status, reply = self._exchange(kind, path, json.dumps(payload).encode(), n_points)
        if 400 <= status < 500:
            self._reject(kind, status, reply, n_points)
        elif kind == "register" and 200 <= status < 300 and not self._based:
            self._adopt_seq_base(reply)

    def _adopt_seq_base(self, reply: str) -> None:
        """Number points after those the collector already holds for this run.

        A handler rebuilt after a host restart starts counting at 1 again; the collector would
        take its points for repeats of the first incarnation's and skip them.
        """
        self._based = True
        try:
            last = json.loads(reply).get("last_seq")
        except (ValueError, AttributeError):
            return
        if type(last) is int and last > 0 and self.points_sent == 0:
            self.seq_base = last

    def _deliver_points(self, path: str, points: list[str]) -> None:
        """Send encoded points (see :func:`encode_points`), splitting or dropping as answered."""
        size = sum(map(len, points)) + len(points) + 16
        if size > self._max_body:
            self._split(path, points, f"{size} bytes over max_body_bytes={self._max_body}")
            return
        body = ('{"points":[' + ",".join(points) + "]}").encode()
        status, reply = self._exchange("points", path, body, len(points))
        if status == 413:
            self._split(path, points, "HTTP 413")
        elif status == 422:
            self._drop_invalid(path, points, reply)
        elif 400 <= status < 500:
            self._reject("points", status, reply, len(points))

    def _split(self, path: str, points: list[str], why: str) -> None:
        if len(points) == 1:
            self.rejected_points += 1
            self.report_once(
                "too-large",
                "remote: a point is too large to send alone (%s): %s...; dropped and counted",
                why,
                points[0][:120],
                level=logging.ERROR,
            )
            return
        self.split_requests += 1
        half = len(points) // 2
        self._deliver_points(path, points[:half])
        self._deliver_points(path, points[half:])

    def _drop_invalid(self, path: str, points: list[str], reply: str) -> None:
        """Drop the points a 422 names, count them, and send the rest of the batch."""
        try:
            details = json.loads(reply)
            bad = {int(item["index"]) for item in details["invalid"]}
            error = str(details.get("error", ""))
        except (ValueError, KeyError, TypeError):
            self._reject("points", 422, reply, len(points))
            return
        bad &= set(range(len(points)))
        if not bad:
            self._reject("points", 422, reply, len(points))
            return
        self.rejected_points += len(bad)
        self.report_once(
            "invalid-points",
            "remote collector cannot store some points (%s); they are dropped and counted, "
            "the rest is sent",
            error[:300],
            level=logging.ERROR,
        )
        rest = [p for i, p in enumerate(points) if i not in bad]
        if rest:
            self._deliver_points(path, rest)

    def _exchange(self, kind: str, path: str, body: bytes, n_points: int) -> tuple[int, str]:
        """POST until an answer that is not transient; ``(0, "")`` when given up (counted lost).

        A 2xx counts the points sent; a 4xx (other than 429) is returned for the caller to
        handle; a 404 for an unknown run registers it again and retries once.
        """
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
                return status, reply
            if status == 404 and kind != "register" and not reregistered:
                reregistered = True  # the collector lost the run (fresh database): announce again
                self._deliver(self._reregister())
                continue
            if 400 <= status < 500 and status != 429:
                return status, reply
            self._close_conn()
            self.report_once(
                "transient",
                "remote collector unreachable or failing (%s); retrying with backoff, training "
                "continues and full batches are refused",
                f"HTTP {status}" if status else reply,
            )
            if self._give_up.wait(delay):
                self.lost_points += n_points
                return 0, ""
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
        reused = self._conn is not None
        try:
            return self._post_once(path, body)
        except _STALE_CONNECTION:
            if not reused:
                raise
            self._close_conn()  # the server closed the idle keep-alive connection: reopen once
            return self._post_once(path, body)

    def _post_once(self, path: str, body: bytes) -> tuple[int, str]:
        if self._conn is None:
            cls = (
                http.client.HTTPSConnection
                if self._url.scheme == "https"
                else http.client.HTTPConnection
            )
            self._conn = cls(self._url.hostname or "", self._url.port, timeout=self._timeout_s)
        try:
            self._conn.request("POST", self._base + path, body=body, headers=self._headers)
            response = self._conn.getresponse()
            text = response.read().decode("utf-8", errors="replace")
        except BaseException:
            self._close_conn()
            raise
        if response.will_close:
            self._close_conn()
        return response.status, text

    def _close_conn(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
