"""The producer side of the socket transport: a delivery pipe to the one host on a socket path.

Over 400 lines, one piece: the Transport a process gets, every method of the Protocol on one
object; its courier, link, pools, operations, placement and left-overs are collaborators in
files of their own.

``emit`` puts the event in the client's :class:`~goggles_io._delivery.pipe.Pipe` (memory, then
its spool, then a bounded wait, then a counted drop: ADR 0025), so the application does not wait
on the host. The pipe's worker hands batches to the :class:`Courier`, which frames them onto the
:class:`HostLink` (connecting, electing or spawning a host when none answers). A batch is kept
until the host says its handlers took it, and sent again to the next host if this one dies
(ADR 0030). Handler operations travel in the same pipe, in order with the events. After ``fork``
the child starts afresh with its own pipe, connection and pools. ``docs/transport.md`` has the
knobs.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from goggles_io._bus.front import ScalarFront, run_extra
from goggles_io._bus.settings import Settings
from goggles_io._bus.transport import FinishReport, HandlerStats
from goggles_io._delivery.drain import read_finish_stall, wait_while_progressing
from goggles_io._delivery.losses import KEPT_FOR_LATER, NOT_DELIVERED, UNENCODABLE, LossReport
from goggles_io._delivery.pipe import Pipe
from goggles_io._event.messages import REPLAYED, Call
from goggles_io._event.records import Event, ShmRef
from goggles_io._event.rows import Row, count_rows, nbytes, row_of
from goggles_io._transport.client.courier import Courier, Item
from goggles_io._transport.client.leftovers import Leftovers
from goggles_io._transport.client.link import HostLink
from goggles_io._transport.client.loading import loading_modules
from goggles_io._transport.client.operations import HandlerOperations, Marker
from goggles_io._transport.client.placement import LocalHandlers
from goggles_io._transport.client.pools import ArrayPools
from goggles_io._transport.settings import (
    SUBSCRIBER_PREFIX,
    TransportSettings,
    default_socket_path,
    prepare_socket_dir,
)
from goggles_io._util.report import report
from goggles_io.handlers.base import Handler

if TYPE_CHECKING:
    from goggles_io._delivery.policy import DeliveryPolicy
    from goggles_io._delivery.spool import SpoolRecord
    from goggles_io._event.spilled import SpillEncoder
    from goggles_io._transport.client.election import HostElector

__all__ = ["SocketClient", "client_pipe"]

_BATCH_EVENTS = 1024
_BATCH_BYTES = 1024 * 1024  # a batch's events: also its frame and spool record (ADR 0063)
_LAST_WORD_S = 2.0  # how long a finish that gave up still waits for the host's tally


class _SpillCodec:
    """Rows as spool records; a handler operation never spills (its waiter holds it)."""

    def __init__(self) -> None:
        self._encoder: SpillEncoder | None = None  # made on the first spill (numpy, msgpack)

    def encode(self, items: list[Item]) -> tuple[bytes, Sequence[Any]]:
        if any(type(item) is Marker for item in items):
            raise TypeError("handler operations stay in memory")
        if self._encoder is None:
            from goggles_io._event.spilled import SpillEncoder

            self._encoder = SpillEncoder()
        return self._encoder.encode(items)  # type: ignore[arg-type]

    def decode(self, record: SpoolRecord) -> list[Item]:
        from goggles_io._event.spilled import decode_spilled

        return list(decode_spilled(record))


def client_pipe(
    send: Callable[[int, list[Item], bool], object],
    policy: DeliveryPolicy,
    max_items: int,
    max_bytes: int,
) -> Pipe[Item]:
    """The client's pipe to the host: rows count one, handler operations none (put forced:
    they stay in memory); batches wait for the host's acknowledgement. A function so the
    engine's tests build the pipe exactly as the client does."""
    return Pipe(
        send,
        label="client",  # names its spool folder; its stderr lines say whose transport
        policy=policy,
        on_loss=LossReport(f"pid {os.getpid()}: transport"),
        max_items=max_items,
        max_bytes=max_bytes,
        batch_items=_BATCH_EVENTS,
        batch_bytes=_BATCH_BYTES,
        codec=_SpillCodec(),
        units=count_rows,
        run_extra=run_extra,
        name="goggles_io:sender",
    )


