"""``BrokerForwarder``: the host-side handler that forwards every event to a Redis stream.

Attached on every scope (``"*"``) when ``GOGGLES_BROKER`` is set (or ``configure(broker=...)``),
so it runs in each machine's host. Each batch the bus hands it becomes one stream entry
(``XADD <stream> MAXLEN ~ N``; see :mod:`goggles_io._broker.entries`), numbered per producer so
consumers de-duplicate. Entries wait in the forwarder's buffer (:mod:`goggles_io._broker.outbox`:
``GOGGLES_BROKER_BYTES`` in memory, then the spool on disk) for a sender thread that pipelines them
to Redis, and stay kept after the ``XADD`` until the consumer group has recorded them as handled
(each pipeline also reads the group's high-water mark for this producer). When Redis is down or
restarts, the sender reconnects with backoff and sends every kept entry again, in order: a Redis
that came back without its data gets them again, and consumers skip the repeats (ADR 0029). Past
memory and spool the lane's worker waits (``GOGGLES_BLOCK_TIMEOUT`` per burst, the producers
never do), then the entry is dropped and counted (``losses()``), reported once on stderr.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
import uuid
from typing import Any, ClassVar

from goggles_io._broker.entries import encode_entry
from goggles_io._broker.outbox import Entry, Outbox
from goggles_io._broker.preflight import redis_missing
from goggles_io._broker.settings import check_url, read_broker_settings, seen_key, stream_name
from goggles_io._delivery.policy import (
    BlockAllowance,
    advice,
    check_when_full,
    read_delivery_policy,
)
from goggles_io._event.codec import Encoder
from goggles_io._event.records import Event
from goggles_io._util.report import ReportOnce, report
from goggles_io._util.secret import Secret
from goggles_io.handlers.base import ALL_KINDS, BaseHandler, register_handler

__all__ = ["BROKER_HANDLER_NAME", "BrokerForwarder"]

BROKER_HANDLER_NAME = "goggles_io.broker"
_PIPELINE_ENTRIES = 256
_ENTRY_EVENTS = 1024  # pending events sealed into one stream entry at most
_BACKOFF_MAX_S = 1.0
_POLL_S = 0.05  # how often kept entries ask whether a consumer has passed them
_CONSUMER_IDLE_MS = 2000  # a consumer this quiet is not waited for at close

# KEYS: this producer's marker, the stream, the group's seen-hash. ARGV: producer, maxlen,
# first (1 on a fresh start), then seq, payload per entry. The marker says Redis still holds
# what we wrote: when it is gone (Redis came back without its data) nothing is added and the
# caller sends every kept entry again, oldest first, so the stream keeps each producer's order.
# The marker lives a day past the producer's last XADD. Returns {1, the group's mark for this
# producer} or {0} (lost).
_ADD_IF_KEPT = """
if ARGV[3] == '0' and redis.call('EXISTS', KEYS[1]) == 0 then return {0} end
redis.call('SET', KEYS[1], '1', 'EX', 86400)
for i = 4, #ARGV, 2 do
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], '*', 'p', ARGV[1], 's', ARGV[i],
             'd', ARGV[i + 1])
