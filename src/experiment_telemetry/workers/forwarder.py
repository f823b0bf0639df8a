"""``EventForwarder``: in a worker process, every runtime event goes onto the goggles bus.

It is an ordinary runtime ``Subscriber`` that the worker attaches to ``telemetry`` (and
``snapshots``): runtime code keeps emitting through stdlib logging and never learns that a bus
exists. Each schema is packed with msgpack as a *row* (``runtime_telemetry.rows``: its field values
in order, plain data, no pickle; a class without a row form as its ``to_dict``) and queued;
every ``batch_size`` events (or ``MAX_CHUNK_BYTES`` of them), and at each episode's end, the
queue goes out as one goggles
``ARTIFACT`` event in the experiment's private bridge scope: its payload is the chunk, a
msgpack ``[layouts, rows]`` where each layout (logger name, level, kind, version, field
names) is written once per chunk and each row is ``[layout index, *values]`` (or
``[layout index, to_dict data]``); its ``extra``
the worker, the episode, the sequence number of the first event and the count (ADR 0054). One opaque bus event per
chunk, rather than one nested event per runtime event, spares the goggles host decoding and
re-encoding every event on a 2-core machine (ADR 0022). ``end()``
also sends the episode's end marker, which carries the count, so the experiment scores an
episode only once all of its events arrived (or knows exactly how many were lost).
"""

from __future__ import annotations

import logging
import os
import time

import msgpack

import goggles_io
from runtime_telemetry import Subscriber, TelemetrySchema, to_dict
from runtime_telemetry.rows import row_fields, row_values

__all__ = ["BRIDGE_LOGGER", "EventForwarder"]

BRIDGE_LOGGER = "experiment_telemetry.workers"
"""The goggles logger name of forwarded events and end markers."""
_ARTIFACT = goggles_io.Kind.ARTIFACT
ROWS_FORMAT = "msgpack-rows"
"""``extra["format"]`` of a chunk of rows (``"msgpack"``: the older list of
(logger name, level, ``to_dict``) triples, still read)."""
_CHUNK = {"name": "runtime_events", "format": ROWS_FORMAT}
MAX_CHUNK_BYTES = 1 << 20
"""A chunk goes out once its packed rows reach this size, whatever ``batch_size`` says."""
_logger = logging.getLogger(__name__)


class EventForwarder(Subscriber):
    """Forward runtime events of this process to the goggles bus, in the bridge ``scope``.

    Per event it costs reading the fields and one msgpack ``pack`` (an event that does not
    pack is counted in ``errors`` and reported, as a callback error is), plus a share of one
    non-blocking goggles enqueue per chunk (``docs/benchmarks.md``); a full client queue drops and counts a
    whole chunk, it never blocks the runtime. Events emitted outside an episode (while the
    runtime is built, say) carry episode ``None`` and go out when the next episode begins.

    Args:
        scope: the experiment's bridge scope (``goggles_io`` scope syntax).
        worker: this worker's index, carried by every event.
        batch_size: runtime events per bus event (1: one bus event each). 256 (was 64):
            fewer, larger bus events cost the goggles client, host and subscription less per
            event (2 workers at 0.79-0.91x in-process instead of 0.52-0.68x, in alternation;
            ADR 0054). ``MAX_CHUNK_BYTES`` bounds a chunk of large events (snapshots).
    """

    def __init__(self, scope: str, worker: int, batch_size: int = 256) -> None:
        super().__init__()
        self.scope = scope
        self.worker = worker
        self.batch_size = max(1, int(batch_size))
        self._batch: list[bytes] = []
        """Packed rows of the chunk being filled."""
        self._bytes = 0
        self._layouts: list[tuple[str, int, str, int, tuple[str, ...] | None]] = []
        self._index: dict[tuple[str, int, type[TelemetrySchema]], tuple[int, bool]] = {}
        """(logger, level, class) -> (its layout's index in this chunk, whether it has rows)."""
        self._pack = msgpack.Packer().pack
        self.episode: int | None = None
        self.sent = 0
        """Events sent for the current episode."""
        self.total = 0
        """Events sent since this forwarder was created."""
        self._emit = goggles_io.get_bus().emit
        """The bus's ``emit`` (one bus event per chunk, built with keywords)."""
        self._pid = os.getpid()

    def begin(self, episode: int) -> None:
        """Tag what follows with ``episode``."""
        with self.lock:
            self._send_batch()
            self.episode = episode
            self.sent = 0

    def end(self) -> int:
        """Send the current episode's end marker and return how many events it had."""
        with self.lock:
            self._send_batch()
            sent, episode = self.sent, self.episode
            extra = {"w": self.worker, "e": episode, "end": sent}
            self._emit(
                goggles_io.Event(
                    kind=_ARTIFACT,
                    scope=self.scope,
                    payload=b"",
                    step=sent,
                    logger=BRIDGE_LOGGER,
                    pid=self._pid,
                    extra=extra,
                )
            )
            self.episode = None
            self.sent = 0
        return sent

    def emit_schema(self, name: str, level: int, schema: TelemetrySchema) -> None:
        """Encode the schema and queue it for the bus (``Subscriber`` override; with or
        without a ``LogRecord``, ADR 0078)."""
        key = (name, level, type(schema))
        layout = self._index.get(key)
        if layout is None:
            layout = self._layout(key)
        try:
            if layout[1]:
                row = self._pack((layout[0], *row_values(schema)))
            else:
                row = self._pack((layout[0], to_dict(schema)))
        except Exception:
            self._report_error(schema)
            return
        batch = self._batch
        batch.append(row)
        self._bytes += len(row)
        if len(batch) >= self.batch_size or self._bytes >= MAX_CHUNK_BYTES:
            self._send_batch()

    def _layout(self, key: tuple[str, int, type[TelemetrySchema]]) -> tuple[int, bool]:
        name, level, cls = key
        fields = row_fields(cls)
        layout = self._index[key] = (len(self._layouts), fields is not None)
        self._layouts.append((name, level, cls.kind, cls.version, fields))
        return layout

    def _send_batch(self) -> None:
        batch = self._batch
        if not batch:
            return
        payload = b"".join(
            (b"\x92", msgpack.packb(self._layouts), _array_header(len(batch)), *batch)
        )
        self._batch = []
        self._bytes = 0
        self._layouts = []
        self._index = {}
        first = self.sent
        extra: dict[str, object] = {
            "w": self.worker,
            "e": self.episode,
            "n": first,
            "c": len(batch),
            **_CHUNK,
        }
        self._emit(
            goggles_io.Event(
                kind=_ARTIFACT,
                scope=self.scope,
                payload=payload,
                step=first,
                timestamp=time.time(),
                logger=BRIDGE_LOGGER,
                pid=self._pid,
                extra=extra,
            )
        )
        self.sent = first + len(batch)
        self.total += len(batch)

    def close(self) -> None:
        """Send what is queued, then detach."""
        with self.lock:
            self._send_batch()
        super().close()


def _array_header(count: int) -> bytes:
    """The msgpack header of an array of ``count`` items (the rows are packed one by one)."""
    if count < 16:
        return bytes((0x90 | count,))
    if count < 1 << 16:
        return b"\xdc" + count.to_bytes(2, "big")
    return b"\xdd" + count.to_bytes(4, "big")
