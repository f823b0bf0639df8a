"""The Redis side of the broker forwarder: each batch its pipe sends becomes one stream entry.

:meth:`StreamWriter.send` runs on the pipe's worker thread: it encodes the batch (its sequence
number is the entry's) and adds it with one Lua script (``_ADD_IF_KEPT``) that also reads the
consumer group's high-water mark for this producer, which acknowledges every entry up to it
(``pipe.ack``). While entries are kept and nothing is to be sent, :meth:`StreamWriter.idle`
asks for the mark with the same script and no entries. The script first checks a marker key of
the producer: when it is gone Redis came back without what we wrote, and every kept entry is
sent again, oldest first (``pipe.link_lost``); consumers skip the repeats (ADR 0029). A broken
connection or an error reply raises: the pipe sends the same batch again after a backoff.
"""

from __future__ import annotations

import contextlib
import threading
from typing import TYPE_CHECKING, Any

from goggles_io._broker.entries import encode_entry
from goggles_io._broker.frames import FrameTable
from goggles_io._broker.housekeeping import MARKER_TTL_S, release_run
from goggles_io._broker.outbox import Outbox
from goggles_io._event.codec import Encoder
from goggles_io._event.rows import Row, rows_nbytes
from goggles_io._util.report import ReportOnce, report
from goggles_io._util.secret import Secret

if TYPE_CHECKING:
    from goggles_io._delivery.pipe import Pipe

__all__ = ["StreamWriter", "redis_client"]

_POLL_S = 0.05  # how often kept entries ask whether a consumer has passed them
_CONSUMER_IDLE_MS = 2000  # a consumer this quiet is not waited for at close
_ENCODE_ERRORS = (TypeError, ValueError, OverflowError)

# KEYS: this producer's marker, the stream, the group's seen-hash. ARGV: producer, maxlen,
# first (1 on a fresh start), then seq, payload per entry. The marker says Redis still holds
# what we wrote: when it is gone (Redis came back without its data) nothing is added and the
# caller sends every kept entry again, oldest first, so the stream keeps each producer's order.
# The marker lives a day past the producer's last send. Returns {1, the group's mark for this
# producer} or {0} (lost).
_ADD_IF_KEPT = """
if ARGV[3] == '0' and redis.call('EXISTS', KEYS[1]) == 0 then return {0} end
redis.call('SET', KEYS[1], '1', 'EX', MARKER_TTL_S)
for i = 4, #ARGV, 2 do
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], '*', 'p', ARGV[1], 's', ARGV[i],
             'd', ARGV[i + 1])
end
return {1, tonumber(redis.call('HGET', KEYS[3], ARGV[1]) or '0')}
""".replace("MARKER_TTL_S", str(MARKER_TTL_S))


def _rows(items: list[Any]) -> list[Row]:
    """The rows of a batch of rows and lists of rows, in order."""
    if len(items) == 1 and isinstance(items[0], list):
        return items[0]
    if not any(isinstance(item, list) for item in items):
        return items
    rows: list[Row] = []
    for item in items:
        if isinstance(item, list):
            rows += item
        else:
            rows.append(item)
    return rows


class Closed(Exception):
    """The forwarder is closing: nothing more is sent (the pipe counts what is left)."""


def redis_client(url: Secret) -> Any:
    """A client for ``url`` that never retries silently: a broken connection must reach the
    writer, which sends every kept entry again on the new one (a restarted Redis may have lost
    them)."""
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    return redis.Redis.from_url(
        url.reveal(), socket_connect_timeout=2.0, socket_timeout=5.0, retry=Retry(NoBackoff(), 0)
    )


