"""The in-process event bus: scope routing to one lane per handler, first registration wins.

Over 400 lines, one piece: the Transport Protocol's in-process side, every method on one object
reading the same routing state (lanes by scope).

A handler on scope ``S`` gets events of ``S`` or ``S.*`` (not ``SA``) whose kind is in its
``capabilities`` and, for ``LOG``, whose level is >= its ``level``. Names are bus-wide: a
differing later registration is ignored with one warning, its scopes merged. Routes are cached
per scope and the cache replaced (never mutated) on attach/detach: the hot path takes no lock.
"""

from __future__ import annotations

import itertools
import math
import operator
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from goggles_io._bus.closing import close_in_parallel
from goggles_io._bus.conflict import warn_conflict
from goggles_io._bus.feed import Subscriber, SubscriptionSink
from goggles_io._bus.items import HandlerCall, Ticket
from goggles_io._bus.lane import Lane
from goggles_io._bus.transport import FinishReport, HandlerStats, check_scope, scope_matches
from goggles_io._bus.unrouted import Unrouted
from goggles_io._delivery.drain import read_finish_stall
from goggles_io._delivery.policy import DeliveryPolicy, WhenFull, read_delivery_policy
from goggles_io._event.records import Event, Kind, ShmRef
from goggles_io._event.rows import (
    Row,
    kind_of,
    level_of,
    nbytes,
    row_of,
    rows_nbytes,
    scope_of,
)
from goggles_io._util.report import report
from goggles_io.exceptions import UnknownHandlerError, UnknownScopeError
from goggles_io.handlers.base import Handler, check_remote_method, handler_from_dict

__all__ = ["EventBus"]

_SUBSCRIBERS = itertools.count(1)
_scope_and_kind = operator.itemgetter(1, 0)  # a row's (scope, kind), in C
_LOG = Kind.LOG.value
_METRIC = Kind.METRIC.value


