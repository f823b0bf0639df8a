"""``gg.subscribe``: any process on the machine reads the live event stream.

A :class:`Subscription` is an iterator of :class:`~goggles_io.Event` (or, with ``callback=``, a
function called on its reader thread). With the socket transport it opens its own connection to
the host, which routes the requested scopes and kinds to it through a bounded lane of its own:
a subscriber that reads slowly loses events there (counted in :attr:`Subscription.dropped`),
never slowing producers or handlers. The local buffer is bounded too (count and bytes).
In-process (``GOGGLES_TRANSPORT=inprocess``) the same object is fed by a bus handler directly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from goggles_io._api.state import get_settings, get_transport
from goggles_io._bus.transport import check_scope
from goggles_io._event.records import Event, Kind
from goggles_io._transport.client.subscription import Subscription

__all__ = ["Subscription", "subscribe"]


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
    get_transport().open_subscription(sub)
