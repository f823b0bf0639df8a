"""The producer side of the socket transport: a bounded queue drained by one sender thread.

``emit`` only appends to a deque, so the application does not wait on the host. Past the
queue's budget it follows the delivery policy (ADR 0025): the event goes to the spillover on
disk (:mod:`goggles_io._transport.spillover`), and everything after it follows it there until the
sender took it all; with no room there the producer waits (bounded per burst, never while the
host is known dead), then the event is dropped and counted. The sender thread
(:mod:`goggles_io._transport.sender`) connects (electing or spawning a host when none
answers), batches events into frames, puts big arrays into the shared-memory pool and replays
the handler operations after a reconnect. A receiver thread reads acknowledgements, frees shm
slots, and notices a dead host at once (EOF). After ``fork`` the child starts afresh with its
own connection. See ``docs/transport.md`` for the knobs.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import socket
import threading
import time
from collections import deque
from typing import TYPE_CHECKING, Any

from goggles_io._bus.settings import Settings
from goggles_io._bus.transport import FinishReport, HandlerStats
from goggles_io._delivery.drain import read_finish_stall, wait_while_progressing
from goggles_io._delivery.policy import BlockAllowance, advice
from goggles_io._event.messages import Call
from goggles_io._event.records import Event, ShmRef, approx_nbytes
from goggles_io._transport.link import HostLink
from goggles_io._transport.operations import HandlerOperations, Marker
from goggles_io._transport.placement import LocalHandlers
from goggles_io._transport.sender import REPLAYED, SenderThread, loading_modules
from goggles_io._transport.settings import (
    TransportSettings,
    default_socket_path,
    prepare_socket_dir,
)
from goggles_io._transport.spillover import Spillover
from goggles_io._util.report import report

if TYPE_CHECKING:  # imported where used: attach() must not pay for numpy and the codec
    from goggles_io._transport.diskpool import DiskPool
    from goggles_io._transport.election import HostElector
    from goggles_io._transport.shm import ShmPool

__all__ = ["SocketClient"]


class SocketClient(HandlerOperations, HostLink, SenderThread):
    """A :class:`~goggles_io._bus.transport.Transport` that forwards to the one host on a socket path.

    Env: ``GOGGLES_SOCKET``, ``GOGGLES_SHM_THRESHOLD``, ``GOGGLES_DEDICATED_HOST``,
    ``GOGGLES_HOST_IDLE_TIMEOUT``, ``GOGGLES_HOST_LOG``, plus ``GOGGLES_QUEUE_SIZE``,
    ``GOGGLES_QUEUE_BYTES``, ``GOGGLES_ASYNC``, ``GOGGLES_SHUTDOWN_TIMEOUT`` and the delivery
    policy (``GOGGLES_WHEN_FULL``, ``GOGGLES_SPOOL_*``, ``GOGGLES_BLOCK_TIMEOUT``).

    Raises:
        SocketOwnershipError: the socket path or its directory belongs to another user.
    """

    def __init__(self, settings: Settings, transport: TransportSettings) -> None:
        self.socket_path = transport.socket_path or default_socket_path()
        prepare_socket_dir(self.socket_path)
        self.settings = settings
        self.transport = transport
        self.queue_size = settings.queue_size
        self.queue_bytes = settings.queue_bytes
        self.policy = settings.delivery
        self._tokens = itertools.count(1)
        self._reset_state()

    # -- state ------------------------------------------------------------------------------
    def _reset_state(self) -> None:
        self._queue: deque[Any] = deque()
        self._limit = self.queue_size  # -1 while events are spilled: emit's one check says so
        self._spill = Spillover(self.policy, self._spilling)
        self._allowance = BlockAllowance(self.policy.block_timeout_s)
        self._host_lost = False  # the host died and no new one answered yet: never block then
        self._bytes_in = 0  # bytes ever queued by emit (producer threads)
        self._bytes_out = 0  # bytes ever taken by the sender thread
        self._wake = threading.Event()
        self._sleeping = False
        self._lock = threading.Lock()
        # Frames sent and not acknowledged: (seq, frame, events, shm slots), kept until the host
        # says its handlers took them; after a host's death, kept to be sent again (ADR 0030).
        self._inflight: deque[tuple[int, bytes, int, list[Any]]] = deque()
        self._resend: deque[tuple[int, bytes, int, list[Any]]] = deque()
        self.redelivered = 0  # events sent again to a new host
        self._pending: dict[int, Marker] = {}
        self._ops: list[Call] = []  # handler operations already sent, replayed on reconnect
        self._attached: dict[str, tuple[type, set[str]]] = {}  # name -> (class, scopes), ours
        if not hasattr(self, "_local"):
            self._local = LocalHandlers(self)
        self._batcher = None  # made by the sender thread (it imports the codec)
        self.delivered = 0
        self.host_dropped = 0  # of ours, refused by a full handler queue in the host
        self.dropped_full = 0
        self.dropped_bytes = 0
        self.dropped_spool = 0
        self._prewarmed = False
        self.lost_in_flight = 0
        self.unencodable = 0
        self.undelivered_at_finish = 0
        self.reconnects = 0
        self._sock: socket.socket | None = None
        self._conn_gen = 0
        self._sender: threading.Thread | None = None
        self._pool: ShmPool | None = None
        self._disk_pool: DiskPool | None = None
        self._elector_made: HostElector | None = None
        self._running = False
        self._stop = False
        self._warned: set[str] = set()
        self._pid = os.getpid()

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            report(message)

    def _start(self) -> None:
        with self._lock:
            if self._running:
                return
            self._stop = False
            self._running = True
            loading_modules()
            self._sender = threading.Thread(
                target=self._send_loop, name="goggles_io:sender", daemon=True
            )
            self._sender.start()
        self._local.resubscribe()  # handlers of ours kept across finish() need their feed again

    # -- Transport API ----------------------------------------------------------------------
    def emit(self, event: Event) -> None:
        """Queue ``event`` for the host; past the budget spill, then wait (bounded), then drop."""
        if not self._running:
            self._start()
        queue = self._queue
        size = approx_nbytes(event)
        if len(queue) >= self._limit or self._bytes_in - self._bytes_out + size > self.queue_bytes:
            self._full(event, size)
            return
        self._bytes_in += size
        queue.append(event)
        if self._sleeping:
            self._wake.set()
        if not self.settings.async_mode:
            self.flush(self.settings.shutdown_timeout_s)

    def _spilling(self, active: bool) -> None:
        """The spillover started (everything after must follow it) or drained."""
        self._limit = -1 if active else self.queue_size

    def _has_room(self, size: int) -> bool:
        return len(self._queue) < self.queue_size and (
            self._bytes_in - self._bytes_out + size <= self.queue_bytes
        )

    def _full(self, event: Event, size: int) -> None:
        """The queue's budget is full (or events are spilled): spill, else wait, else drop."""
        spill = self._spill
        spills = self.policy.spills
        if spills and spill.add(event):
            self._wake.set()
            return
        if self.policy.blocks and not self._host_lost:
            self._wake.set()
            # Room is the spill's open chunk (when spilling), else the memory queue.
            if self._allowance.wait(
                lambda: spill.can_add() if spill.active else self._has_room(size),
                give_up=lambda: self._host_lost or self._stop,
            ):
                if spill.active and spills and spill.add(event):
                    return
                if not spill.active and self._has_room(size):
                    self._bytes_in += size
                    self._queue.append(event)
                    self._wake.set()
                    return
        if spills and spill.failure:
            self._drop(event, "spool full", spill.failure)
        elif len(self._queue) >= self.queue_size:
            self._drop(event, "queue full")
        else:
            self._drop(event, "byte budget full")

    def _drained(self) -> None:
        """The sender found nothing to take: the burst is over, waits may be long again."""
        self._allowance.refill()

    def _drop(self, event: Event, reason: str, detail: str = "") -> None:
        """Count a refused event by reason (once on stderr per reason); free its staged slot."""
        with self._lock:
            if reason == "queue full":
                self.dropped_full += 1
            elif reason == "byte budget full":
                self.dropped_bytes += 1
            else:
                self.dropped_spool += 1
        if type(event.payload) is ShmRef:
            self._release([event.payload])  # its staged slot goes back to the pool
        budget = detail or (
            f"{self.queue_size} events, GOGGLES_QUEUE_SIZE; {self.queue_bytes} bytes, "
            "GOGGLES_QUEUE_BYTES"
        )
        what = (
            f"pid {os.getpid()}: transport {reason} ({budget}); dropping events and counting them"
        )
        self._warn_once(reason, advice(what))

    def flush(self, timeout_s: float | None = None) -> bool:
        """Wait until the host's handlers (and ours fed by it) handled everything queued so far."""
        if not self._running:
            return True
        marker = self._control("flush", {"timeout_s": timeout_s})
        ok = marker.done.wait(timeout_s) and bool(marker.result and marker.result.result)
        return self._local.flush_fed(timeout_s) and ok

    def undelivered(self) -> int:
        """Events logged here that the host's handlers have not taken yet (queued, spilled, in
        flight, or kept for the next host)."""
        with self._lock:
            kept = sum(f[2] for f in list(self._inflight)) + sum(f[2] for f in list(self._resend))
        return len(self._queue) + self._spill.events + kept

    def finish(self, timeout_s: float | None = None) -> FinishReport:
        """Deliver what is queued, let the host flush (and close when we are its last client).

        Waits while delivery makes progress: it gives up only after ``timeout_s`` (default
        ``GOGGLES_FINISH_STALL``) with no event taken by the host's handlers, and then counts
        what is left as not delivered. Prints one line with this process's tally on stderr.
        """
        if not self._running:
            return FinishReport()
        stall_s = read_finish_stall() if timeout_s is None else timeout_s
        local = self._local.finish_fed(self, timeout_s)
        drained = wait_while_progressing(
            self.undelivered,
            stall_s=stall_s,
            what="the host's handlers",
            taken=lambda: self.delivered,
        )
        deadline = time.monotonic() + (0.0 if drained.abandoned else stall_s)
        # Everything of ours was taken: the host closes its handlers (when we are its last
        # client); a handler's close has no progress to watch, so it gets the stall time.
        args: dict[str, Any] = {"timeout_s": stall_s, "deadline": time.time() + stall_s}
        marker = self._control("finish", args)
        if not drained.abandoned:
            marker.done.wait(stall_s + 1.0)
        handlers: dict[str, HandlerStats] = {}
        timed_out = marker.result is None
        if marker.result is not None and isinstance(marker.result.result, dict):
            timed_out = bool(marker.result.result.get("timed_out"))
            for name, stats in (marker.result.result.get("handlers") or {}).items():
                with contextlib.suppress(TypeError, ValueError, AttributeError):
                    handlers[str(name)] = HandlerStats.from_wire(stats)
        self._close(deadline)
        handlers.update(local.handlers)
        timed_out = timed_out or local.timed_out or drained.stalled or drained.abandoned
        result = FinishReport(handlers=handlers, timed_out=timed_out, transport=self._tally())
        if result.dropped or result.lost or self.host_dropped or timed_out:
            report(f"pid {os.getpid()}: finish: {result.summary()}")
        elif self.settings.verbose:
            report(f"pid {os.getpid()}: {self.delivered} delivered to the host, nothing lost")
        return result

    def release(self, timeout_s: float | None = None) -> FinishReport:
        """Hand what is queued to the host and leave, without waiting for its handlers.

        robo-goggles' ``finish(wait_for_host=False)``: returns once the host has every event
        (a reply to a marker behind them), then disconnects; the host writes and closes its
        handlers on its own when its last client is gone. Handlers running here are finished.
        """
        if not self._running:
            return FinishReport()
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        local = self._local.finish_fed(self, timeout_s)
        marker = self._control("flush", {"timeout_s": 0.0})  # answered once all before it arrived
        handed = marker.done.wait(timeout_s)
        self._close(deadline)
        result = FinishReport(
            handlers=dict(local.handlers), timed_out=not handed, transport=self._tally()
        )
        if result.dropped or result.lost or not handed:
            report(f"pid {os.getpid()}: finish: {result.summary()}")
        return result

    def _tally(self) -> HandlerStats:
        """This process's own losses, by reason, as the report's ``transport`` entry."""
        reasons = {
            "queue full": self.dropped_full,
            "byte budget full": self.dropped_bytes,
            "spool full": self.dropped_spool,
            "spool unreadable": self._spill.lost,
            "in flight at finish": self.lost_in_flight,
            "unencodable": self.unencodable,
            "not sent in time": self.undelivered_at_finish,
        }
        losses = {reason: n for reason, n in reasons.items() if n}
        return HandlerStats(self.delivered, sum(losses.values()), 0, losses)

    def _close(self, deadline: float | None) -> None:
        with self._lock:
            self._stop = True
            self._running = False
        self._wake.set()
        sender = self._sender
        if sender is not None and sender is not threading.current_thread():
            left = 1.0 if deadline is None else max(0.05, deadline - time.monotonic())
            sender.join(left)
        leftover = sum(1 for item in self._queue if type(item) is not Marker)
        leftover += self._spill.close()
        self._queue.clear()
        self._bytes_out = self._bytes_in
        with self._lock:
            kept, self._resend = list(self._resend), deque()
        leftover += sum(n for _, _, n, _ in kept)
        for _, _, _, refs in kept:
            self._release(refs)
        self.undelivered_at_finish += leftover
        self._disconnect(keep=False, warn=False)
        for marker in list(self._pending.values()):
            marker.done.set()
        self._pending.clear()
        if self._pool is not None:
            self._pool.close()
            self._pool = None
            self._prewarmed = False
        if self._disk_pool is not None:
            self._disk_pool.close()
            self._disk_pool = None
        if self._elector_made is not None:
            self._elector_made.close(1.0)

    def after_fork_in_child(self) -> None:
        """Start afresh in the child: own queue, connection, pool; the parent's stay untouched."""
        sock = self._sock
        # The child inherits every handler operation the parent issued, sent or still queued:
        # its events come after them, so it replays them on its own first connection.
        queued = [m.call for m in list(self._queue) if type(m) is Marker]
        ops = self._ops + [c for c in queued if c.op in REPLAYED]
        attached = {name: (cls, set(scopes)) for name, (cls, scopes) in self._attached.items()}
        self._local.forget_after_fork()  # the parent's instances get our events via the host
        self._spill.forget_after_fork()
        attached = {n: v for n, v in attached.items() if not self._local.has_handler(n)}
        self._reset_state()
        self._attached = attached
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.close()  # our copy of the fd only; the parent's connection is unaffected
        self._ops = ops

    def stage_array(self, array: Any) -> ShmRef | None:
        """Copy a big array straight into the shared-memory pool at the log call.

        This is the log call's one copy (into pre-faulted pages, so about a memcpy); the event
        then carries only the slot's reference, and the pool's own budget bounds what waits
        there. ``None`` (the caller keeps a heap copy) when the array is small, of a dtype
        that cannot cross, or the pool is full.
        """
        if array.nbytes < self.transport.shm_threshold or array.dtype.kind not in "biuf":
            return None
        pool = self._pool or self._get_pool()
        if pool is None:
            return None
        if not self._prewarmed:
            self._prewarmed = True
            pool.prewarm()
            if self.policy.spills:
                self._disk().prewarm()
        ref = pool.put(array)
        if ref is None and self.policy.spills:
            ref = self._disk().put(array)  # the shm pool is full: the disk pool (ADR 0025)
        return ref

    @property
    def _elector(self) -> HostElector:
        """Who starts a host when none answers, made on first use (the sender thread's)."""
        if self._elector_made is None:
            from goggles_io._transport.election import HostElector

            with self._lock:
                if self._elector_made is None:
                    made = HostElector(self.socket_path, self.settings, self.transport)
                    self._elector_made = made
        return self._elector_made

    def _disk(self) -> DiskPool:
        disk = self._disk_pool
        if disk is None:
            from goggles_io._transport.diskpool import DiskPool

            with self._lock:
                disk = self._disk_pool = self._disk_pool or DiskPool(self.policy)
        return disk
