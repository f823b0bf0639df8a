"""``BrokerForwarder``: the host-side handler that forwards every event to a Redis stream.

Attached on every scope (``"*"``) when ``GOGGLES_BROKER`` is set (or ``configure(broker=...)``),
so it runs in each machine's host. Each batch the bus hands it becomes one stream entry
(``XADD <stream> MAXLEN ~ N``; see :mod:`goggles_io._broker.entries`), numbered per producer so
consumers de-duplicate. Entries wait in the forwarder's buffer (:mod:`goggles_io._broker.outbox`:
``GOGGLES_BROKER_BYTES`` in memory, then the spool on disk) for a sender thread that pipelines them
to Redis. When Redis is down or restarts, the sender reconnects with backoff and resends; past
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
from goggles_io._broker.outbox import Outbox
from goggles_io._broker.settings import check_url, read_broker_settings, stream_name
from goggles_io._event.codec import Encoder
from goggles_io._event.records import Event
from goggles_io._util.delivery import BlockAllowance, advice, check_when_full, read_delivery_policy
from goggles_io._util.report import ReportOnce, report
from goggles_io._util.secret import Secret
from goggles_io.handlers.base import ALL_KINDS, BaseHandler, register_handler

__all__ = ["BROKER_HANDLER_NAME", "BrokerForwarder"]

BROKER_HANDLER_NAME = "goggles_io.broker"
_PIPELINE_ENTRIES = 256
_BACKOFF_MAX_S = 2.0


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
        self.buffer_full = 0  # events dropped: the buffer was over its byte budget
        self.unsent = 0  # events still buffered when close() gave up
        self.unencodable = 0
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
        """Start a new producer id (consumers de-duplicate per id) and the sender thread."""
        self._reset()
        self.producer = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
        self._seq = 0
        self._encoder = Encoder()
        self._thread = threading.Thread(
            target=self._send_loop, name="goggles_io:broker", daemon=True
        )
        self._thread.start()

    def handle_batch(self, events: list[Event]) -> None:
        """Turn one bus batch into one buffered entry; past the byte budget drop and count it."""
        try:
            fields = encode_entry(self._encoder, self.producer, self._seq + 1, events)
        except (TypeError, ValueError, OverflowError) as exc:
            self.unencodable += len(events)
            self._report_once("enc", f"broker: {len(events)} events cannot be encoded ({exc})")
            return
        size = len(fields["d"]) + 64
        entry = (fields, size, len(events))
        with self._cond:
            added = self._buffer.add(entry)
            if not added and self._policy.blocks:
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
        """Wait until the buffer reached Redis, as long as sending makes progress.

        Gives up once ``close_timeout_s`` passed without an entry reaching Redis (it is down),
        not while it is merely slower than the producers.
        """
        with self._cond:
            self._last_progress = time.monotonic()
            while self._buffer and self._thread is not None:
                if time.monotonic() - self._last_progress > self.close_timeout_s:
                    break
                self._cond.wait(0.05)
            self._gave_up = bool(self._buffer)

    def close(self) -> None:
        """Send what is buffered (bounded), stop the sender; what is left is counted unsent."""
        if not self._gave_up:  # the lane flushes right before closing: wait once, not twice
            self.flush()
        with self._cond:
            self._stop = True
            self.unsent += self._buffer.clear() + self._buffer.lost
            self._cond.notify_all()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(self.close_timeout_s)
        if self.unsent:
            report(f"broker: {self.unsent} events were not sent to {self.stream!r} before close")

    def losses(self) -> dict[str, int]:
        """Events this forwarder could not deliver to Redis, by reason."""
        found = {
            "buffer full": self.buffer_full,
            "unsent at close": self.unsent,
            "unencodable": self.unencodable,
        }
        return {k: v for k, v in found.items() if v}

    # -- sender -----------------------------------------------------------------------------
    def _client(self) -> Any:
        import redis

        return redis.Redis.from_url(
            self._url.reveal(), socket_connect_timeout=2.0, socket_timeout=5.0
        )

    def _send_loop(self) -> None:
        import redis

        client = self._client()
        backoff = 0.05
        down = False
        while True:
            with self._cond:
                while not self._buffer and not self._stop:
                    self._cond.wait(0.5)
                if self._stop and not self._buffer:
                    break
                chunk = self._buffer.take(_PIPELINE_ENTRIES)
            try:
                pipe = client.pipeline(transaction=False)
                for fields, _, _ in chunk:
                    pipe.xadd(self.stream, fields, maxlen=self.maxlen, approximate=True)
                pipe.execute()
            except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
                if not down:
                    report(
                        f"broker: Redis unreachable ({type(exc).__name__}); buffering up to "
                        f"{self.buffer_bytes} bytes and retrying (losses beyond are counted)"
                    )
                    down = True
                with self._cond:
                    self._buffer.resend()  # the chunk goes again, first, once Redis answers
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
                    self.unsent += self._buffer.confirm(len(chunk))
                chunk = []
            else:
                self.sent += sum(n for _, _, n in chunk)
                if down:
                    report("broker: Redis reachable again; buffered events sent")
                    down = False
                backoff = 0.05
            with self._cond:
                self._last_progress = time.monotonic()
                self._buffer.confirm(len(chunk))  # accepted by Redis: safe (issue 23 may wait)
                if not self._buffer:
                    self._allowance.refill()
                self._cond.notify_all()
        with contextlib.suppress(Exception):
            client.close()
