"""The interface every bus implements, and what ``finish()`` reports.

:class:`Transport` is what the public functions need from a bus: the in-process
:class:`~goggles_io._bus.bus.EventBus` and the socket client both implement it (cf. httpx's
``_transports/base.py``: the interface in its own module, beside its implementations). Scope
matching lives here too, because every implementation routes the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from goggles_io._bus.feed import Subscriber
from goggles_io._delivery.losses import KEPT_FOR_LATER
from goggles_io._event.records import Event, ShmRef
from goggles_io._event.rows import Row
from goggles_io.exceptions import InvalidNameError
from goggles_io.handlers.base import Handler

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "ALL_SCOPES",
    "FinishReport",
    "HandlerStats",
    "Transport",
    "check_scope",
    "handler_losses",
    "scope_matches",
]


@attrs.frozen
class HandlerStats:
    """Delivery tally of one handler, reported by ``finish()``.

    Once the handler is finished, ``delivered + dropped + failed == logged`` exactly: every
    event routed to it was handed over, refused by its lane (``dropped``, of which
    ``not_in_time`` when finish gave up on it), or raised in it (``failed``). Of the delivered,
    the handler's own ``losses`` are what it then refused or could not write.
    """

    delivered: int = 0
    dropped: int = 0
    errors: int = 0
    losses: Mapping[str, int] = attrs.field(factory=dict)
    """The handler's own refusals and losses by reason (``BaseHandler.losses()``)."""
    failed: int = 0
    """Events the handler raised on (each also one of :attr:`errors`)."""
    logged: int | None = None
    """Events routed to the handler (``None``: a tally that does not know, the transport's)."""
    not_in_time: int = 0
    """Of :attr:`dropped`: still queued when finish gave up on the handler (it stalled)."""
    kept: int = 0
    """Not handled when finish gave up, and kept on disk for later by the producer (not lost,
    not in :attr:`dropped`): ``delivered + dropped + failed + kept == logged``."""

    @property
    def lost(self) -> int:
        """Total of :attr:`losses`: what the handler itself refused or could not write."""
        return sum(self.losses.values())

    @property
    def missing(self) -> int:
        """Events routed to the handler that did not reach its output: dropped, failed, lost."""
        return self.dropped + self.failed + self.lost

    def to_wire(self) -> list[Any]:
        """Plain builtins, by position, for the host's finish reply."""
        return [
            self.delivered,
            self.dropped,
            self.errors,
            dict(self.losses),
            self.failed,
            self.logged,
            self.not_in_time,
            self.kept,
        ]

    @classmethod
    def from_wire(cls, raw: Any) -> HandlerStats:
        """Read :meth:`to_wire`'s list back (an older host's shorter list too).

        Raises:
            TypeError, ValueError: ``raw`` is not such a list.
        """
        raw = list(raw) + [None] * (8 - len(raw))
        losses = raw[3] if isinstance(raw[3], dict) else {}
        return cls(
            delivered=int(raw[0]),
            dropped=int(raw[1]),
            errors=int(raw[2]),
            losses={str(k): int(v) for k, v in losses.items()},
            failed=int(raw[4] or 0),
            logged=None if raw[5] is None else int(raw[5]),
            not_in_time=int(raw[6] or 0),
            kept=int(raw[7] or 0),
        )

    def plus(self, other: HandlerStats) -> HandlerStats:
        """Both tallies together (a handler detached, then attached again under its name)."""
        losses = dict(self.losses)
        for reason, n in other.losses.items():
            losses[reason] = losses.get(reason, 0) + n
        logged = None if self.logged is None or other.logged is None else self.logged + other.logged
        return HandlerStats(
            delivered=self.delivered + other.delivered,
            dropped=self.dropped + other.dropped,
            errors=self.errors + other.errors,
            losses=losses,
            failed=self.failed + other.failed,
            logged=logged,
            not_in_time=self.not_in_time + other.not_in_time,
            kept=self.kept + other.kept,
        )

    def kept_for_later(self, most: int) -> HandlerStats:
        """This tally with what finish gave up on counted as :attr:`kept`, at most ``most``:
        the producer kept on disk every event the handler did not take (ADR 0030). That is
        what the lane counted ``not_in_time`` (moved out of :attr:`dropped`), and what it still
        held when asked (neither delivered, dropped nor failed)."""
        most = max(most, 0)
        moved = min(self.not_in_time, most)
        held = 0
        if self.logged is not None:
            held = self.logged - self.delivered - self.dropped - self.failed
            held = min(max(held, 0), most - moved)
        if not moved and not held:
            return self
        return attrs.evolve(
            self,
            dropped=self.dropped - moved,
            not_in_time=self.not_in_time - moved,
            kept=self.kept + moved + held,
        )