def _not_in_time(stats: HandlerStats, n: int) -> HandlerStats:
    """``stats`` with ``n`` more events routed to the handler and never handled: kept for
    later for the host's handlers, they are lost to one that runs in this process."""
    logged = None if stats.logged is None else stats.logged + n
    return attrs.evolve(
        stats, dropped=stats.dropped + n, not_in_time=stats.not_in_time + n, logged=logged
    )


class SocketClient:
    """A :class:`~goggles_io._bus.transport.Transport` that forwards to the one host on a socket path.

    Env: ``GOGGLES_SOCKET``, ``GOGGLES_SHM_THRESHOLD``, ``GOGGLES_DEDICATED_HOST``,
    ``GOGGLES_HOST_IDLE_TIMEOUT``, ``GOGGLES_HOST_LOG``, plus ``GOGGLES_QUEUE_SIZE``,
    ``GOGGLES_QUEUE_BYTES``, ``GOGGLES_ASYNC``, ``GOGGLES_FINISH_STALL`` and the delivery
    policy (``GOGGLES_WHEN_FULL``, ``GOGGLES_SPOOL_*``, ``GOGGLES_BLOCK_TIMEOUT``).

    Raises:
        SocketOwnershipError: the socket path or its directory belongs to another user.
    """

    def __init__(self, settings: Settings, transport: TransportSettings) -> None:
        self.socket_path = transport.socket_path or default_socket_path()
        prepare_socket_dir(self.socket_path)
        self.settings = settings
        self.transport = transport
        self.policy = settings.delivery
        self.ops = HandlerOperations(self)
        self.local = LocalHandlers(self)
        self._tokens = itertools.count(1)
        self._warned: set[str] = set()
        self.leftovers = self._leftovers()  # what finish gave up on: kept, delivered later
        self._fresh()

    def _fresh(self) -> None:
        """The per-process state: pools, link, courier, pipe (also a forked child's start)."""
        self.pools = ArrayPools(
            threshold=self.transport.shm_threshold,
            shm_bytes=self.transport.shm_bytes,
            policy=self.policy,
        )
        self._elector: HostElector | None = None
        self._lock = threading.Lock()
        self.link = HostLink(
            self.socket_path,
            elector=lambda: self.elector,
            replay=lambda: self.courier.replay(),
            on_ack=lambda ack: self.courier.on_ack(ack),
            on_reply=lambda reply: self.courier.on_reply(reply),
            on_release=lambda release: self.courier.on_release(release),
            on_lost=self._host_died,
            warn_once=self.warn_once,
        )
        # The courier is the pipe's send and holds the pipe (it acknowledges its batches).
        self.courier = Courier(
            self.link,
            self.pools,
            on_unencodable=self._unencodable,
            make_pipe=lambda send: client_pipe(
                send, self.policy, self.settings.queue_size, self.settings.queue_bytes
            ),
        )
        self.pipe = self.courier.pipe
        # Scalars gather end to end before the pipe (ADR 0088); its worker asks for them.
        self.front = ScalarFront(self.pipe, self.settings.queue_size)
        self.pipe.refill = self.front.refill
        # Where a log call's row goes: _put_first until started, then (asynchronous) the
        # front's put itself, one call fewer on the logger's hot path.
        self.put_row: Callable[[Row, int], bool] = self._put_first
        self.put_scalar: Callable[[Row, int], bool] = self._put_first
        self.unencodable = 0
        self._issued: list[Call] = []  # every operation issued here, for a forked child
        self._running = False

    def _leftovers(self) -> Leftovers:
        local = self.local
        return Leftovers(
            self,
            producer=lambda: self.courier.producer,
            kept_counter=local.kept_counter,
            host_log=self.transport.host_log,
        )

    def warn_once(self, key: str, message: str) -> None:
        """Say ``message`` on stderr the first time ``key`` comes up."""
        if key not in self._warned:
            self._warned.add(key)
            report(message)

    def _unencodable(self, exc: Exception) -> None:
        self.unencodable += 1
        self.warn_once("enc", f"an event cannot be sent to the host and is dropped: {exc}")

    def _host_died(self) -> None:
        self.courier.link_lost()
        self.pipe.link_lost()

    def _start(self) -> None:
        with self._lock:
            if self._running:
                return
            self._running = True
            loading_modules()
        self.local.resubscribe()  # handlers of ours kept across finish() need their feed again
        self.leftovers.deliver()  # dead processes' folders: into their own runs (ADR 0060)
        if self.settings.async_mode:
            self.put_row = self.front.put_other
            self.put_scalar = self.front.put

    @property
    def elector(self) -> HostElector:
        """Who starts a host when none answers, made on first use (by the pipe's worker)."""
        if self._elector is None:
            from goggles_io._transport.client.election import HostElector

            with self._lock:
                if self._elector is None:
                    self._elector = HostElector(self.socket_path, self.settings, self.transport)
        return self._elector

    # -- Transport API ----------------------------------------------------------------------
    def emit(self, event: Event) -> None:
        """Put ``event``'s row in the pipe; past its budget it spills, then waits (bounded),
        then is dropped and counted (its staged slot given back)."""
        row = row_of(event)
        if type(event.payload) is ShmRef:
            self.pools.staged_any = True  # a slot staged elsewhere: batches are looked at
        if not self.put_row(row, nbytes(row)) and type(event.payload) is ShmRef:
            self.pools.release([event.payload])

    def _put_first(self, row: Row, size: int) -> bool:
        """``put_row`` before the client started, and always in synchronous mode: start, put
        ``row`` (``size`` bytes against the budget), wait for the host when synchronous."""
        if not self._running:
            self._start()
        taken = self.pipe.put(row, size)
        if not self.settings.async_mode:
            self.flush(self.settings.shutdown_timeout_s)
        return taken

    def release_staged(self, ref: ShmRef) -> None:
        """Give back the slot of a staged array whose row was dropped."""
        self.pools.release([ref])

    def control(self, op: str, args: dict[str, Any]) -> Marker:
        """Send a handler operation after everything put so far (never refused)."""
        if not self._running:
            self._start()
        marker = Marker(Call(next(self._tokens), op, args))
        if op in REPLAYED:
            self._issued.append(marker.call)
        self.front.seal()  # after every scalar put before it
        self.pipe.put(marker, 0, force=True)
        return marker

    def attach(self, handler: Handler, scopes: Sequence[str]) -> None:
        """Attach ``handler`` on the host (or here: :mod:`~goggles_io._transport.client.placement`)."""
        self.ops.attach(handler, scopes)

    def detach(self, name: str, scope: str, *, missing_ok: bool = False) -> None:
        """Detach ``name`` from ``scope``, in order with the events around it (a name this
        process did not attach is the host's to look up: never an error here)."""
        self.ops.detach(name, scope)

    def replace(self, handler: Handler, scopes: Sequence[str], *, enable: bool) -> None:
        """Last-wins replacement (``configure``) on the host."""
        self.ops.replace(handler, scopes, enable=enable)

    def call(self, name: str, method: str, payload: Any) -> None:
        """Run ``method(payload)`` on the host's handler ``name``, after the events before."""
        self.ops.call(name, method, payload)

    def has_handler(self, name: str) -> bool:
        """Whether this process attached a handler named ``name``."""
        return self.ops.has_handler(name)

    @property
    def is_host(self) -> bool:
        """Whether the host runs in this process (``GOGGLES_DEDICATED_HOST=0``, election won)."""
        if not self._running:
            self._start()
        return self.ops.is_host

    def open_subscription(self, sub: Any) -> None:
        """Connect a subscription to this socket's host."""
        self.ops.open_subscription(sub)

    def stage_array(self, array: Any) -> ShmRef | None:
        """Copy a big array into the shared-memory (or disk) pool at the log call.

        Once the pool is more than half in use, the sender is woken out of its linger: a slot
        comes back only once the host acknowledged it, so the row should go at once, not with
        the next ones 2 ms later (a burst of 1 MiB images ran out of slots and spilled to the
        disk pool). Below that it lingers and batches, which costs the burst less."""
        ref = self.pools.stage(array)
        if ref is not None and self.pools.filling():
            self.pipe.nudge()
        return ref

    def undelivered(self) -> int:
        """Events logged here that the host's handlers have not taken yet."""
        return self.pipe.left() + len(self.front)

    def flush(self, timeout_s: float | None = None) -> bool:
        """Wait until the host's handlers (and ours fed by it) handled everything so far."""
        if not self._running:
            return True
        marker = self.control("flush", {"timeout_s": timeout_s})
        ok = marker.done.wait(timeout_s) and bool(marker.result and marker.result.result)
        return self.local.flush_fed(timeout_s) and ok

    def finish(self, timeout_s: float | None = None) -> FinishReport:
        """Deliver what is put, let the host flush (and close when we are its last client).

        Waits while the host's handlers make progress; gives up after ``GOGGLES_FINISH_STALL``
        seconds in which they took nothing (or at ``timeout_s`` in all, when given, or Ctrl-C),
        and keeps what is left on disk for the next process (``kept for later``:
        :mod:`~goggles_io._transport.client.leftovers`). Prints one line with this process's tally.
        """
        if not self._running:
            return FinishReport()
        start = time.monotonic()
        stall_s = read_finish_stall()
        drained = wait_while_progressing(
            self.undelivered,
            stall_s=stall_s,
            what="the host's handlers",
            taken=lambda: self.pipe.delivered,
            limit_s=timeout_s,
        )
        left_s = None if timeout_s is None else max(0.0, timeout_s - (time.monotonic() - start))
        gave_up = drained.stalled or drained.abandoned
        # After the wait, which gives up: a flush behind a pipe the host stopped reading (a hung
        # handler there) would never come back.
        local = self.local.finish_fed(self, left_s, wait_for_host=not gave_up)
        if gave_up:  # the host's tally of what its handlers took, on a connection of its own
            args = {"timeout_s": _LAST_WORD_S, "stall_s": _LAST_WORD_S}
            marker = Marker(Call(next(self._tokens), "finish", args))
            marker.result = self.link.ask(marker.call, _LAST_WORD_S * 2 + 1.0)
        else:
            marker = self.control("finish", {"timeout_s": left_s, "stall_s": stall_s})
            marker.done.wait(stall_s * 2 + 5.0 if left_s is None else left_s)
        handlers: dict[str, HandlerStats] = {}
        timed_out = marker.result is None or gave_up
        if marker.result is not None and isinstance(marker.result.result, dict):
            timed_out = gave_up or bool(marker.result.result.get("timed_out"))
            for name, stats in (marker.result.result.get("handlers") or {}).items():
                with contextlib.suppress(TypeError, ValueError, AttributeError, IndexError):
                    handlers[str(name)] = HandlerStats.from_wire(stats)
        handlers = self._with_dead_hosts(handlers)
        tally = self._close(keep=gave_up)
        kept_n = tally.losses.get(KEPT_FOR_LATER, 0)
        if kept_n:  # what the host's handlers did not take is among what we kept: not lost
            handlers = {name: s.kept_for_later(kept_n) for name, s in handlers.items()}
        handlers.update(local.handlers)
        for name, n in self.leftovers.kept_from_local.items():  # nothing else can rebuild them
            handlers[name] = _not_in_time(handlers.get(name, HandlerStats(logged=0)), n)
        result = FinishReport(
            handlers=handlers,
            timed_out=timed_out or local.timed_out,
            transport=tally,
            elapsed_s=time.monotonic() - start,
            abandoned=drained.abandoned,
        )
        if result.dropped or result.lost or self.courier.host_dropped or timed_out:
            kept = self.leftovers.note()
            report(f"pid {os.getpid()}: finish: {result.summary()}" + (f"; {kept}" if kept else ""))
        elif self.settings.verbose:
            report(f"pid {os.getpid()}: {self.pipe.delivered} delivered, nothing lost")
        return result

    def _with_dead_hosts(self, handlers: dict[str, HandlerStats]) -> dict[str, HandlerStats]:
        """The last host's tally per handler plus what hosts that died before it took of ours
        (their acknowledgements said how many, ADR 0057): the counts cover the whole run."""
        for name, n in self.courier.taken_before.items():
            if name.startswith(SUBSCRIBER_PREFIX):
                continue  # a local handler's feed: that handler's own tally counts
            taken = HandlerStats(delivered=n, logged=n)
            last = handlers.get(name)
            handlers[name] = taken if last is None else last.plus(taken)
        return handlers

    def release(self, timeout_s: float | None = None) -> FinishReport:
        """Hand what is put to the host and leave, without waiting for its handlers.

        robo-goggles' ``finish(wait_for_host=False)``: returns once the host has read every
        event (the reply to a marker behind them), then disconnects; the host handles and closes
        its handlers on its own when its last client is gone. Handlers running here finish.
        """
        if not self._running:
            return FinishReport()
        local = self.local.finish_fed(self, timeout_s)
        # Answered once all before it arrived; "leaving": the host closes our handlers as a
        # clean end, not as a client that died.
        marker = self.control("flush", {"timeout_s": 0.0, "leaving": True})
        handed = marker.done.wait(timeout_s)
        left = self.pipe.left() if handed else 0  # read by the host: its handlers will take it
        tally = self._close(handed_over=left)
        result = FinishReport(
            handlers=dict(local.handlers),
            timed_out=not handed,
            transport=tally,
        )
        if result.dropped or result.lost or not handed:
            report(f"pid {os.getpid()}: finish: {result.summary()}")
        return result

    def _tally(self, handed_over: int = 0) -> HandlerStats:
        """This process's own losses, by reason, as the report's ``transport`` entry."""
        losses = self.pipe.losses()
        if handed_over:
            losses[NOT_DELIVERED] = max(0, losses.get(NOT_DELIVERED, 0) - handed_over)
        if self.unencodable:
            losses[UNENCODABLE] = losses.get(UNENCODABLE, 0) + self.unencodable
        losses = {reason: n for reason, n in losses.items() if n}
        delivered = self.pipe.delivered - self.unencodable + handed_over
        dropped = sum(n for reason, n in losses.items() if reason != KEPT_FOR_LATER)
        return HandlerStats(delivered, dropped, 0, losses)

    def _close(self, keep: bool = False, handed_over: int = 0) -> HandlerStats:
        """Close this process's pipe, link and pools (``keep``: what is left goes on disk for
        later); the tally of the pipe that closed. A later log call starts afresh."""
        with self._lock:
            self._running = False
        self.front.seal(force=True)  # counted with the rest: kept for later or not delivered
        self.pipe.close(keep=self.leftovers.closing(keep, self._issued))
        tally = self._tally(handed_over)
        self.link.close()
        for marker in self.courier.pending_markers():
            marker.done.set()
        self.pools.close()
        if self._elector is not None:
            self._elector.close(1.0)
        # A later log call starts afresh (robo-goggles re-opens after finish).
        issued = self._issued
        self._fresh()
        self.courier.adopt_ops(issued)
        self._issued = list(issued)
        return tally

    def after_fork_in_child(self) -> None:
        """Start afresh in the child: own pipe, connection, pools; the parent's stay untouched.

        The child inherits every handler operation the parent issued, sent or still queued:
        its events come after them, so it replays them on its own first connection.
        """
        issued = list(self._issued)
        self.leftovers = self._leftovers()  # the parent's folders are the parent's
        self.local.forget_after_fork()  # the parent's instances get our events via the host
        self.ops.attached = {
            name: (cls, set(scopes))
            for name, (cls, scopes) in self.ops.attached.items()
            if not self.local.has_handler(name)
        }
        self.link.forget_after_fork()
        self.pools.forget_after_fork()
        self._fresh()
        self.courier.adopt_ops(issued)
        self._issued = issued