class StreamWriter:
    """Adds one producer's batches to the stream and turns the group's mark into acks."""

    def __init__(
        self,
        url: Secret,
        stream: str,
        seen: str,
        producer: str,
        maxlen: int,
        outbox: Outbox,
        budget_bytes: int,
    ) -> None:
        self.url = url
        self.stream = stream
        self.producer = producer
        self.maxlen = maxlen
        self.outbox = outbox
        self.budget_bytes = budget_bytes
        self.pipe: Pipe[Any] | None = None  # set by the forwarder once made
        self.frames: FrameTable | None = None  # client frames a batch may be sent as (ADR 0079)
        self.unencodable = 0
        self._keys = [f"{stream}:producer:{producer}", stream, seen]
        self._encoder = Encoder()
        self._client: Any = None
        self._script: Any = None
        self._first = True  # Redis has nothing of ours yet: the marker is set, not checked
        self._down = False
        self._closed = False
        self._lock = threading.Lock()  # one call to Redis at a time; close waits for it
        self._report_once = ReportOnce()

    # -- on the pipe's worker ---------------------------------------------------------------
    def send(self, seq: int, items: list[Any], redelivered: bool) -> None:
        """Add entry ``seq`` (``redelivered``: it may be there already; consumers skip it).

        ``items``: rows and lists of rows (the host's client batches), in order."""
        frame = None if self.frames is None else self.frames.take(items)
        events = _rows(items)
        payload = self._encode(seq, events) if frame is None else frame
        with self._lock:
            if self._closed:
                raise Closed
            if not self._call([seq, payload]):
                return
            release = self.outbox.sent(seq, len(events), rows_nbytes(events))
        if release and self.pipe is not None:
            self.pipe.ack(release)  # left to Redis alone: the outbox remembers it

    def idle(self) -> float | None:
        """Ask for the group's mark while entries are kept; how long the worker may sleep."""
        if not self.outbox.kept_units:
            return None
        with self._lock:
            if self._closed:
                return None
            try:
                self._call([])
            except Exception:
                return 1.0
        return _POLL_S

    def _encode(self, seq: int, events: list[Row]) -> bytes:
        """The entry's payload; an event that cannot be encoded is left out and counted."""
        try:
            data: bytes = encode_entry(self._encoder, self.producer, seq, events)["d"]
        except _ENCODE_ERRORS:
            kept = []
            for event in events:
                try:
                    encode_entry(self._encoder, self.producer, seq, [event])
                except _ENCODE_ERRORS:
                    self.unencodable += 1
                    self._report_once("enc", f"broker: an event cannot be encoded ({event!r:.200})")
                else:
                    kept.append(event)
            data = encode_entry(self._encoder, self.producer, seq, kept)["d"]
        return data

    def _call(self, entries: list[Any]) -> bool:
        """Run the script with ``[seq, payload, ...]`` (the lock held); ``False`` when Redis
        came back without our entries (the pipe then sends every kept one again)."""
        import redis

        if self._client is None:
            self._client = redis_client(self.url)
            self._script = self._client.register_script(_ADD_IF_KEPT)
        args = [self.producer, self.maxlen, int(self._first), *entries]
        try:
            reply = self._script(keys=self._keys, args=args, client=self._client)
        except (redis.RedisError, OSError) as exc:
            self._broken(exc)
            raise
        if self._down:
            report("broker: Redis reachable again; buffered events sent")
            self._down = False
        if not int(reply[0]):
            self._first = True
            self._lost_by_redis()
            return False
        self._first = False
        self._ack(int(reply[1]))
        return True

    def _broken(self, exc: Exception) -> None:
        import redis

        if isinstance(exc, (redis.ConnectionError, redis.TimeoutError, OSError)):
            if not self._down:
                report(
                    f"broker: Redis unreachable ({type(exc).__name__}); buffering up to "
                    f"{self.budget_bytes} bytes and retrying (losses beyond are counted)"
                )
            self._down = True
        else:  # an error reply (out of memory, read-only replica...): try again later
            self._report_once("refused", f"broker: Redis refused entries: {exc}; retrying")
        client, self._client = self._client, None
        with contextlib.suppress(Exception):
            client.close()

    def _ack(self, mark: int) -> None:
        self.outbox.confirm(mark)
        if self.pipe is not None and mark:
            self.pipe.ack(mark)

    def _lost_by_redis(self) -> None:
        """Redis came back without our entries: send every kept one again, oldest first."""
        again, at_risk = self.outbox.lost()
        if self.pipe is not None:
            self.pipe.link_lost()
        report(
            f"broker: Redis came back without its data; sending the {again} entries no consumer "
            "had passed again (consumers skip repeats)"
            + (
                f"; up to {at_risk} events past the retention budget were not kept here and "
                "are counted as lost at close unless a consumer had handled them"
                if at_risk
                else ""
            )
        )

    # -- on the forwarder's lane ------------------------------------------------------------
    def consumers_reading(self, group: str) -> bool:
        """Whether some consumer of ``group`` read the stream within the last two seconds."""
        import redis

        try:
            client = redis_client(self.url)
            try:
                found = client.xinfo_consumers(self.stream, group)
            finally:
                client.close()
        except (redis.RedisError, OSError):
            return False
        return any(int(c.get("idle", 1 << 62)) < _CONSUMER_IDLE_MS for c in found)

    def close(self, wait_s: float) -> int:
        """Send nothing more (waiting at most ``wait_s`` for a call in flight); the newest
        entry Redis holds, which the pipe may then forget without counting it."""
        locked = self._lock.acquire(timeout=wait_s)
        try:
            self._closed = True
            last = self.outbox.close().last_in_redis
            client, self._client = self._client, None
        finally:
            if locked:
                self._lock.release()
        if client is not None and locked:
            with contextlib.suppress(Exception):
                self._leave(client)
            with contextlib.suppress(Exception):
                client.close()
        return last

    def _leave(self, client: Any) -> None:
        """This producer sends no more: its marker goes, and the run's keys too when nobody
        else is left and every entry was handled (ADR 0039)."""
        client.delete(self._keys[0])
        release_run(client, self.stream)