end
return {1, tonumber(redis.call('HGET', KEYS[3], ARGV[1]) or '0')}
"""


@register_handler
class BrokerForwarder(BaseHandler):
    """Forward events to ``goggles_io:<run>`` on the Redis at ``url``.

    Args:
        url: ``redis://[:password@]host:port/db``, ``rediss://`` for TLS, or ``unix://``;
            kept as a secret (passwords never appear in a spec, repr or message).
        run: names the stream (``goggles_io:<run>``); default ``GOGGLES_BROKER_RUN``.
        maxlen: approximate stream bound (``MAXLEN ~``); default ``GOGGLES_BROKER_MAXLEN``.
        buffer_bytes: what may wait here in memory while Redis is slow or away (then the spool).
        close_timeout_s: how long ``close()`` keeps sending what is buffered.
        when_full: a stricter policy than ``GOGGLES_WHEN_FULL`` for this buffer.
    """

    capabilities = ALL_KINDS
    default_name = BROKER_HANDLER_NAME
    remote_methods: ClassVar[frozenset[str]] = frozenset()

    def __init__(
        self,
        url: str | None = None,
        run: str | None = None,
        maxlen: int | None = None,
        buffer_bytes: int | None = None,
        close_timeout_s: float = 5.0,
        name: str | None = None,
        level: int = 0,
        when_full: str | None = None,
    ) -> None:
        super().__init__(name=name, level=level)
        self.when_full = None if when_full is None else str(check_when_full(when_full))
        settings = read_broker_settings()
        chosen = url if url is not None else settings.url
        self._url = Secret(check_url(chosen))
        self.run = run or settings.run
        self.maxlen = int(maxlen or settings.maxlen)
        self.buffer_bytes = int(buffer_bytes or settings.buffer_bytes)
        self.close_timeout_s = float(close_timeout_s)
        self.stream = stream_name(self.run)
        self.group = settings.group
        self.buffer_full = 0  # events dropped: the buffer was over its byte budget
        self.unsent = 0  # events still buffered when close() gave up
        self.unencodable = 0
        self.lost_in_restart = 0  # events Redis lost past the retention budget (see Outbox)
        self.no_client = 0  # events dropped: the redis package is not installed
        self._no_client: str | None = None
        self.sent = 0
        self._reset()

    def _reset(self) -> None:
        policy = read_delivery_policy().stricter(check_when_full(self.when_full))
        self._policy = policy
        self._buffer = Outbox(self.buffer_bytes, policy)
        self._allowance = BlockAllowance(policy.block_timeout_s)
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stop = False
        self._gave_up = False
        self._released_gone = False  # Redis came back without entries left to it alone
        self._pending: list[Event] = []  # handed to us, not yet sealed into an entry
        self._seal_lock = threading.Lock()  # entries are numbered and queued in one order
        self._last_progress = time.monotonic()
        self._report_once = ReportOnce()

    def config(self) -> dict[str, Any]:
        """Spec data; the URL travels under ``secrets``."""
        return {
            **super().config(),
            "run": self.run,
            "maxlen": self.maxlen,
            "buffer_bytes": self.buffer_bytes,
            "close_timeout_s": self.close_timeout_s,
            "when_full": self.when_full,
        }

    def secrets(self) -> dict[str, str]:
        """The broker URL (it may hold a password)."""
        return {"url": self._url}

    def __repr__(self) -> str:
        return f"BrokerForwarder(name={self.name!r}, stream={self.stream!r})"

    # -- lifecycle --------------------------------------------------------------------------
    def open(self) -> None:
        """Start a new producer id (consumers de-duplicate per id) and the sender thread.

        Without the ``redis`` package there is no sender: one line says what to install, and
        every event handed here is counted lost as "redis package missing".
        """
        self._reset()
        self.producer = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
        self._seen = seen_key(self.stream, self.group)
        self._seq = 0
        self._encoder = Encoder()
        self._no_client = redis_missing()
        if self._no_client:
            report(f"broker: {self._no_client}; events for {self.stream!r} are counted as lost")
            return
        self._thread = threading.Thread(
            target=self._send_loop, name="goggles_io:broker", daemon=True
        )
        self._thread.start()

    def handle_batch(self, events: list[Event]) -> None:
        """Queue ``events`` for the next stream entry; past the byte budget drop and count them.

        Events wait in ``_pending`` until the sender is free (or 1024 have gathered) and are
        then sealed into one entry: while Redis is slow or away, many small bus batches become
        few large entries, so the backlog flows at the consumer's per-entry rate x 1024.
        """
        if self._no_client:
            self.no_client += len(events)
            return
        with self._cond:
            self._pending.extend(events)
            full = len(self._pending) >= _ENTRY_EVENTS
            self._cond.notify()
        if full:
            self._seal(wait=True)

    def _seal(self, *, wait: bool) -> None:
        """Turn the pending events into the next numbered entry (only the lane's worker waits
        for room; the sender, which makes the room, never does)."""
        if not self._seal_lock.acquire(blocking=wait):
            return
        try:
            with self._cond:
                events, self._pending = self._pending, []
            if events:
                self._add_entry(events, may_wait=wait)
        finally:
            self._seal_lock.release()

    def _add_entry(self, events: list[Event], *, may_wait: bool) -> None:
        try:
            fields = encode_entry(self._encoder, self.producer, self._seq + 1, events)
        except (TypeError, ValueError, OverflowError):
            if len(events) > 1:  # keep every event that can be encoded, in order
                for event in events:
                    self._add_entry([event], may_wait=may_wait)
                return
            self.unencodable += 1
            self._report_once("enc", f"broker: an event cannot be encoded ({events[0]!r:.200})")
            return
        size = len(fields["d"]) + 64
        entry = (fields, size, len(events))
        with self._cond:
            added = self._buffer.add(entry)
            if not added and may_wait and self._policy.blocks:
                # Only this handler's lane waits (it then spills); the producers never do.
                self._cond.release()
                try:
                    self._allowance.wait(lambda: self._buffer.has_room(size))
                finally:
                    self._cond.acquire()
                added = self._buffer.add(entry)
            if added:
                self._seq += 1
                self._cond.notify()
            else:
                self.buffer_full += len(events)
            why = self._buffer.failure
        if not added:
            self._report_once(
                "full",
                advice(
                    f"broker: buffer of {self.buffer_bytes} bytes full and {why or 'no spool'} "
                    "(Redis slow or away); dropping events and counting them"
                ),
            )

    def handle(self, event: Event) -> None:
        """One event is a batch of one."""
        self.handle_batch([event])

    def flush(self) -> None:
        """Wait until the buffer reached Redis, then until a live consumer passed it.

        Each wait lasts as long as it makes progress: it gives up once ``close_timeout_s``
        passed without an entry reaching Redis (it is down) or without a consumer recording one
        (it is stuck); it does not wait for consumers when none is reading the stream.
        """
        self._seal(wait=True)
        with self._cond:
            self._last_progress = time.monotonic()
            while (self._buffer.unsent or self._pending) and self._thread is not None:
                if time.monotonic() - self._last_progress > self.close_timeout_s:
                    break
                self._cond.wait(0.05)
            self._gave_up = self._buffer.unsent or bool(self._pending)
            if self._gave_up or not self._buffer or self._thread is None:
                return
        if not self._consumers_reading():
            return
        with self._cond:
            self._last_progress = time.monotonic()
            while self._buffer and self._thread is not None:
                if time.monotonic() - self._last_progress > self.close_timeout_s:
                    break
                self._cond.wait(0.05)

    def _consumers_reading(self) -> bool:
        """Whether some consumer of our group read the stream within the last two seconds."""
        import redis

        try:
            client = self._client()
            try:
                found = client.xinfo_consumers(self.stream, self.group)
            finally:
                client.close()
        except (redis.RedisError, OSError):
            return False
        return any(int(c.get("idle", 1 << 62)) < _CONSUMER_IDLE_MS for c in found)

    def close(self) -> None:
        """Send what is buffered (bounded), stop the sender; what is left is counted unsent."""
        if not self._gave_up:  # the lane flushes right before closing: wait once, not twice
            self.flush()
        with self._cond:
            self._stop = True
            kept = self._buffer.kept_events
            left = self._buffer.released_unsafe()
            if self._released_gone:
                self.lost_in_restart += left
                left = 0
            self.unsent += self._buffer.clear() + self._buffer.lost + len(self._pending)
            self._pending = []
            forgotten = self._buffer.released_forgotten
            self._cond.notify_all()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(self.close_timeout_s)
        if self.unsent:
            report(f"broker: {self.unsent} events were not sent to {self.stream!r} before close")
        if self.lost_in_restart:
            report(
                f"broker: {self.lost_in_restart} events were lost by Redis (restarted without "
                "its data, or trimmed) before a consumer read them: they were past the "
                f"retention budget of {self.buffer_bytes} bytes, so not kept here to send again"
            )
        if kept + left + forgotten:
            report(
                f"broker: {kept + left + forgotten} events are in {self.stream!r} and no consumer "
                "has handled them yet; a Redis restart without its data before one reads them "
                "would lose them"
            )

    def losses(self) -> dict[str, int]:
        """Events this forwarder could not deliver to Redis, by reason."""
        found = {
            "buffer full": self.buffer_full,
            "unsent at close": self.unsent,
            "unencodable": self.unencodable,
            "lost by Redis": self.lost_in_restart,
            "redis package missing": self.no_client,
        }
        return {k: v for k, v in found.items() if v}

    # -- sender -----------------------------------------------------------------------------
    def _client(self) -> Any:
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        # No silent retries inside redis-py: a broken connection must reach _send_loop, which
        # sends every kept entry again on the new one (a restarted Redis may have lost them).
        return redis.Redis.from_url(
            self._url.reveal(),
            socket_connect_timeout=2.0,
            socket_timeout=5.0,
            retry=Retry(NoBackoff(), 0),
        )

    def _next_chunk(self) -> list[Entry] | None:
        """Wait for entries to send, or for a poll of the group's mark; None: stop."""
        with self._cond:
            while not self._buffer.unsent and not self._pending and not self._stop:
                if self._buffer:  # kept entries: ask again soon whether they are safe
                    self._cond.wait(_POLL_S)
                    break
                self._cond.wait(0.5)
        self._seal(wait=False)
        with self._cond:
            if self._stop and not self._buffer.unsent:
                return None
            return self._buffer.take(_PIPELINE_ENTRIES)

    def _send_loop(self) -> None:
        import redis

        client = self._client()
        add = client.register_script(_ADD_IF_KEPT)
        marker = f"{self.stream}:producer:{self.producer}"
        first = True  # Redis has nothing of ours yet: the marker is set, not checked
        backoff = 0.05
        down = False
        while True:
            chunk = self._next_chunk()
            if chunk is None:
                break
            args: list[Any] = [self.producer, self.maxlen, int(first)]
            for fields, _, _ in chunk:
                args += [fields["s"], fields["d"]]
            try:
                reply = add(keys=[marker, self.stream, self._seen], args=args, client=client)
            except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
                if not down:
                    report(
                        f"broker: Redis unreachable ({type(exc).__name__}); buffering up to "
                        f"{self.buffer_bytes} bytes and retrying (losses beyond are counted)"
                    )
                    down = True
                with self._cond:
                    self._buffer.resend(len(chunk))  # it may not have arrived: again, first
                    if self._stop:
                        break
                    self._cond.wait(backoff)
                backoff = min(backoff * 2, _BACKOFF_MAX_S)
                with contextlib.suppress(Exception):
                    client.close()
                client = self._client()
                continue
            except redis.RedisError as exc:  # refused by the server (auth, OOM...): count, go on
                self._report_once("refused", f"broker: Redis refused entries: {exc}")
                with self._cond:
                    self.unsent += self._buffer.drop_sent(len(chunk))
                    self._cond.notify_all()
                continue
            if not int(reply[0]):
                self._lost_by_redis()
                first = True
                continue
            first = False
            self.sent += sum(n for _, _, n in chunk)
            if down:
                report("broker: Redis reachable again; buffered events sent")
                down = False
            backoff = 0.05
            with self._cond:
                self._buffer.accepted()
                confirmed = self._buffer.confirm_upto(int(reply[1]))
                if chunk or confirmed:
                    self._last_progress = time.monotonic()
                if not self._buffer.unsent:
                    self._allowance.refill()
                self._cond.notify_all()
        with contextlib.suppress(Exception):
            client.close()

    def _lost_by_redis(self) -> None:
        """Redis came back without our entries: send every kept one again, oldest first."""
        with self._cond:
            again = self._buffer.resend()
            at_risk = self._buffer.released_unsafe()
            if at_risk:
                self._released_gone = True
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