@attrs.frozen
class FinishReport:
    """What ``finish()`` delivered and dropped, per handler name, and this process's transport.

    ``transport`` is the socket client's own tally (events it could not hand to the host: queue
    full, spool full, unencodable, not delivered), so ``dropped`` counts every
    loss the user should hear of, wherever it happened.
    """

    handlers: Mapping[str, HandlerStats] = attrs.field(factory=dict)
    timed_out: bool = False
    transport: HandlerStats = attrs.field(factory=HandlerStats)
    elapsed_s: float = 0.0
    """How long finish waited for the handlers."""
    abandoned: bool = False
    """The wait was cut short (Ctrl-C, or an explicit ``timeout``) rather than stalled."""

    @property
    def dropped(self) -> int:
        """Total events dropped across handlers and this process's transport."""
        return sum(s.dropped for s in self.handlers.values()) + self.transport.dropped

    @property
    def lost(self) -> int:
        """Total the handlers themselves refused or could not write (their ``losses()``)."""
        return sum(s.lost for s in self.handlers.values())

    @property
    def missing(self) -> int:
        """Every event that did not reach its sink: each handler's dropped, failed and own
        losses, and what this process's transport could not hand over (``run.kv``'s ``lost``)."""
        return sum(s.missing for s in self.handlers.values()) + self.transport.dropped

    def summary(self) -> str:
        """One line: ``name: delivered/dropped/errors of logged`` (and its own losses) per handler."""
        parts = []
        for name, s in sorted(self.handlers.items()):
            part = f"{name}: {s.delivered} delivered, {s.dropped} dropped"
            if s.not_in_time:
                part += f" ({s.not_in_time} not handled in time)"
            part += f", {s.errors} errors"
            if s.failed:
                part += f" ({s.failed} events raised)"
            if s.kept:
                part += f", {s.kept} kept for later"
            if s.logged is not None:
                part += f" of {s.logged} {'that reached it' if s.kept else 'logged'}"
            if s.losses:
                own = ", ".join(f"{n} {reason}" for reason, n in sorted(s.losses.items()))
                part += f" (handler: {own})"
            parts.append(part)
        if self.transport.dropped:
            losses = sorted(self.transport.losses.items())
            why = ", ".join(f"{n} {r}" for r, n in losses if r != KEPT_FOR_LATER)
            parts.append(f"transport: {self.transport.dropped} dropped ({why})")
        line = "; ".join(parts) or "no handlers"
        return f"lost {self.missing} events: {line}" if self.missing else line


class Transport(Protocol):
    """Everything the public functions use of a bus (ADR 0071): the in-process
    :class:`~goggles_io._bus.bus.EventBus` and the socket client implement all of it, so no
    caller looks a method up with ``getattr``.

    Every method takes effect before it returns (events emitted afterwards see the new routing).
    ``emit`` and ``put_row`` must never block on a slow consumer beyond the delivery policy and
    never raise for environment failures.
    """

    @property
    def is_host(self) -> bool:
        """Whether the handlers run in this process (robo-goggles' ``get_bus().is_host``)."""

    def attach(self, handler: Handler, scopes: Sequence[str]) -> None:
        """Route ``scopes`` to ``handler`` (first registration of a name wins)."""

    def detach(self, name: str, scope: str, *, missing_ok: bool = False) -> None:
        """Stop routing ``scope`` to handler ``name`` (a name not attached: an error unless
        ``missing_ok``)."""

    def replace(self, handler: Handler, scopes: Sequence[str], *, enable: bool) -> None:
        """Last-wins replacement (``configure``)."""

    def emit(self, event: Event) -> None:
        """Offer an :class:`Event` someone built (robo-goggles' ``get_bus().emit``)."""

    def put_row(self, row: Row, nbytes: int) -> bool:
        """Offer a log call's row (:mod:`~goggles_io._event.rows`) of ``nbytes`` against the
        budgets; ``False`` when it was dropped (counted): a staged array in it is then the
        caller's to give back (:meth:`release_staged`)."""

    def put_scalar(self, row: Row, nbytes: int) -> bool:
        """:meth:`put_row` of a one-value metric's row (``logger.scalar``'s): a socket client
        gathers these end to end before its pipe (ADR 0088)."""

    def stage_array(self, array: np.ndarray) -> ShmRef | None:
        """Copy a big array into shared memory at the log call, or ``None`` (kept inline)."""

    def release_staged(self, ref: ShmRef) -> None:
        """Give back a slot :meth:`stage_array` took whose row was dropped."""

    def call(self, name: str, method: str, payload: Any) -> None:
        """Run ``method(payload)`` on handler ``name``, after the events before it."""

    def has_handler(self, name: str) -> bool:
        """Whether this process attached a handler named ``name``."""

    def open_subscription(self, sub: Subscriber) -> None:
        """Feed a live subscription from this bus (or its host)."""

    def flush(self, timeout_s: float | None = None) -> bool:
        """Wait until the handlers took everything so far."""

    def finish(self, timeout_s: float | None = None) -> FinishReport:
        """Deliver, flush and close every handler; the tally."""

    def release(self, timeout_s: float | None = None) -> FinishReport:
        """``finish(wait_for_host=False)``: hand everything over and leave."""

    def after_fork_in_child(self) -> None:
        """Start afresh in a forked child."""


ALL_SCOPES = "*"
"""A handler (or subscription) scope that every event reaches, whatever its scope."""


def check_scope(scope: object, *, wildcard: bool = False) -> str:
    """Validate a scope name: non-empty str of non-empty dot-separated parts.

    With ``wildcard`` (attaching a handler or subscribing), ``"*"`` means every scope.
    """
    if wildcard and scope == ALL_SCOPES:
        return ALL_SCOPES
    if not isinstance(scope, str) or not scope or "" in scope.split("."):
        msg = (
            f"scope must be a non-empty str of dot-separated names such as 'global' or "
            f"'global.eval' (got {scope!r})."
        )
        raise InvalidNameError(msg, name=scope)
    return scope


def scope_matches(event_scope: str, handler_scope: str) -> bool:
    """Return whether an event in ``event_scope`` reaches a handler on ``handler_scope``."""
    return (
        event_scope == handler_scope
        or event_scope.startswith(handler_scope + ".")
        or handler_scope == ALL_SCOPES
    )


def handler_losses(handler: object) -> dict[str, int]:
    """``handler.losses()`` as ``{reason: count > 0}``; ``{}`` when absent, broken or malformed."""
    method = getattr(handler, "losses", None)
    if not callable(method):
        return {}
    try:
        found = method()
        return {str(k): int(v) for k, v in dict(found).items() if int(v) > 0}
    except Exception:  # a diagnostics hook must never break finish()
        return {}
