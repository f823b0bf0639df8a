"""``BrokerForwarder``: the host-side handler that forwards every event to a Redis stream.

Attached on every scope (``"*"``) when ``GOGGLES_BROKER`` is set (or ``configure(broker=...)``),
so it runs in each machine's host. It carries rows on (``handle_rows``: no event is built for
it) and they wait in a :class:`~goggles_io._delivery.pipe.Pipe`
(``GOGGLES_BROKER_BYTES`` in memory, then the spool on disk, in order); its worker gathers what
waits while Redis is busy into one numbered batch (whole client batches, about 1,024 scalars'
bytes; a full client batch is a batch of its own and goes as the client encoded it, ADR 0079) and
:class:`~goggles_io._broker.stream.StreamWriter` adds it as one stream entry (``XADD <stream>
MAXLEN ~ N``; :mod:`goggles_io._broker.entries`), numbered per producer so consumers
de-duplicate. The pipe keeps each entry after the ``XADD`` until the consumer group has recorded
it as handled (every send reads the group's mark: an acknowledgement), or until it needs the
room (:mod:`goggles_io._broker.outbox`: released). When Redis is down the pipe retries with
backoff; when it came back without its data every kept entry is sent again, in order, and
consumers skip the repeats (ADR 0029). Past memory and spool the lane's worker waits
(``GOGGLES_BLOCK_TIMEOUT`` per burst, the producers never do), then events are dropped and
counted (``losses()``, the pipe's words: :mod:`goggles_io._delivery.losses`), said on stderr.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Callable
from typing import Any, ClassVar

from goggles_io._broker.frames import FrameTable
from goggles_io._broker.outbox import Outbox
from goggles_io._broker.preflight import redis_missing
from goggles_io._broker.settings import check_url, read_broker_settings, seen_key, stream_name
from goggles_io._broker.stream import StreamWriter
from goggles_io._bus.items import LaneItem, lane_units
from goggles_io._bus.spilled_items import LaneCodec
from goggles_io._delivery.losses import (
    LOST_BY_SINK,
    NO_CLIENT,
    NOT_DELIVERED,
    QUEUE_FULL,
    SPOOL_FULL,
    UNENCODABLE,
)
from goggles_io._delivery.pipe import Pipe
from goggles_io._delivery.policy import (
    DeliveryPolicy,
    advice,
    check_when_full,
    read_delivery_policy,
)
from goggles_io._event.records import Event
from goggles_io._event.rows import (
    EVENT_OVERHEAD_BYTES,
    METRIC_ENTRY_BYTES,
    Row,
    nbytes,
    row_of,
    rows_nbytes,
)
from goggles_io._util.report import report
from goggles_io._util.secret import Secret
from goggles_io.handlers.base import ALL_KINDS, BaseHandler, register_handler

__all__ = ["BROKER_HANDLER_NAME", "BrokerForwarder", "broker_pipe"]

BROKER_HANDLER_NAME = "goggles_io.broker"
_ENTRY_EVENTS = 1024  # items (rows, or lists of up to this many rows) in one stream entry at most
# ... and about this many bytes (one spool record too): a batch ends at the item that reaches
# it, so a full client batch of scalars is a batch of its own, sent as it came (ADR 0079), and
# smaller lists are gathered into entries of about 1,024 scalars (at most ~2,300 rows).
_ENTRY_BYTES = _ENTRY_EVENTS * (EVENT_OVERHEAD_BYTES + METRIC_ENTRY_BYTES)


def broker_pipe(
    send: Callable[[int, list[LaneItem], bool], object],
    policy: DeliveryPolicy,
    buffer_bytes: int,
    on_idle: Callable[[], float | None] | None,
    on_loss: Callable[[str, int, str], object] | None,
) -> Pipe[LaneItem]:
    """The forwarder's pipe: one batch is one stream entry, kept until the consumer group's
    mark passes it. Its items are rows and the host's lists of rows, counted and spilled as a
    handler lane's are. A function so the engine's tests build the pipe as the forwarder does."""
    return Pipe(
        send,
        label="broker",
        policy=policy,
        max_bytes=buffer_bytes,
        batch_items=_ENTRY_EVENTS,
        batch_bytes=_ENTRY_BYTES,
        codec=LaneCodec(),
        units=lane_units,
        on_idle=on_idle,
        on_loss=on_loss,
        name="goggles_io:broker",
    )


@register_handler
class BrokerForwarder(BaseHandler):
    """Forward events to ``goggles_io:<run>`` on the Redis at ``url``.

    Args:
        url: ``redis://[:password@]host:port/db``, ``rediss://`` for TLS, or ``unix://``;
            kept as a secret (passwords never appear in a spec, repr or message).
        run: names the stream (``goggles_io:<run>``); default ``GOGGLES_BROKER_RUN``.
        maxlen: approximate stream bound (``MAXLEN ~``); default ``GOGGLES_BROKER_MAXLEN``.
        buffer_bytes: what may wait here in memory while Redis is slow or away (then the spool).
        close_timeout_s: how long ``close()`` waits without progress for what is buffered.
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
        self._no_client: str | None = None
        self._pipe: Pipe[LaneItem] | None = None
        self._writer: StreamWriter | None = None
        self._own: dict[str, int] = {}  # losses outside the pipe, by reason
        self._final: dict[str, int] | None = None  # every loss, once closed
        self._said: set[str] = set()
        self._gave_up = False
        self._outbox = Outbox(self.buffer_bytes // 2)
        self._frames: FrameTable | None = None

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
        """Start a new producer id (consumers de-duplicate per id) and its pipe.

        Without the ``redis`` package there is no pipe: one line says what to install, and
        every event handed here is counted lost (``no client library``).
        """
        self._own, self._final, self._said = {}, None, set()
        self._gave_up = False
        self._no_client = redis_missing()
        if self._no_client:
            report(f"broker: {self._no_client}; events for {self.stream!r} are counted as lost")
            return
        producer = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
        self.producer = producer
        # Kept entries hold at most half the budget: new ones always find room (ADR 0029).
        self._outbox = Outbox(self.buffer_bytes // 2)
        writer = StreamWriter(
            self._url,
            self.stream,
            seen_key(self.stream, self.group),
            producer,
            self.maxlen,
            self._outbox,
            self.buffer_bytes,
        )
        writer.frames = self._frames = FrameTable()
        self._writer = writer
        policy = read_delivery_policy().stricter(check_when_full(self.when_full))
        self._pipe = writer.pipe = broker_pipe(
            writer.send, policy, self.buffer_bytes, writer.idle, self._said_once
        )

    def handle_rows(self, rows: list[Row]) -> None:
        """Queue ``rows`` for the stream; past memory and spool (and a bounded wait) they
        are dropped and counted."""
        pipe = self._pipe
        if pipe is None:  # no redis package (or not open)
            self._count(NO_CLIENT if self._no_client else NOT_DELIVERED, len(rows))
            return
        if len(rows) <= _ENTRY_EVENTS:
            pipe.put(rows, rows_nbytes(rows))  # one item: a whole client batch (ADR 0079)
            return
        for at in range(0, len(rows), _ENTRY_EVENTS):  # a long list (a left-over's record)
            part = rows[at : at + _ENTRY_EVENTS]
            pipe.put(part, rows_nbytes(part))

    def note_frame(self, rows: list[Row], frame: bytes | memoryview) -> None:
        """The host decoded ``rows`` from client message ``frame`` (no shared memory in it):
        a pipe batch of exactly these rows is sent as ``frame`` (ADR 0079)."""
        frames = self._frames
        if frames is not None:
            frames.note(rows, frame)

    def handle(self, event: Event) -> None:
        """An event a synchronous bus handed over itself: one row."""
        pipe = self._pipe
        if pipe is None:
            self.handle_rows([row_of(event)])  # counted there
            return
        row = row_of(event)
        pipe.put(row, nbytes(row))

    def _count(self, reason: str, n: int) -> None:
        if n > 0:
            self._own[reason] = self._own.get(reason, 0) + n

    def _said_once(self, reason: str, units: int, detail: str) -> None:
        """Say each loss reason of the pipe once (the counts are in ``losses()``)."""
        if reason in self._said or reason == NOT_DELIVERED:  # close() says that one
            return
        self._said.add(reason)
        if reason in (QUEUE_FULL, SPOOL_FULL):
            report(
                advice(
                    f"broker: buffer of {self.buffer_bytes} bytes full and {detail or 'no spool'}"
                    " (Redis slow or away); dropping events and counting them"
                )
            )
        else:
            report(f"broker: {reason} ({detail}); {units} events dropped and counted")

    def flush(self) -> None:
        """Wait until what is buffered reached Redis, then until a live consumer passed it.

        Each wait lasts as long as it makes progress: it gives up once ``close_timeout_s``
        passed without an entry reaching Redis (it is down) or without a consumer recording one
        (it is stuck); it does not wait for consumers when none is reading the stream.
        """
        pipe, writer = self._pipe, self._writer
        if pipe is None or writer is None:
            return
        outbox = self._outbox
        reached = self._wait(lambda: max(pipe.left() - outbox.kept_units, 0), outbox.wait)
        self._gave_up = not reached
        if reached and pipe.left() and writer.consumers_reading(self.group):
            pipe.drain(self.close_timeout_s)

    def _wait(self, left: Callable[[], int], wait: Callable[[float], object]) -> bool:
        """Wait while ``left()`` changes at least every ``close_timeout_s``; ``True`` at 0."""
        last, since = left(), time.monotonic()
        while last:
            wait(0.05)
            now, found = time.monotonic(), left()
            if found != last:
                last, since = found, now
            elif now - since > self.close_timeout_s:
                return False
        return True

    def close(self) -> None:
        """Send what is buffered (bounded), stop; what never reached Redis is counted lost."""
        pipe, writer = self._pipe, self._writer
        if pipe is None or writer is None:
            return
        if not self._gave_up:  # the lane flushes right before closing: wait once, not twice
            self.flush()
        last = writer.close(self.close_timeout_s)
        if last:
            pipe.ack(last)  # in the stream: no longer ours to count
        unsent = pipe.close(join_s=self.close_timeout_s)
        left = self._outbox.close()
        self._count(UNENCODABLE, writer.unencodable)
        self._count(LOST_BY_SINK, left.lost)
        self._final = _merged(pipe.losses(), self._own)
        self._pipe = self._writer = None
        self._frames = None
        if unsent:
            report(f"broker: {unsent} events were not sent to {self.stream!r} before close")
        if left.lost:
            report(
                f"broker: {left.lost} events were lost by Redis (restarted without its data, or "
                "trimmed) before a consumer read them: they were past the retention budget of "
                f"{self.buffer_bytes} bytes, so not kept here to send again"
            )
        waiting = left.kept + left.released + left.forgotten
        if waiting:
            report(
                f"broker: {waiting} events are in {self.stream!r} and no consumer has handled "
                "them yet; a Redis restart without its data before one reads them would lose them"
            )

    def losses(self) -> dict[str, int]:
        """Events this forwarder could not deliver to Redis, by reason."""
        pipe, writer = self._pipe, self._writer
        if self._final is not None or pipe is None or writer is None:
            return dict(self._own if self._final is None else self._final)
        return _merged(pipe.losses(), {**self._own, UNENCODABLE: writer.unencodable})


def _merged(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    """``a`` + ``b`` by reason, the reasons with a count only."""
    found = {k: a.get(k, 0) + b.get(k, 0) for k in {*a, *b}}
    return {k: v for k, v in found.items() if v}
