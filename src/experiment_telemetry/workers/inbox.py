"""``EpisodeInbox``: in the experiment process, forwarded runtime events filed per episode.

A goggles subscription to the bridge scope hands every forwarded event to a callback on its
reader thread, which only files it under (worker, episode) and wakes the harness. When the
harness scores an episode, it takes that episode's events out of the inbox, decodes them (rows
become schema objects equal to the worker's, ``runtime_telemetry.rows``; anything else goes
through the runtime codec's ``from_dict``), and ``replay_episode`` hands each to the handlers
of the ``telemetry.*`` logger it was emitted on in the worker, so the recorder, the
aggregators and any other subscriber receive them exactly as in one process.

``EventCollector`` is the old name of ``EpisodeInbox``, kept as an alias; the inbox is not
the HTTP collector (``goggles_io.server``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import msgpack

import goggles_io
from experiment_telemetry.workers.forwarder import ROWS_FORMAT
from runtime_telemetry import TelemetrySchema, from_dict
from runtime_telemetry.routes import LoggerRoute
from runtime_telemetry.rows import RowMaker, row_maker

__all__ = ["EpisodeEvents", "EpisodeInbox", "EventCollector", "replay_episode"]

_logger = logging.getLogger(__name__)
_Key = tuple[int, "int | None"]


class EpisodeEvents:
    """What arrived for one (worker, episode): chunks in order and the end marker's count."""

    __slots__ = ("chunks", "ended", "expected", "loose", "received", "rows")

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.rows: list[bool] = []
        """Per chunk: whether it holds rows (else the older triples of ``to_dict`` data)."""
        self.received = 0
        """Events in the chunks that arrived."""
        self.expected: int | None = None
        self.ended = False
        self.loose = 0
        """Of ``received``, events sent outside any episode (put first by ``take``)."""

    @property
    def missing(self) -> int:
        """Events the worker sent that never arrived (0 while the end marker is unknown)."""
        if self.expected is None:
            return 0
        return max(0, self.expected - (self.received - self.loose))

    def decode(self) -> list[Sequence[Any]]:
        """The events, in order: (logger name, level, schema) each, the schema decoded from its
        row, or its ``to_dict`` data where it has none (``replay_episode`` decodes that).

        A chunk that does not unpack into such events is skipped and counted as missing.
        """
        events: list[Sequence[Any]] = []
        for chunk, rows in zip(self.chunks, self.rows, strict=True):
            try:
                items = _rows(chunk) if rows else _triples(chunk)
            except Exception:
                items = None
            if items is None:
                _logger.warning("a chunk of forwarded events does not decode; skipped")
                continue
            events.extend(items)
        if len(events) < self.received:
            self.received = len(events)
        return events


def _triples(chunk: bytes) -> list[Any] | None:
    items = msgpack.unpackb(chunk)
    if not isinstance(items, list) or not all(isinstance(i, list) and len(i) == 3 for i in items):
        return None
    return items


def _rows(chunk: bytes) -> list[tuple[str, int, Any]]:
    """A chunk of rows as events; a row its class cannot take becomes ``to_dict`` data, so
    that ``from_dict`` says what is wrong with it."""
    layouts, rows = msgpack.unpackb(chunk)
    makers: list[tuple[str, int, RowMaker | None, list[Any]]] = []
    for name, level, kind, version, fields in layouts:
        if not isinstance(name, str) or type(level) is not int:
            raise TypeError(name)
        maker = None if fields is None else row_maker(kind, version, fields, offset=1)
        makers.append((name, level, maker, [kind, version, fields]))
    events: list[tuple[str, int, Any]] = []
    append = events.append
    for row in rows:
        name, level, maker, layout = makers[row[0]]
        if maker is not None:
            try:
                append((name, level, maker(row)))
                continue
            except Exception:  # decoded below, where from_dict says why
                pass
        kind, version, fields = layout
        if fields is None:
            append((name, level, row[1]))
        else:
            data = dict(zip(fields, row[1:], strict=False))
            append((name, level, {"kind": kind, "version": version, **data}))
    return events


