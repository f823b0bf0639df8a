"""A live subscription fed by the in-process bus: a sink that hands rows to the subscriber.

``gg.subscribe`` on the in-process bus (``GOGGLES_TRANSPORT=inprocess``) attaches a
:class:`SubscriptionSink` for the subscription, in a bounded lane of its own that never makes a
producer wait (``backpressure = False``), exactly as the socket host attaches its sink for a
subscriber's connection. The sink carries rows on (``handle_rows``); the subscriber builds each
event where it reads it (ADR 0071).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Protocol

from goggles_io._event.records import Event, Kind
from goggles_io._event.rows import Row, row_of

__all__ = ["Subscriber", "SubscriptionSink"]


class Subscriber(Protocol):
    """What a bus needs of a live subscription (:class:`~goggles_io.Subscription`)."""

    scopes: list[str]
    kinds: list[Kind] | None
    host_bounds: tuple[int | None, int | None]

    def deliver(self, rows: list[Row]) -> None:
        """Take ``rows`` (buffered, or handed to the subscriber's callback as events)."""

    def fed_by(self, bus: Any, name: str) -> None:
        """The bus ``bus`` feeds it through its handler ``name`` (flushed, widened, forgotten
        through them)."""


class SubscriptionSink:
    """Feeds a subscription from the bus it is attached to (no socket involved)."""

    level = 0
    backpressure = False
    remote_methods: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, name: str, subscription: Subscriber) -> None:
        self.name = name
        self.subscription = subscription
        self.queue_size, self.queue_bytes = subscription.host_bounds
        kinds = subscription.kinds
        self.capabilities = frozenset(kinds) if kinds else frozenset(Kind)

    def handle_rows(self, rows: list[Row]) -> None:
        """Hand ``rows`` on: the subscriber builds their events where it reads them."""
        self.subscription.deliver(rows)

    def handle(self, event: Event) -> None:
        """An event a synchronous bus handed over itself."""
        self.subscription.deliver([row_of(event)])

    def can_handle(self, kind: Kind) -> bool:
        return kind in self.capabilities

    def open(self) -> None:
        """Nothing to acquire: the subscription's buffer is already there."""

    def flush(self) -> None:
        """Nothing buffered here: rows go straight to the subscription."""

    def close(self) -> None:
        """The subscription outlives the sink; closing it is its owner's call."""

    def to_dict(self) -> dict[str, Any]:
        return {"cls": "goggles_io.subscriber", "data": {"name": self.name}}

    @classmethod
    def from_dict(cls, serialized: Mapping[str, Any]) -> SubscriptionSink:
        """Never rebuilt from a spec: it holds a live subscription of this process."""
        msg = f"an in-process subscriber sink cannot be rebuilt from a spec (got {serialized!r})."
        raise TypeError(msg)
