"""``EpisodeInbox``: in the experiment process, forwarded runtime events filed per episode.

A goggles subscription to the bridge scope hands every forwarded event to a callback on its
reader thread, which only files it under (worker, episode) and wakes the harness. When the
harness scores an episode, it takes that episode's events out of the inbox, and
``replay_episode`` decodes them with the runtime codec and hands each to the ``telemetry.*``
logger it was emitted on in the worker, so the recorder, the aggregators and any other
subscriber receive them exactly as in one process.

``EventCollector`` is the old name of ``EpisodeInbox``, kept as an alias; the inbox is not
the HTTP collector (``goggles_io.server``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Sequence
from typing import Any

import msgpack

import goggles_io
from runtime_telemetry import from_dict

__all__ = ["EpisodeEvents", "EpisodeInbox", "EventCollector", "replay_episode"]

_logger = logging.getLogger(__name__)
_Key = tuple[int, "int | None"]


class EpisodeEvents:
    """What arrived for one (worker, episode): chunks in order and the end marker's count."""

    __slots__ = ("chunks", "ended", "expected", "loose", "received")

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
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
        """The events, in order: (logger name, level, encoded schema) each.

        A chunk that is not a msgpack list of such triples is skipped and counted as missing.
        """
        events: list[Sequence[Any]] = []
        for chunk in self.chunks:
            try:
                items = msgpack.unpackb(chunk)
            except Exception:
                items = None
            if not isinstance(items, list) or not all(
                isinstance(i, list) and len(i) == 3 for i in items
            ):
                _logger.warning("a chunk of forwarded events does not decode; skipped")
                continue
            events.extend(items)
        if len(events) < self.received:
            self.received = len(events)
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
    """Decode each event and hand it to its ``telemetry.*``/``snapshots.*`` logger, in order.

    An event that does not decode (an unknown kind, a version mismatch) is skipped, counted and
    reported once per episode. Returns how many were skipped.
    """
    skipped = 0
    loggers: dict[str, logging.Logger] = {}  # a few names for thousands of events
    for name, level, data in events:
        try:
            schema = from_dict(data)
        except Exception as exc:
            if not skipped:
                _logger.warning("worker %d: an event does not decode, skipped: %s", worker, exc)
            skipped += 1
            continue
        logger = loggers.get(name)
        if logger is None:
            logger = loggers[name] = logging.getLogger(name)
        if logger.isEnabledFor(level):
            logger.handle(logger.makeRecord(name, level, f"<worker {worker}>", 0, schema, (), None))
    return skipped
