"""``EventForwarder``: in a worker process, every runtime event goes onto the goggles bus.

It is an ordinary runtime ``Subscriber`` that the worker attaches to ``telemetry`` (and
``snapshots``): runtime code keeps emitting through stdlib logging and never learns that a bus
exists. Each schema is unstructured with the runtime's cattrs codec (``to_dict``: plain data,
no pickle) and queued; every ``batch_size`` events, and at each episode's end, the queue goes
out as one goggles ``ARTIFACT`` event in the experiment's private bridge scope: its payload is
the chunk packed with msgpack (plain data in, plain data out), its ``extra`` the worker, the
episode, the sequence number of the first event and the count. One opaque bus event per
chunk, rather than one nested event per runtime event, spares the goggles host decoding and
re-encoding every event on a 2-core machine (ADR 0022). ``end()``
also sends the episode's end marker, which carries the count, so the experiment scores an
episode only once all of its events arrived (or knows exactly how many were lost).
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

import msgpack

import goggles_io
from runtime_telemetry import Subscriber, TelemetrySchema, to_dict

__all__ = ["BRIDGE_LOGGER", "EventForwarder"]

BRIDGE_LOGGER = "experiment_telemetry.workers"
"""The goggles logger name of forwarded events and end markers."""
_ARTIFACT = goggles_io.Kind.ARTIFACT
_CHUNK = {"name": "runtime_events", "format": "msgpack"}
_logger = logging.getLogger(__name__)


class EventForwarder(Subscriber):
    """Forward runtime events of this process to the goggles bus, in the bridge ``scope``.

    Per event it costs one ``to_dict`` and a list append, plus a share of one non-blocking
    goggles enqueue per chunk (``docs/benchmarks.md``); a full client queue drops and counts a
    whole chunk, it never blocks the runtime. Events emitted outside an episode (while the
    runtime is built, say) carry episode ``None`` and go out when the next episode begins.

    Args:
        scope: the experiment's bridge scope (``goggles_io`` scope syntax).
        worker: this worker's index, carried by every event.
        batch_size: runtime events per bus event (1: one bus event each).
    """

    def __init__(self, scope: str, worker: int, batch_size: int = 64) -> None:
        super().__init__()
        self.scope = scope
        self.worker = worker
        self.batch_size = max(1, int(batch_size))
        self._batch: list[tuple[str, int, dict[str, Any]]] = []
        self.episode: int | None = None
        self.sent = 0
        """Events sent for the current episode."""
        self.total = 0
        """Events sent since this forwarder was created."""
        self._bus: Any = goggles_io.get_bus()
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
            self._bus.emit(
                goggles_io.Event(
                    _ARTIFACT, self.scope, b"", None, sent, 0.0, BRIDGE_LOGGER, self._pid,
                    None, None, extra,
                )
            )  # fmt: skip
            self.episode = None
            self.sent = 0
        return sent

    def emit(self, record: logging.LogRecord) -> None:
        """Encode the record's schema and queue it for the bus (``logging.Handler`` override)."""
        schema = record.msg
        if not isinstance(schema, TelemetrySchema):
            return
        try:
            data = to_dict(schema)
        except Exception:
            self._report_error(schema)
            return
        batch = self._batch
        batch.append((record.name, record.levelno, data))
        if len(batch) >= self.batch_size:
            self._send_batch()

    def _send_batch(self) -> None:
        batch = self._batch
        if not batch:
            return
        self._batch = []
        first = self.sent
        extra: dict[str, object] = {
            "w": self.worker,
            "e": self.episode,
            "n": first,
            "c": len(batch),
            **_CHUNK,
        }
        self._bus.emit(
            goggles_io.Event(
                _ARTIFACT, self.scope, msgpack.packb(batch), None, first, time.time(),
                BRIDGE_LOGGER, self._pid, None, None, extra,
            )
        )  # fmt: skip
        self.sent = first + len(batch)
        self.total += len(batch)

    def close(self) -> None:
        """Send what is queued, then detach."""
        with self.lock:
            self._send_batch()
        super().close()
