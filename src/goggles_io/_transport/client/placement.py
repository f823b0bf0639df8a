"""Handler placement: a handler runs in the host when the host can build it, else right here.

The host rebuilds a handler from its spec by importing its class. A class defined in
``__main__`` (a script or a notebook), inside a function, or never registered cannot be
rebuilt there, so it runs in the process that attached it, on a local bus fed by a
subscription to the host: it receives every process's events for its scopes, exactly as a
host-side handler would. Nothing is pickled either way.
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING, Any

from goggles_io._bus.bus import EventBus
from goggles_io._bus.transport import FinishReport, HandlerStats
from goggles_io._event.rows import (
    Row,
    kind_of,
    logger_of,
    metric_names,
    pid_of,
    scope_of,
    step_of,
    timestamp_of,
)
from goggles_io.handlers.base import Handler, get_handler_class, handler_key

if TYPE_CHECKING:
    from goggles_io._transport.client.subscription import Subscription

__all__ = ["KeptCounter", "LocalHandlers", "runs_in_attaching_process"]


def _identity(row: Row) -> tuple[Any, ...]:
    """What tells one of this process's events from its others, here and after the host
    (which carries it on): kind, scope, logger, step, log time, and a metric's names."""
    return (kind_of(row), scope_of(row), logger_of(row), step_of(row), timestamp_of(row),
            metric_names(row))  # fmt: skip


def runs_in_attaching_process(handler: Handler) -> bool:
    """Return whether the host could not rebuild ``handler`` from its spec."""
    cls = type(handler)
    if cls.__module__ == "__main__" or "<locals>" in cls.__qualname__:
        return True
    try:
        spec = handler.to_dict()
        key = str(spec.get("cls")) if isinstance(spec, dict) else handler_key(cls)
        return get_handler_class(key) is not cls
    except Exception:
        return True


class KeptCounter:
    """Counts, per handler here, this process's events kept for later (given in logged order)
    that it never got: those after the last of ours the feed brought. Those up to it reached
    it through the host (it routes a batch as it reads it, and in order)."""

    def __init__(self, bus: EventBus | None, mark: tuple[Any, ...] | None) -> None:
        self.bus = bus
        self.mark = mark
        self.everything: dict[str, int] = {}  # in case the mark is not among them (acked)
        self.after: dict[str, int] = {}
        self.found = mark is None

    def add(self, rows: list[Row]) -> None:
        """Count the next ``rows`` kept for later."""
        if self.bus is None:
            return
        _add(self.everything, self.bus.routed_counts(rows))
        if self.found:
            _add(self.after, self.bus.routed_counts(rows))
            return
        for at, row in enumerate(rows):
            if _identity(row) == self.mark:
                self.found = True
                _add(self.after, self.bus.routed_counts(rows[at + 1 :]))
                return

    def result(self) -> dict[str, int]:
        """Per handler here: kept events it never got."""
        return {n: k for n, k in (self.after if self.found else self.everything).items() if k}


def _add(into: dict[str, int], counts: dict[str, int]) -> None:
    for name, n in counts.items():
        into[name] = into.get(name, 0) + n


class LocalHandlers:
    """The handlers that run in this process, and the subscription that feeds them."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.bus: EventBus | None = None
        self.sub: Subscription | None = None
        self.last_mine: tuple[Any, ...] | None = None  # the last event of ours the feed brought

    def _bus(self) -> EventBus:
        if self.bus is None:
            settings = self.client.settings
            self.bus = EventBus(
                async_mode=True,
                queue_size=settings.queue_size,
                queue_bytes=settings.queue_bytes,
                policy=settings.delivery,
            )
        return self.bus

    def attach(self, handler: Handler, scopes: list[str] | tuple[str, ...] | Any) -> None:
        """Run ``handler`` here; the subscription is open (and covers ``scopes``) on return."""
        self._bus().attach(handler, scopes)
        if self.sub is None:
            self._subscribe(list(scopes))
        else:
            self.sub.add_scopes(list(scopes))

    def _subscribe(self, scopes: list[str]) -> None:
        from goggles_io._transport.client.subscription import Subscription

        self._bus()  # made before the feed can bring anything
        settings = self.client.settings
        sub = Subscription(
            scopes,
            None,
            None,
            on_rows=self._feed,
            max_events=settings.queue_size,
            max_bytes=settings.queue_bytes,
        )
        sub.backpressure = True
        self.client.open_subscription(sub)
        self.sub = sub

    def _feed(self, rows: list[Row]) -> None:
        """The host's rows for the handlers here; the last of this process's own is noted
        (what came after it never reached them: :meth:`routed_after`)."""
        pid = os.getpid()
        for row in reversed(rows):
            if pid_of(row) == pid:
                self.last_mine = _identity(row)
                break
        bus = self.bus
        if bus is not None:
            bus.put_rows(rows)

    def kept_counter(self) -> KeptCounter:
        """A counter of what this process keeps for later that the handlers here never got."""
        return KeptCounter(self.bus, self.last_mine)

    def has_handler(self, name: str) -> bool:
        """Return whether ``name`` runs here."""
        return self.bus is not None and self.bus.has_handler(name)

    def detach(self, name: str, scope: str) -> None:
        """Detach a local handler (the subscription keeps its scopes; nothing else is routed)."""
        if self.bus is not None:
            self.bus.detach(name, scope)

    def resubscribe(self) -> None:
        """After ``finish()``, a later event re-opens the feed of the handlers kept here."""
        bus = self.bus
        if bus is None or self.sub is not None or not bus.handlers:
            return
        scopes = sorted(bus.scopes)
        if scopes:
            self._subscribe(scopes)

    def flush_fed(self, timeout_s: float | None) -> bool:
        """After the host flushed: wait until the feed and the local handlers caught up."""
        if self.sub is None or self.bus is None:
            return True
        return self.sub.sync(timeout_s) and self.bus.flush(timeout_s)

    def finish_fed(
        self, client: Any, timeout_s: float | None, *, wait_for_host: bool = True
    ) -> FinishReport:
        """Deliver everything routed here, close the local handlers and the feed.

        ``wait_for_host``: first wait until the host flushed what it had for us (not when the
        client's finish gave up on the host: the flush would wait behind what it never read).
        """
        if self.sub is None or self.bus is None:
            return FinishReport()
        if wait_for_host:
            client.flush(timeout_s)
        report = self.bus.finish(timeout_s)
        lost = self.sub.dropped
        self.sub.close()
        self.sub = None
        if not lost:
            return report
        handlers = {
            name: HandlerStats(s.delivered, s.dropped + lost, s.errors, s.losses)
            for name, s in report.handlers.items()
        }
        return FinishReport(handlers=handlers, timed_out=report.timed_out)

    def forget_after_fork(self) -> None:
        """In a forked child: drop the parent's local handlers and our copy of its feed socket."""
        sub, self.sub, self.bus = self.sub, None, None
        if sub is not None and sub._sock is not None:
            with contextlib.suppress(OSError):
                sub._sock.close()  # close only: a shutdown would cut the parent's connection
