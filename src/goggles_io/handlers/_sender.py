"""The HTTP side of ``RemoteHandler``: one keep-alive connection, a batch of messages at a time.

The handler's :class:`~goggles_io._delivery.pipe.Pipe` (memory within a byte budget, then the
spool; refusing, never blocking, when both are full) calls :meth:`Sender.send` on its worker
thread with each batch, in order; a batch that returns is acknowledged. A transient failure
(connection refused or reset, timeouts, 5xx, 429) raises :class:`SinkDown`: the pipe keeps the
batch and retries it with capped backoff, and the messages of it already stored are not sent
again; the collector's sequence numbers make any repeat idempotent. Other 4xx answers are
reported once and not retried.

The sender never stalls on one point (ADR 0021): consecutive point messages of a batch are sent
as one request while they fit, a body over ``max_body_bytes`` (or answered 413) is split in
halves, and a 422 naming the points the collector cannot store drops exactly those (counted as
rejected) and sends the rest. A keep-alive connection the server closed while idle is reopened
once at once, without counting a retry.
"""

from __future__ import annotations

import http.client
import json
import logging
import time
from typing import Any
from urllib.parse import SplitResult

import nonfinite_json
from goggles_io._util.report import ReportOnce

__all__ = ["Message", "Point", "Sender", "SinkDown", "encode_points"]

_logger = logging.getLogger("goggles_io.handlers.remote")

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
# (seq, name, value or None, step or None, time, producer, pseq, part): validated by
# RemoteHandler.log_scalar. ``producer`` is "" for a point no host numbered (then pseq = part =
# 0); else the event's producer and sequence and the metric's index in it (ADR 0069).
Point = tuple[int, str, "float | None", "int | None", float, str, int, int]

_NAMES: dict[str, str] = {}  # metric name -> its JSON string literal (a handful of names)
_ORIGINS: dict[str, str] = {}  # producer id -> its JSON string literal


def _literal(cache: dict[str, str], text: str) -> str:
    literal = cache.get(text)
    if literal is None:
        literal = json.dumps(text)
        if len(cache) < 10_000:
            cache[text] = literal
    return literal


def encode_points(points: list[Point], base: int = 0) -> list[str]:
    """One JSON object text per point, as the protocol spells it.

    About 3x cheaper than building a dict per point for ``json.dumps``: the name's JSON literal
    is cached, and ``repr`` of a finite float is its shortest JSON number.
    """
    out: list[str] = []
    append = out.append
    names, origins = _NAMES, _ORIGINS
    for seq, name, value, step, when, producer, pseq, part in points:
        literal = names.get(name) or _literal(names, name)
        v = "null" if value is None else repr(value)
        s = "null" if step is None else str(step)
        n = seq + base
        if producer:
            who = origins.get(producer) or _literal(origins, producer)
            tail = (
                f',"producer":{who},"pseq":{pseq},"part":{part}}}'
                if part
                else (f',"producer":{who},"pseq":{pseq}}}')
            )
        else:
            tail = "}"
        append(f'{{"seq":{n},"name":{literal},"value":{v},"step":{s},"time":{when!r}{tail}')
    return out


class SinkDown(Exception):
    """The collector is unreachable or failing for now: the batch is to be sent again."""


class Sender:
    """The connection and the counters that ``RemoteHandler.stats()`` reads."""

    def __init__(
        self,
        url: SplitResult,
        headers: dict[str, str],
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
        self.seq_base = 0  # added to every point's seq: the run's last seq at registration
        self._based = False
        self._conn: http.client.HTTPConnection | None = None
        self.report_once = ReportOnce(_logger)
        self._auth_failed = False
        self._last_sent = time.monotonic()
        self._done = (0, 0)  # (batch seq, messages of it stored): not sent again on a retry
        self.points_sent = 0
        self.retries = 0
        self.rejected_points = 0
        self.split_requests = 0

    def send(self, seq: int, messages: list[Message], redelivered: bool) -> None:
        """Send a batch in order (the pipe's ``send``); raises :class:`SinkDown` to be retried.

        Consecutive point messages of one run travel as one request (up to 5000 points).
        """
        i = self._done[1] if self._done[0] == seq else 0
        while i < len(messages):
            kind, path, payload, n_points = messages[i]
            j = i + 1
            if kind == "points":
                merged = None
                while j < len(messages) and n_points < _COALESCE_POINTS:
                    nkind, npath, npayload, nn = messages[j]
                    if nkind != "points" or npath != path or n_points + nn > _COALESCE_POINTS:
                        break
                    if merged is None:
                        merged = list(payload["points"])
                    merged.extend(npayload["points"])
                    n_points += nn
                    j += 1
                if merged is not None:
                    payload = {"points": merged}
            self._deliver((kind, path, payload, n_points))
            i = j
            self._done = (seq, i)

    def idle(self) -> float | None:
        """The pipe's idle hook: a heartbeat after ``heartbeat_s`` quiet seconds; the time
        until the next one (``None`` once the key was rejected: nothing more is sent)."""
        if self._auth_failed:
            return None
        quiet = time.monotonic() - self._last_sent
        if quiet >= self._heartbeat_s:
            self._deliver(self._heartbeat())
            return self._heartbeat_s
        return self._heartbeat_s - quiet

    def _deliver(self, message: Message) -> None:
        kind, path, payload, n_points = message
        if self._auth_failed:
            self.rejected_points += n_points
            return
        if kind == "points":
            self._deliver_points(path, encode_points(payload["points"], self.seq_base))
            return
        body = nonfinite_json.dumps(payload, separators=(",", ":")).encode()  # NaN config: strict
        status, reply = self._exchange(kind, path, body, n_points)
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
        """POST once; raise :class:`SinkDown` on a transient failure (the pipe retries).

        A 2xx counts the points sent; a 4xx (other than 429) is returned for the caller to
        handle; a 404 for an unknown run registers it again and retries once.
        """
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
            self.close()
            self.report_once(
                "transient",
                "remote collector unreachable or failing (%s); retrying with backoff, training "
                "continues and points wait in memory, then on disk",
                f"HTTP {status}" if status else reply,
            )
            self.retries += 1
            raise SinkDown(reply)

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
            self.close()  # the server closed the idle keep-alive connection: reopen once
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
            self.close()
            raise
        if response.will_close:
            self.close()
        return response.status, text

    def close(self) -> None:
        """Close the connection (the next request opens a new one)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
