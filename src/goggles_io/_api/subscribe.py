"""``gg.subscribe``: any process on the machine reads the live event stream.

A :class:`Subscription` is an iterator of :class:`~goggles_io.Event` (or, with ``callback=``, a
function called on its reader thread). With the socket transport it opens its own connection to
the host, which routes the requested scopes and kinds to it through a bounded lane of its own:
a subscriber that reads slowly loses events there (counted in :attr:`Subscription.dropped`),
never slowing producers or handlers. The local buffer is bounded too (count and bytes).
In-process (``GOGGLES_TRANSPORT=inprocess``) the same object is fed by a bus handler directly.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from goggles_io._api.state import get_settings, get_transport
from goggles_io._bus.bus import EventBus
from goggles_io._bus.transport import check_scope
from goggles_io._event.records import Event, Kind
from goggles_io._transport.subscription import Subscription

__all__ = ["Subscription", "subscribe"]

_ids = itertools.count(1)


class _InProcessSink:
    """Feeds a :class:`Subscription` from the in-process bus (no socket involved)."""

    level = 0
    backpressure = False
    remote_methods: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, name: str, subscription: Subscription) -> None:
        self.name = name
        self.subscription = subscription
        self.queue_size, self.queue_bytes = subscription.host_bounds
        kinds = subscription.kinds
        self.capabilities = frozenset(kinds) if kinds else frozenset(Kind)

    def handle_batch(self, events: list[Event]) -> None:
        self.subscription.deliver(events)

    def handle(self, event: Event) -> None:
        self.subscription.deliver([event])

    def can_handle(self, kind: Kind) -> bool:
        return kind in self.capabilities

    def open(self) -> None:
        """Nothing to acquire: the subscription's buffer is already there."""

    def flush(self) -> None:
        """Nothing buffered here: events go straight to the subscription."""

    def close(self) -> None:
        """The subscription outlives the sink; closing it is its owner's call."""

    def to_dict(self) -> dict[str, Any]:
        return {"cls": "goggles_io.subscriber", "data": {"name": self.name}}

    @classmethod
    def from_dict(cls, serialized: Mapping[str, Any]) -> _InProcessSink:
        """Never rebuilt from a spec: it holds a live subscription of this process."""
        msg = f"an in-process subscriber sink cannot be rebuilt from a spec (got {serialized!r})."
        raise TypeError(msg)


def subscribe(
    scopes: Sequence[str] | None = None,
    kinds: Sequence[Kind | str] | None = None,
    *,
    callback: Callable[[Event], Any] | None = None,
    max_events: int | None = None,
    max_bytes: int | None = None,
    host_max_events: int | None = None,
    host_max_bytes: int | None = None,
) -> Subscription:
    """Receive the live events of ``scopes`` (default ``["global"]``, children included).

    Args:
        scopes: scopes to receive, like a handler's; events of child scopes are included.
        kinds: only these kinds (e.g. ``["metric"]``); default every kind.
        callback: called with each event on the subscription's reader thread instead of
            buffering them for iteration. It must be quick: while it runs, events queue in
            the host, which drops (and counts) what does not fit.
        max_events / max_bytes: bound of the local buffer; default ``GOGGLES_QUEUE_SIZE`` /
            ``GOGGLES_QUEUE_BYTES``.
        host_max_events / host_max_bytes: bound of this subscriber's lane in the host (what
            may wait there while we do not read); default, and at most, the host's own
            ``GOGGLES_QUEUE_SIZE`` / ``GOGGLES_QUEUE_BYTES``.

    Returns:
        A :class:`Subscription`: iterate it, ``get(timeout)``, ``sync()``, ``close()``.

    Raises:
        InvalidNameError: a scope is malformed.
        ValueError: a kind is not one of :class:`~goggles_io.Kind`.
        ConnectionError: no host could be reached or started within 30 s.
    """
    settings = get_settings()
    chosen = ["global"] if scopes is None else [check_scope(s, wildcard=True) for s in scopes]
    sub = Subscription(
        chosen,
        None if kinds is None else [Kind(k) for k in kinds],
        callback,
        max_events=max_events or settings.queue_size,
        max_bytes=max_bytes or settings.queue_bytes,
    )
    sub.host_bounds = (host_max_events, host_max_bytes)
    attach_subscription(sub)
    return sub


def attach_subscription(sub: Subscription) -> None:
    """Connect ``sub`` to whatever transport this process uses."""
    transport = get_transport()
    if isinstance(transport, EventBus):
        name = f"goggles_io.subscriber.{os.getpid()}.{next(_ids)}"
        transport.attach(_InProcessSink(name, sub), sub.scopes)
        sub._inprocess = (transport, name)
        return
    connect = getattr(transport, "open_subscription", None)
    if connect is None:
        msg = f"this transport ({type(transport).__name__}) does not support subscriptions"
        raise ConnectionError(msg)
    connect(sub)