class EpisodeInbox:
    """Subscribe to ``scope`` and file forwarded events per worker and episode.

    Args:
        scope: the bridge scope the workers send to.
        cond: notified whenever something arrives (the harness waits on it).
        from_broker: read the workers' events from the broker (``GOGGLES_BROKER``: workers on
            other machines) instead of subscribing to this machine's host. There is no
            ``sync`` then: an episode is complete when its end marker arrived.
    """

    def __init__(self, scope: str, cond: threading.Condition, *, from_broker: bool = False) -> None:
        self.scope = scope
        self.remote = from_broker
        self._cond = cond
        self._episodes: dict[_Key, EpisodeEvents] = {}
        self._discarded: set[_Key] = set()
        self.undecodable = 0
        self.arrivals = 0
        """Events received so far (the harness waits for it to change)."""
        self.subscription: Any = None
        self._closed = False
        if from_broker:
            goggles_io.attach(_Feed(f"experiment.inbox.{scope}", self), [scope], from_broker=True)
        else:
            self.subscription = goggles_io.subscribe(
                [scope], kinds=["artifact"], callback=self._on_event
            )

    def _on_event(self, event: goggles_io.Event) -> None:
        if self._closed:
            return
        extra = event.extra
        try:
            key = (int(extra["w"]), extra["e"])
        except (KeyError, TypeError, ValueError):
            self.undecodable += 1
            return
        with self._cond:
            self.arrivals += 1
            if key in self._discarded:
                return
            entry = self._episodes.get(key)
            if entry is None:
                entry = self._episodes[key] = EpisodeEvents()
            if "end" in extra:
                entry.expected = int(extra["end"])
                entry.ended = True
            elif type(event.payload) is bytes and type(extra.get("c")) is int:
                entry.chunks.append(event.payload)
                entry.rows.append(extra.get("format") == ROWS_FORMAT)
                entry.received += extra["c"]
            else:
                self.undecodable += 1
            self._cond.notify_all()

    def ended(self, worker: int, episode: int) -> bool:
        """Whether the end marker of ``episode`` from ``worker`` arrived (call under ``cond``)."""
        entry = self._episodes.get((worker, episode))
        return entry is not None and entry.ended

    def received(self, worker: int, episode: int) -> int:
        """Events of ``episode`` from ``worker`` that arrived so far (call under ``cond``)."""
        entry = self._episodes.get((worker, episode))
        return 0 if entry is None else entry.received

    def take(self, worker: int, episode: int) -> EpisodeEvents:
        """Remove and return what arrived for the episode, after any events ``worker`` sent
        outside an episode (call under ``cond``)."""
        entry = self._episodes.pop((worker, episode), None) or EpisodeEvents()
        loose = self._episodes.pop((worker, None), None)
        if loose is not None and loose.chunks:
            entry.chunks[:0] = loose.chunks
            entry.rows[:0] = loose.rows
            entry.received += loose.received
            entry.loose = loose.received
        return entry

    def discard(self, worker: int, episode: int) -> int:
        """Forget the episode (its worker was lost, its events did not arrive in time); later
        arrivals are ignored. Returns how
        many of its events had arrived (call under ``cond``)."""
        key = (worker, episode)
        self._discarded.add(key)
        entry = self._episodes.pop(key, None)
        return 0 if entry is None else entry.received

    def sync(self, timeout_s: float) -> bool:
        """Wait until everything the host routed to us so far has arrived (False from a broker:
        there the end markers tell)."""
        return False if self.subscription is None else self.subscription.sync(timeout_s)

    @property
    def dropped(self) -> int:
        """Events the subscription lost (host lane or local buffer full), counted by goggles."""
        return 0 if self.subscription is None else self.subscription.dropped

    def close(self) -> None:
        """Stop receiving."""
        self._closed = True
        if self.subscription is not None:
            self.subscription.close()


EventCollector = EpisodeInbox
"""The old name of ``EpisodeInbox`` (kept so existing imports keep working)."""


class _Feed(goggles_io.BaseHandler):
    """Hands the broker consumer's events of the bridge scope to an :class:`EpisodeInbox`."""

    capabilities = frozenset({goggles_io.Kind.ARTIFACT})

    def __init__(self, name: str, inbox: EpisodeInbox) -> None:
        super().__init__(name=name)
        self.inbox = inbox

    def handle(self, event: goggles_io.Event) -> None:
        self.inbox._on_event(event)


def replay_episode(events: Iterable[Sequence[Any]], worker: int) -> int:
    """Hand each event to the handlers of its ``telemetry.*``/``snapshots.*`` logger, in order
    (decoding it with ``from_dict`` first where it is still ``to_dict`` data).

    An event that does not decode (an unknown kind, a version mismatch) is skipped, counted and
    reported once per episode. Returns how many were skipped.
    """
    skipped = 0
    origin = f"<worker {worker}>"
    routes: dict[tuple[str, int], LoggerRoute] = {}  # a few (name, level) for thousands of events
    last: tuple[str, int] | None = None
    deliver: Callable[[TelemetrySchema], None] | None = None
    for name, level, data in events:
        if isinstance(data, TelemetrySchema):
            schema = data
        else:
            try:
                schema = from_dict(data)
            except Exception as exc:
                if not skipped:
                    _logger.warning("worker %d: an event does not decode, skipped: %s", worker, exc)
                skipped += 1
                continue
        if deliver is None or last != (name, level):
            last = (name, level)
            route = routes.get(last)
            if route is None:
                route = routes[last] = LoggerRoute(name, level, origin)
            deliver = route.deliver
        deliver(schema)
    return skipped