class EventBus:
    """Route events to handlers in this process, each through its own :class:`Lane`.

    ``gg.EventBus()`` built directly emits synchronously, as robo-goggles 0.3.6's; the buses
    ``get_bus()`` and the socket host make pass ``async_mode`` (on by default: a thread per lane;
    ADR 0068).
    """

    is_host = True  # robo-goggles' ``get_bus().is_host``: the handlers run in this process

    def __init__(
        self,
        *,
        async_mode: bool = False,
        queue_size: int = 65_536,
        queue_bytes: int = 16 * 1024 * 1024,
        policy: DeliveryPolicy | None = None,
        stall_s: float | None = None,
    ) -> None:
        self.async_mode = async_mode
        # finish() and flush() give up on a handler after this long without progress
        self.stall_s = read_finish_stall() if stall_s is None else stall_s
        self.queue_size = queue_size
        self.queue_bytes = queue_bytes
        self.policy = policy or read_delivery_policy()
        self._lock = threading.RLock()
        self._lanes: dict[str, Lane] = {}
        # a scope's lanes, and (scope, kind)'s for rows; emptied whenever the lanes change
        self._routes: dict[str | tuple[str, str], tuple[Lane, ...]] = {}
        # (scope, kind) -> the one lane's row putter, when a row of it goes to one async lane
        # whatever its level: put_row's hot path (ADR 0076). Emptied with the routes and
        # whenever a lane's pipe changes (finish, re-open, fork).
        self._putters: dict[tuple[str, str], Callable[[Row, int], bool]] = {}
        # Per scope, the scalar front of the one asynchronous lane its metrics go to (ADR 0088);
        # emptied with the row putters.
        self._scalar_putters: dict[str, Callable[[Row, int], bool]] = {}
        self._finished = False
        self._warned: set[tuple[str, str]] = set()
        self._retired: dict[str, HandlerStats] = {}  # detached since the last finish
        self.producers_keep = False  # set by the socket host (see _lane_policy)
        self.unrouted = Unrouted(lambda: self.scopes)  # events no handler's scope reaches

    # -- configuration ----------------------------------------------------------------------
    def attach(
        self,
        handlers: Handler | Mapping[str, Any] | Sequence[Handler | Mapping[str, Any]],
        scopes: Sequence[str] = ("global",),
    ) -> None:
        """Register ``handlers`` on ``scopes``; first registration of a name wins.

        Takes one handler, or robo-goggles' form: a list of handlers or of their ``to_dict()``
        specs (rebuilt through :func:`~goggles_io.register_handler`'s registry).
        """
        handler = handlers
        if isinstance(handler, Mapping):
            handler = handler_from_dict(handler)
        elif isinstance(handler, Sequence) and not isinstance(handler, str):
            for each in handler:
                self.attach(each, scopes)
            return
        scopes = [check_scope(s, wildcard=True) for s in scopes]
        with self._lock:
            self._reopen_locked()
            lane = self._lanes.get(handler.name)
            if lane is None:
                lane = Lane(
                    handler,
                    async_mode=self.async_mode,
                    # A handler may ask for tighter bounds (a subscriber's lane), never looser.
                    queue_size=min(
                        self.queue_size, getattr(handler, "queue_size", None) or self.queue_size
                    ),
                    queue_bytes=min(
                        self.queue_bytes, getattr(handler, "queue_bytes", None) or self.queue_bytes
                    ),
                    backpressure=getattr(handler, "backpressure", True),
                    policy=self._lane_policy(handler),
                    stall_s=self.stall_s,
                )
                lane.start()
                self._lanes[handler.name] = lane
            elif lane.handler is not handler:
                warn_conflict(lane.handler, handler, self._warned)
            lane.scopes.update(scopes)
            self._forget_routes()

    def _lane_policy(self, handler: Handler) -> DeliveryPolicy:
        """In the socket host, producers keep each batch until its handlers took it: a lane
        the host waits for never spills nor drops; live subscribers' lanes do (ADR 0030)."""
        keep = self.producers_keep and self.policy.when_full is not WhenFull.DROP
        if keep and getattr(handler, "backpressure", True):  # wait as long as it takes
            return attrs.evolve(self.policy, when_full=WhenFull.BLOCK, block_timeout_s=math.inf)
        return self.policy

    def detach(self, handler_name: str, scope: str, *, missing_ok: bool = False) -> None:
        """Remove ``handler_name`` from ``scope``; with no scope left it is flushed, closed,
        forgotten.

        Raises:
            UnknownScopeError: ``name`` is not on ``scope``, or not attached unless ``missing_ok``
                (a ``ValueError``, as in robo-goggles 0.3.6; ``gg.detach`` passes ``missing_ok``).
        """
        name = handler_name
        with self._lock:
            lane = self._lanes.get(name)
            if lane is None:
                if missing_ok:
                    return
                msg = f"handler {name!r} is not attached (on scope {scope!r} or any other)."
                raise UnknownScopeError(msg, name=name, scope=scope)
            if scope not in lane.scopes:
                msg = (
                    f"handler {name!r} is not attached on scope {scope!r} "
                    f"(its scopes: {sorted(lane.scopes)!r})."
                )
                raise UnknownScopeError(msg, name=name, scope=scope)
            lane.scopes.discard(scope)
            self._forget_routes()
            if not lane.scopes:
                del self._lanes[name]
                lane.close(None)
                self._retire(lane)

    def replace(self, handler: Handler, scopes: Sequence[str], *, enable: bool) -> None:
        """Last-wins setup used by ``configure``: drop ``handler.name`` from ``scopes``, re-add.

        The new instance also takes over any other scopes the old one kept, since the name is
        a bus-wide identity.
        """
        scopes = [check_scope(s, wildcard=True) for s in scopes]
        with self._lock:
            old = self._lanes.pop(handler.name, None)
            remaining: set[str] = set()
            if old is not None:
                remaining = old.scopes - set(scopes)
                old.close(None)
                self._retire(old)
            self._forget_routes()
            new_scopes = remaining | (set(scopes) if enable else set())
            if new_scopes:
                self.attach(handler, sorted(new_scopes))

    # -- hot path ---------------------------------------------------------------------------
    def emit(self, event: Event | Mapping[str, Any]) -> None:
        """Offer ``event`` to every lane whose scope, kind and level match. A synchronous bus
        hands that same object to each handler before ``emit`` returns (ADR 0068); lanes with a
        thread each get its row. A mapping is read with :meth:`Event.from_dict` (robo-goggles'
        bus takes dicts); anything else: ``TypeError``.
        """
        if event.__class__ is not Event:
            if isinstance(event, Mapping):
                event = Event.from_dict(event)
            elif not isinstance(event, Event):
                msg = f"emit takes an Event or a mapping (got {event!r}, a {type(event).__name__})."
                raise TypeError(msg)
        if event.kind.__class__ is not Kind:  # Event(kind="image", ...) as robo-goggles writes it
            event = attrs.evolve(event, kind=Kind(event.kind))
        lanes = self._lanes_for(event.scope, event.kind, event.level)
        if not lanes:
            return
        if self.async_mode:
            row = row_of(event)
            size = nbytes(row)
            for lane in lanes:
                lane.offer(row, size)
        else:
            for lane in lanes:
                lane.hand(event)

    def put_row(self, row: Row, nbytes: int) -> bool:
        """Offer a log call's row (``nbytes`` against each lane's budget) to every lane whose
        scope, kind and level match: no :class:`Event` on the caller's thread, each lane builds
        its handler's own at its doorstep. Always ``True``: a lane counts what it drops.

        A (scope, kind) that one asynchronous lane takes whatever the level goes straight to
        that lane's pipe (a cached ``put_one``: one frame after this one, ADR 0076)."""
        put = self._putters.get(_scope_and_kind(row))
        if put is not None:
            put(row, nbytes)
            return True
        return self._put_row_routed(row, nbytes)

    def put_scalar(self, row: Row, nbytes: int) -> bool:
        """:meth:`put_row` of a one-value metric's row: where one asynchronous lane takes the
        scope's metrics, into that lane's scalar front (ADR 0088), cached like a row putter."""
        put = self._scalar_putters.get(scope_of(row))
        if put is not None:
            return put(row, nbytes)
        return self.put_row(row, nbytes)

    def _put_row_routed(self, row: Row, nbytes: int) -> bool:
        """:meth:`put_row` through the routes (re-opening a finished bus, saying an unrouted
        scope once, filtering by level), caching the route's putter when it has one."""
        if self._finished:
            self._reopen()
        key = _scope_and_kind(row)
        lanes = self._routes.get(key)  # the lanes of a (scope, kind), cached beside scopes'
        if lanes is None:
            lanes = self._resolve_kind(key)
        if not lanes and self._lanes and not self._routes.get(key[0]):
            self.unrouted(key[0])
        level = level_of(row)
        for lane in lanes:
            if level is None or level >= lane.level:
                lane.offer(row, nbytes)
        if len(lanes) == 1 and (key[1] != _LOG or lanes[0].level <= 0):
            self._cache_putter(key, lanes[0])
        return True

    def _cache_putter(self, key: tuple[str, str], lane: Lane) -> None:
        """Remember ``lane``'s row putter for ``key``, unless the routes changed meanwhile.

        Only a ``LOG`` row carries a level (the loggers' rows, put_row's only callers), so a
        route of another kind, or to a lane of level 0, needs no level check."""
        put = lane.row_putter()
        if put is None:  # a synchronous lane (or one not open): the routed way each time
            return
        with self._lock:
            if not self._finished and self._routes.get(key) == (lane,) and lane.row_putter() == put:
                self._putters[key] = put
                scalar = lane.scalar_putter()
                if key[1] == _METRIC and scalar is not None:
                    self._scalar_putters[key[0]] = scalar

    def stage_array(self, array: Any) -> ShmRef | None:
        """In-process, arrays are never staged: the log call's copy is the handlers' (``None``)."""
        return None

    def release_staged(self, ref: ShmRef) -> None:
        """Nothing is ever staged here (see :meth:`stage_array`)."""

    def open_subscription(self, sub: Subscriber) -> None:
        """Feed ``sub`` from this bus: a lane of its own, bounded, never slowing the others."""
        name = f"goggles_io.subscriber.{os.getpid()}.{next(_SUBSCRIBERS)}"
        self.attach(SubscriptionSink(name, sub), sub.scopes)
        sub.fed_by(self, name)

    def _lanes_for(self, scope: str, kind: str, level: int | None) -> list[Lane]:
        """The lanes an event of ``scope``, ``kind`` and ``level`` goes to (re-opening a
        finished bus; an event no lane's scope reaches said once)."""
        if self._finished:
            self._reopen()
        lanes = self._routes.get(scope)
        if lanes is None:
            lanes = self._resolve(scope)
        if not lanes and self._lanes:
            self.unrouted(scope)
        return [
            lane for lane in lanes if kind in lane.kinds and (level is None or level >= lane.level)
        ]

    def put_rows(
        self,
        rows: list[Row],
        *,
        ticket: Ticket | None = None,
        redelivered: bool = False,
        frame: bytes | memoryview | None = None,
    ) -> int:
        """Route a whole batch of rows (the socket host's path): each lane gets one list.

        ``ticket`` follows the lists through every lane that got one and takes part in the
        host's backpressure (not a live subscriber's), so the host can acknowledge the batch
        once those handlers took it (ADR 0030). ``frame``: the client message the rows were
        decoded from, told to a handler that can send it on as it came (``note_frame``: the
        broker forwarder, ADR 0079) when its lane gets every row. Returns the number of
        (row, handler) deliveries dropped for want of queue room.
        """
        if self._finished:
            self._reopen()
        per_lane = self._uniform_routes(rows)
        if per_lane is None:
            per_lane = self._routes_per_row(rows)
        dropped = 0
        for lane, batch in per_lane.items():
            n = len(batch)
            if frame is not None and n == len(rows):
                note = getattr(lane.handler, "note_frame", None)
                if note is not None:
                    note(batch, frame)
            refused = lane.offer_rows(batch, rows_nbytes(batch), redelivered=redelivered)
            dropped += refused
            if ticket is not None and lane.backpressure:
                lane.offer_control(ticket)
                if n > refused:  # what the handler takes of it, once the ticket settles
                    ticket.taken[lane.name] = n - refused
        return dropped

    def hand_events(self, events: list[Event], scope: str, kind: str, level: int | None) -> None:
        """Offer ``events``, which all share ``scope``, ``kind`` and ``level`` (a broker read,
        ADR 0086), to every lane they match: one list to each, a synchronous lane's handler
        called once with them (the same objects for every handler, as :meth:`emit`'s)."""
        if not events:
            return
        if self._finished:
            self._reopen()
        found = self._routes.get(scope)
        lanes = self._resolve(scope) if found is None else found
        if not lanes and self._lanes:
            self.unrouted(scope, len(events))
        for lane in lanes:
            if kind in lane.kinds and (level is None or level >= lane.level):
                lane.offer_events(events)

    def _uniform_routes(self, rows: list[Row]) -> dict[Lane, list[Row]] | None:
        """Each lane's list when every row shares scope, kind and level (a client batch from
        one logger, the common case): routed once, not per row; ``None`` otherwise."""
        if not rows:
            return {}
        first = rows[0]
        scope, kind, level = scope_of(first), kind_of(first), level_of(first)
        n = len(rows)
        if (
            list(map(scope_of, rows)).count(scope) != n
            or list(map(kind_of, rows)).count(kind) != n
            or list(map(level_of, rows)).count(level) != n
        ):
            return None
        found = self._routes.get(scope)
        lanes = self._resolve(scope) if found is None else found
        if not lanes and self._lanes:
            self.unrouted(scope, n)
        per_lane: dict[Lane, list[Row]] = {}
        for lane in lanes:
            if kind in lane.kinds and (level is None or level >= lane.level):
                per_lane[lane] = list(rows)  # each lane owns its list
        return per_lane

    def _routes_per_row(self, rows: list[Row]) -> dict[Lane, list[Row]]:
        """Each lane's list, row by row (a batch mixing scopes, kinds or levels)."""
        routes = self._routes
        per_lane: dict[Lane, list[Row]] = {}
        last_scope: str | None = None
        lanes: tuple[Lane, ...] = ()
        for row in rows:
            scope = scope_of(row)
            if scope != last_scope:
                found = routes.get(scope)
                lanes = self._resolve(scope) if found is None else found
                last_scope = scope
            if not lanes and self._lanes:
                self.unrouted(scope)
            level = level_of(row)
            kind = kind_of(row)
            for lane in lanes:
                if kind in lane.kinds and (level is None or level >= lane.level):
                    batch = per_lane.get(lane)
                    if batch is None:
                        per_lane[lane] = [row]
                    else:
                        batch.append(row)
        return per_lane

    def routed_counts(self, rows: list[Row]) -> dict[str, int]:
        """How many of ``rows`` each handler would be given; nothing is offered or counted
        (the socket client's count of the events it keeps for later that its in-process
        handlers will never get)."""
        found: dict[str, int] = {}
        for row in rows:
            scope, kind, level = scope_of(row), kind_of(row), level_of(row)
            lanes = self._routes.get(scope)
            if lanes is None:
                lanes = self._resolve(scope)
            for lane in lanes:
                if kind in lane.kinds and (level is None or level >= lane.level):
                    found[lane.name] = found.get(lane.name, 0) + 1
        return found

    def forget_finished(self, names: set[str]) -> None:
        """Forget the handlers ``names`` once :meth:`finish` closed them: a later attach under
        one of those names makes a new handler (the socket host, when its last producer
        finished: that run's handlers end with it, ADR 0060). Their tally was reported."""
        with self._lock:
            if not self._finished:
                return
            for name in names:
                self._lanes.pop(name, None)
            self._forget_routes()

    def call(self, name: str, method: str, payload: Any) -> None:
        """Run ``method(payload)`` on the handler attached as ``name``, in its lane's order.

        Raises:
            UnknownHandlerError: no handler ``name`` is attached.
            MethodNotAllowedError: ``method`` is not in that handler class's ``remote_methods``.
        """
        if self._finished:
            self._reopen()
        lane = self._lanes.get(name)
        if lane is None:
            msg = (
                f"no handler named {name!r} is attached (attached: {sorted(self._lanes)!r}); "
                "attach it first, or call the method on the handler object directly."
            )
            raise UnknownHandlerError(msg, name=name)
        check_remote_method(type(lane.handler), method)
        lane.offer_control(HandlerCall(method, payload))

    def has_handler(self, name: str) -> bool:
        """Return whether a handler named ``name`` is attached."""
        return name in self._lanes

    def _resolve(self, scope: str) -> tuple[Lane, ...]:
        with self._lock:
            lanes = tuple(
                lane
                for lane in self._lanes.values()
                if any(scope_matches(scope, s) for s in lane.scopes)
            )
            self._routes[scope] = lanes
            return lanes

    def _resolve_kind(self, key: tuple[str, str]) -> tuple[Lane, ...]:
        """The lanes of ``key``'s scope whose handler takes its kind (cached like scopes)."""
        scope, kind = key
        by_scope = self._routes.get(scope)
        if by_scope is None:
            by_scope = self._resolve(scope)
        with self._lock:
            lanes = tuple(lane for lane in by_scope if kind in lane.kinds)
            self._routes[key] = lanes
            return lanes

    # -- shutdown ---------------------------------------------------------------------------
    def flush(self, timeout_s: float | None = None, *, stall_s: float | None = None) -> bool:
        """Wait until everything emitted so far was handled; ``False`` if a handler stalled
        (as in :meth:`finish`) or ``timeout_s`` ran out."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        ok = True
        for lane in list(self._lanes.values()):
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            ok = lane.flush(left, stall_s=lane.patience(stall_s)) and ok
            if lane.last_wait is not None and lane.last_wait.abandoned:
                stall_s = 0.0  # Ctrl-C (or the time ran out): do not wait for the others
        return ok

    def finish(
        self, timeout_s: float | None = None, *, stall_s: float | None = None
    ) -> FinishReport:
        """Deliver, flush and close every handler; keep them registered for a later re-open.

        Waits as long as the handlers make progress, with a line on stderr every few seconds
        when it is long; a handler that takes nothing for ``stall_s`` seconds (default
        ``GOGGLES_FINISH_STALL``) is given up and what it did not take is counted as lost.
        ``timeout_s``, when given, also bounds the whole wait; Ctrl-C abandons it at once.
        """
        start = time.monotonic()
        deadline = None if timeout_s is None else start + timeout_s
        ok, abandoned = True, False
        with self._lock:
            if not self._finished:
                self._putters = {}  # rows take the routed way while the lanes close
                self._scalar_putters = {}
                for lane in self._lanes.values():
                    left = None if deadline is None else max(0.0, deadline - time.monotonic())
                    patience = 0.0 if abandoned else lane.patience(stall_s)
                    ok = lane.close(left, stall_s=patience) and ok
                    wait = lane.last_wait
                    abandoned = abandoned or (wait is not None and wait.abandoned)
                self._finished = True
            handlers, self._retired = self.stats(), {}
            result = FinishReport(
                handlers=handlers,
                timed_out=not ok,
                elapsed_s=time.monotonic() - start,
                abandoned=abandoned,
            )
        if result.missing or not ok:
            report(f"finish: {result.summary()}")
        elif result.elapsed_s >= 5.0:  # a long wait printed progress: say how it ended
            report(f"finish: everything delivered in {result.elapsed_s:.1f} s")
        return result

    def release(self, timeout_s: float | None = None) -> FinishReport:
        """``finish(wait_for_host=False)``: in-process the handlers live here, so it finishes."""
        return self.finish(timeout_s)

    def shutdown(self, timeout: float | None = None) -> None:
        """robo-goggles' shutdown: every handler closed at once (``closing.py``), forgotten."""
        with self._lock:
            lanes, self._lanes = list(self._lanes.values()), {}
            self._forget_routes()
            closed, self._finished = self._finished, False
        close_in_parallel([] if closed else lanes, timeout)  # finish() closed them already
        with self._lock:
            for lane in lanes:
                self._retire(lane)

    def _forget_routes(self) -> None:
        """The lanes changed: every cached route and putter is stale (under the lock)."""
        self._routes = {}
        self._putters = {}
        self._scalar_putters = {}

    def _reopen(self) -> None:
        with self._lock:
            self._reopen_locked()

    def _reopen_locked(self) -> None:
        self._putters = {}  # the lanes' pipes are new
        self._scalar_putters = {}
        if self._finished:
            for lane in self._lanes.values():
                lane.start()
            self._finished = False

    def after_fork_in_child(self) -> None:
        """Rebuild locks and worker threads, which a fork does not carry over."""
        self._lock = threading.RLock()
        self._putters = {}
        self._scalar_putters = {}
        if not self._finished:
            for lane in self._lanes.values():
                lane.restart_after_fork()

    # -- introspection ----------------------------------------------------------------------
    @property
    def handlers(self) -> dict[str, Handler]:
        """A snapshot of ``name -> handler`` for every attached handler."""
        with self._lock:
            return {n: lane.handler for n, lane in self._lanes.items()}

    @property
    def scopes(self) -> dict[str, set[str]]:
        """A snapshot of ``scope -> names of the handlers attached on it``."""
        found: dict[str, set[str]] = {}
        with self._lock:
            for name, lane in self._lanes.items():
                for scope in lane.scopes:
                    found.setdefault(scope, set()).add(name)
        return found

    def congested(self, room: int) -> bool:
        """Whether a handler lane is within ``room`` events of full and cannot spill (the socket
        host then stops reading producers for a while); subscriber lanes never count."""
        return any(lane.congested(room) for lane in list(self._lanes.values()))

    def backlog(self) -> int:
        """Return the longest handler queue now (the socket host stops reading when it nears
        full); live subscribers' lanes left out: a stalled reader never slows the others."""
        return max(
            (lane.backlog() for lane in list(self._lanes.values()) if lane.backpressure),
            default=0,
        )

    def backlog_bytes(self) -> int:
        """Return the most bytes queued in one handler lane now (subscriber lanes left out)."""
        return max(
            (lane.backlog_bytes() for lane in list(self._lanes.values()) if lane.backpressure),
            default=0,
        )

    def dropped_count(self, name: str) -> int:
        """Events dropped so far for handler ``name`` (0 when it is not attached)."""
        lane = self._lanes.get(name)
        return 0 if lane is None else lane.dropped

    def flush_handler(self, name: str, timeout_s: float | None = None) -> bool:
        """Wait until handler ``name`` took everything offered to it so far (``True`` if absent)."""
        lane = self._lanes.get(name)
        return True if lane is None else lane.flush(timeout_s)

    def forget(self, name: str) -> None:
        """Detach ``name`` from every scope and close it (a subscriber whose reader left)."""
        with self._lock:
            lane = self._lanes.pop(name, None)
            self._forget_routes()
        if lane is not None:
            lane.close(1.0)

    def stats(self) -> dict[str, HandlerStats]:
        """Return the delivery tally per handler name (those detached since the last finish too:
        a run's sinks detached before ``finish()`` are still in its report)."""
        found = dict(self._retired)
        for name, lane in list(self._lanes.items()):
            found[name] = found[name].plus(lane.stats()) if name in found else lane.stats()
        return found

    def _retire(self, lane: Lane) -> None:
        old = self._retired.get(lane.name)
        self._retired[lane.name] = lane.stats() if old is None else old.plus(lane.stats())
