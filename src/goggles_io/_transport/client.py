"""The producer side of the socket transport: a bounded queue drained by one sender thread.

``emit`` only appends to a deque (dropping and counting when it is full), so the application
never waits on the host. The sender thread connects (electing or spawning a host when none
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
import sys
import threading
import time
from collections import deque
from collections.abc import Sequence
from typing import Any

from goggles_io._bus import FinishReport
from goggles_io._codec import Ack, Call, Decoder, Encoder, Hello, Reply
from goggles_io._config import Settings
from goggles_io._delivery import HandlerStats
from goggles_io._records import Event, approx_nbytes
from goggles_io._transport.batching import Batcher
from goggles_io._transport.election import HostElector
from goggles_io._transport.framing import FrameDecoder, encode_frame
from goggles_io._transport.placement import LocalHandlers, runs_in_attaching_process
from goggles_io._transport.settings import (
    TransportSettings,
    default_socket_path,
    prepare_socket_dir,
)
from goggles_io._transport.shm import ShmPool, ShmRef, sweep_dead_segments
from goggles_io.exceptions import InvalidPayloadError, UnknownScopeError
from goggles_io.handlers.base import Handler, check_remote_method, get_handler_class

__all__ = ["SocketClient"]

_BATCH_EVENTS = 1024
_BATCH_BYTES = 4 * 1024 * 1024  # a batch's events, so encoding one never doubles a big backlog
_IDLE_WAIT_S = 0.05
# Operations replayed, in order, on a new host (after a host death, or in a forked child).
_REPLAYED = ("attach", "replace", "detach", "call")


class _Marker:
    """A control operation travelling through the queue, in order with the events around it."""

    __slots__ = ("call", "done", "result")

    def __init__(self, call: Call) -> None:
        self.call = call
        self.done = threading.Event()
        self.result: Reply | None = None


def _say(message: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(f"goggles_io: {message}\n")
        sys.stderr.flush()


class SocketClient:
    """A :class:`~goggles_io._bus.Transport` that forwards to the one host on a socket path.

    Env: ``GOGGLES_SOCKET``, ``GOGGLES_SHM_THRESHOLD``, ``GOGGLES_DEDICATED_HOST``,
    ``GOGGLES_HOST_IDLE_TIMEOUT``, ``GOGGLES_HOST_LOG``, plus ``GOGGLES_QUEUE_SIZE``,
    ``GOGGLES_ASYNC`` and ``GOGGLES_SHUTDOWN_TIMEOUT`` from the core settings.

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
        self._tokens = itertools.count(1)
        self._reset_state()

    # -- state ------------------------------------------------------------------------------
    def _reset_state(self) -> None:
        self._queue: deque[Any] = deque()
        self._bytes_in = 0  # bytes ever queued by emit (producer threads)
        self._bytes_out = 0  # bytes ever taken by the sender thread
        self._wake = threading.Event()
        self._sleeping = False
        self._lock = threading.Lock()
        self._inflight: deque[tuple[int, int, list[Any]]] = deque()
        self._pending: dict[int, _Marker] = {}
        self._ops: list[Call] = []  # handler operations already sent, replayed on reconnect
        self._attached: dict[str, tuple[type, set[str]]] = {}  # name -> (class, scopes), ours
        if not hasattr(self, "_local"):
            self._local = LocalHandlers(self)
        self._batcher = Batcher(self._release, self._on_unencodable)
        self.delivered = 0
        self.host_dropped = 0  # of ours, refused by a full handler queue in the host
        self.dropped_full = 0
        self.lost_in_flight = 0
        self.unencodable = 0
        self.undelivered_at_finish = 0
        self.reconnects = 0
        self._sock: socket.socket | None = None
        self._conn_gen = 0
        self._sender: threading.Thread | None = None
        self._pool: ShmPool | None = None
        self._elector = HostElector(self.socket_path, self.settings, self.transport)
        self._running = False
        self._stop = False
        self._warned: set[str] = set()
        self._pid = os.getpid()

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            _say(message)

    def _start(self) -> None:
        with self._lock:
            if self._running:
                return
            self._stop = False
            self._running = True
            self._sender = threading.Thread(
                target=self._send_loop, name="goggles_io:sender", daemon=True
            )
            self._sender.start()
        self._local.resubscribe()  # handlers of ours kept across finish() need their feed again

    # -- Transport API ----------------------------------------------------------------------
    def emit(self, event: Event) -> None:
        """Queue ``event`` for the host; drop and count when the queue is full. Never blocks."""
        if not self._running:
            self._start()
        queue = self._queue
        size = approx_nbytes(event)
        if (
            len(queue) >= self.queue_size
            or self._bytes_in - self._bytes_out + size > self.queue_bytes
        ):
            self._drop_full()
            return
        self._bytes_in += size
        queue.append(event)
        if self._sleeping:
            self._wake.set()
        if not self.settings.async_mode:
            self.flush(self.settings.shutdown_timeout_s)

    def _drop_full(self) -> None:
        with self._lock:
            self.dropped_full += 1
        self._warn_once(
            "full",
            f"pid {os.getpid()}: transport queue full ({self.queue_size} events, GOGGLES_QUEUE_SIZE, "
            f"or {self.queue_bytes} bytes, GOGGLES_QUEUE_BYTES); dropping events and counting them",
        )

    def _control(self, op: str, args: dict[str, Any]) -> _Marker:
        if not self._running:
            self._start()
        marker = _Marker(Call(next(self._tokens), op, args))
        self._queue.append(marker)  # control never counts against the bound
        self._wake.set()
        return marker

    def _spec(self, handler: Handler) -> dict[str, Any]:
        spec = handler.to_dict()
        get_handler_class(str(spec.get("cls")))  # unregistered classes fail here, at the call
        try:  # so does a spec the wire cannot carry (it would be replayed on every reconnect)
            Encoder().encode(Call(0, "attach", {"spec": spec}))
        except (TypeError, ValueError, OverflowError) as exc:
            msg = (
                f"handler {handler.name!r} cannot be sent to the host: its config() must return "
                f"msgpack-safe builtins (str, int, float, bool, None, lists, dicts) ({exc})"
            )
            raise InvalidPayloadError(msg, value=spec) from None
        return spec

    def attach(self, handler: Handler, scopes: Sequence[str]) -> None:
        """Attach on the host; ordered before every event emitted after this returns.

        A handler the host cannot build (its class lives in ``__main__``, a notebook or a
        function, or was never registered) runs here instead, fed by a subscription to the
        host, so it still sees every process's events (see :mod:`goggles_io._transport.placement`).
        """
        if runs_in_attaching_process(handler):
            self._local.attach(handler, scopes)
            cls, known = self._attached.get(handler.name, (type(handler), set()))
            self._attached[handler.name] = (cls, known | set(scopes))
            return
        self._control("attach", {"spec": self._spec(handler), "scopes": list(scopes)})
        cls, known = self._attached.get(handler.name, (type(handler), set()))
        self._attached[handler.name] = (cls, known | set(scopes))  # the first class wins

    @property
    def is_host(self) -> bool:
        """Whether the host runs in this process (``GOGGLES_DEDICATED_HOST=0`` and we won the
        election); waits until connected, since the election happens on the first connection."""
        if not self._running:
            self._start()
        self.flush(self.settings.shutdown_timeout_s)
        return self._elector.host is not None

    def open_subscription(self, sub: Any) -> None:
        """Connect a :class:`~goggles_io._subscribe.Subscription` to this socket's host."""
        sub.connect(self.socket_path, self._elect_quietly)

    def _elect_quietly(self) -> None:
        try:
            self._elector.elect()
        except Exception as exc:
            self._warn_once("elect", f"cannot start a host on {self.socket_path!r}: {exc}")

    def detach(self, name: str, scope: str) -> None:
        """Detach on the host, in order with the events around it.

        Raises:
            UnknownScopeError: this process attached ``name`` but not on ``scope``.
        """
        found = self._attached.get(name)
        if found is not None and scope not in found[1]:
            msg = f"handler {name!r} is not attached on scope {scope!r} (its scopes: {sorted(found[1])!r})."
            raise UnknownScopeError(msg, name=name, scope=scope)
        if self._local.has_handler(name):
            self._local.detach(name, scope)
        else:
            self._control("detach", {"name": name, "scope": scope})
        if found is not None:
            found[1].discard(scope)
            if not found[1]:
                del self._attached[name]

    def replace(self, handler: Handler, scopes: Sequence[str], *, enable: bool) -> None:
        """Last-wins replacement (``configure``) on the host."""
        args = {"spec": self._spec(handler), "scopes": list(scopes), "enable": enable}
        self._control("replace", args)
        _, known = self._attached.pop(handler.name, (None, set()))
        kept = (known - set(scopes)) | (set(scopes) if enable else set())
        if kept:
            self._attached[handler.name] = (type(handler), kept)

    def call(self, name: str, method: str, payload: Any) -> None:
        """Run ``method(payload)`` on the host's handler ``name``, after the events queued before.

        The method is checked here when this process attached ``name`` (it knows the class);
        otherwise the host checks it and a refusal is counted and reported once on both sides.
        """
        found = self._attached.get(name)
        if found is not None:
            check_remote_method(found[0], method)
        self._control("call", {"name": name, "method": method, "payload": payload})

    def has_handler(self, name: str) -> bool:
        """Return whether this process attached a handler named ``name``."""
        return name in self._attached

    def flush(self, timeout_s: float | None = None) -> bool:
        """Wait until the host's handlers (and ours fed by it) handled everything queued so far."""
        if not self._running:
            return True
        marker = self._control("flush", {"timeout_s": timeout_s})
        ok = marker.done.wait(timeout_s) and bool(marker.result and marker.result.result)
        return self._local.flush_fed(timeout_s) and ok

    def finish(self, timeout_s: float | None = None) -> FinishReport:
        """Deliver what is queued, let the host flush (and close when we are its last client).

        Bounded by ``timeout_s``: what is still queued then is counted as not delivered. Prints
        one line with this process's tally on stderr.
        """
        if not self._running:
            return FinishReport()
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        local = self._local.finish_fed(self, timeout_s)
        marker = self._control("finish", {"timeout_s": timeout_s})
        marker.done.wait(timeout_s)
        handlers: dict[str, HandlerStats] = {}
        timed_out = marker.result is None
        if marker.result is not None and isinstance(marker.result.result, dict):
            timed_out = bool(marker.result.result.get("timed_out"))
            for name, stats in (marker.result.result.get("handlers") or {}).items():
                with contextlib.suppress(TypeError, ValueError):
                    handlers[str(name)] = HandlerStats(*[int(x) for x in stats])
        self._close(deadline)
        dropped = self.dropped_full + self.lost_in_flight + self.unencodable
        dropped += self.undelivered_at_finish
        if dropped or self.host_dropped or (self.settings.verbose and self.delivered):
            _say(
                f"pid {os.getpid()}: {self.delivered} delivered to the host, {dropped} dropped "
                f"({self.dropped_full} queue full, {self.lost_in_flight} lost with a dead host, "
                f"{self.unencodable} unencodable, {self.undelivered_at_finish} not sent in time)"
                f"; the host's handler queues dropped {self.host_dropped} of ours"
            )
        handlers.update(local.handlers)
        return FinishReport(handlers=handlers, timed_out=timed_out or local.timed_out)

    def _close(self, deadline: float | None) -> None:
        with self._lock:
            self._stop = True
            self._running = False
        self._wake.set()
        sender = self._sender
        if sender is not None and sender is not threading.current_thread():
            left = 1.0 if deadline is None else max(0.05, deadline - time.monotonic())
            sender.join(left)
        leftover = sum(1 for item in self._queue if type(item) is not _Marker)
        self._queue.clear()
        self._bytes_out = self._bytes_in
        self.undelivered_at_finish += leftover
        self._disconnect(count_lost=True, warn=False)
        for marker in list(self._pending.values()):
            marker.done.set()
        self._pending.clear()
        if self._pool is not None:
            self._pool.close()
            self._pool = None
        self._elector.close(1.0)

    def after_fork_in_child(self) -> None:
        """Start afresh in the child: own queue, connection, pool; the parent's stay untouched."""
        sock = self._sock
        # The child inherits every handler operation the parent issued, sent or still queued:
        # its events come after them, so it replays them on its own first connection.
        queued = [m.call for m in list(self._queue) if type(m) is _Marker]
        ops = self._ops + [c for c in queued if c.op in _REPLAYED]
        attached = {name: (cls, set(scopes)) for name, (cls, scopes) in self._attached.items()}
        self._local.forget_after_fork()  # the parent's instances get our events via the host
        attached = {n: v for n, v in attached.items() if not self._local.has_handler(n)}
        self._reset_state()
        self._attached = attached
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.close()  # our copy of the fd only; the parent's connection is unaffected
        self._ops = ops

    # -- sender thread ----------------------------------------------------------------------
    def _send_loop(self) -> None:
        encoder = Encoder()
        gen = -1
        while True:
            if self._stop:
                return
            if self._sock is None:
                if not self._connect():
                    continue
            if gen != self._conn_gen:
                gen = self._conn_gen
                encoder = Encoder(self.transport.shm_threshold, self._get_pool())
                self._batcher.encoder = encoder
            items = self._take()
            if not items:
                self._sleeping = True
                if not self._queue:
                    self._wake.wait(_IDLE_WAIT_S)
                self._wake.clear()
                self._sleeping = False
                continue
            try:
                self._send_items(items, encoder)
            except OSError:
                self._disconnect(count_lost=True, warn=True)
            except Exception as exc:  # a bug here must not stop all logging silently
                lost = sum(1 for item in items if type(item) is not _Marker)
                self.unencodable += lost
                self._warn_once("send", f"{lost} events could not be sent and are dropped: {exc!r}")

    def _take(self) -> list[Any]:
        queue = self._queue
        items: list[Any] = []
        taken = 0  # bytes this batch will hold in the host
        while queue and len(items) < _BATCH_EVENTS and taken < _BATCH_BYTES:
            item = queue[0]
            if type(item) is _Marker:
                if items:
                    break
                items.append(queue.popleft())
                break
            items.append(queue.popleft())
            size = approx_nbytes(item)
            self._bytes_out += size
            payload = item.payload
            # A batch is capped by what the host will hold once it copied the arrays out.
            taken += payload.nbytes if type(payload) is ShmRef else size
        return items

    def _send_items(self, items: list[Any], encoder: Encoder) -> None:
        sock = self._sock
        if sock is None:
            raise OSError("not connected")
        if type(items[0]) is _Marker:
            marker = items[0]
            self._pending[marker.call.token] = marker
            if marker.call.op in _REPLAYED:
                self._ops.append(marker.call)
            sock.sendall(encode_frame(encoder.encode(marker.call)))
            return
        for seq, frame, n, refs in self._batcher.frames(items):
            self._inflight.append((seq, n, refs))
            sock.sendall(frame)

    def _on_unencodable(self, exc: Exception) -> None:
        self.unencodable += 1
        self._warn_once("enc", f"an event cannot be sent to the host and is dropped: {exc}")

    def _release(self, refs: list[Any]) -> None:
        pool = self._pool
        if pool is not None:
            for ref in refs:
                pool.release(ref.segment, ref.offset)

    def _get_pool(self) -> ShmPool | None:
        if self._pool is None:
            with self._lock:  # the producer (stage_array) and the sender may both get here
                if self._pool is None:
                    try:
                        sweep_dead_segments()  # a crashed run's segments go on our next start
                        self._pool = ShmPool.with_budget(self.transport.shm_bytes)
                    except OSError as exc:
                        self._warn_once(
                            "shm", f"shared memory unavailable ({exc}); arrays go inline"
                        )
        return self._pool

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
        return None if pool is None else pool.put(array)

    # -- connection -------------------------------------------------------------------------
    def _connect(self) -> bool:
        backoff = 0.01
        while not self._stop:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.connect(self.socket_path)
            except OSError:
                sock.close()
                try:
                    self._elector.elect()
                except Exception as exc:
                    self._warn_once("elect", f"cannot start a host on {self.socket_path!r}: {exc}")
                self._wake.wait(backoff)
                self._wake.clear()
                backoff = min(backoff * 2, 0.25)
                continue
            self._on_connected(sock)
            return True
        return False

    def _on_connected(self, sock: socket.socket) -> None:
        encoder = Encoder()
        frames = [encode_frame(encoder.encode(Hello(os.getpid())))]
        frames += [encode_frame(encoder.encode(call)) for call in self._ops]
        frames += [encode_frame(encoder.encode(m.call)) for m in self._pending.values()]
        sock.sendall(b"".join(frames))
        self._conn_gen += 1
        self._sock = sock
        threading.Thread(
            target=self._recv_loop,
            args=(sock, self._conn_gen),
            name="goggles_io:receiver",
            daemon=True,
        ).start()

    def _disconnect(self, *, count_lost: bool, warn: bool) -> None:
        with self._lock:
            sock, self._sock = self._sock, None
            inflight = list(self._inflight)
            self._inflight.clear()
        # Counted even when the receiver already dropped the socket: the sender may have put a
        # batch in flight on it since.
        lost = sum(n for _, n, _ in inflight)
        for _, _, refs in inflight:
            self._release(refs)
        if count_lost:
            self.lost_in_flight += lost
        if sock is None:
            return
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            sock.close()
        if warn:
            self.reconnects += 1
            _say(
                f"pid {os.getpid()}: lost the host on {self.socket_path!r}; {lost} events in "
                f"flight lost (counted); re-electing a host and re-attaching handlers"
            )

    # -- receiver thread --------------------------------------------------------------------
    def _recv_loop(self, sock: socket.socket, gen: int) -> None:
        frames = FrameDecoder()
        decoder = Decoder()
        try:
            while True:
                data = sock.recv(1 << 16)
                if not data:
                    break
                for payload in frames.feed(data):
                    msg = decoder.decode(payload)
                    if type(msg) is Ack:
                        self._on_ack(msg)
                    elif type(msg) is Reply:
                        marker = self._pending.pop(msg.token, None)
                        if not msg.ok:
                            self._warn_once(f"call:{msg.result}", f"host refused: {msg.result}")
                        if marker is not None:
                            marker.result = msg
                            marker.done.set()
        except (OSError, ValueError):
            pass
        if gen == self._conn_gen and not self._stop:
            self._disconnect(count_lost=True, warn=True)
            self._wake.set()

    def _on_ack(self, ack: Ack) -> None:
        if type(ack.dropped) is int and ack.dropped > 0:
            self.host_dropped += ack.dropped
        inflight = self._inflight
        while inflight and inflight[0][0] <= ack.seq:
            with self._lock:
                if not inflight:
                    break
                _, n, refs = inflight.popleft()
                self.delivered += n
            self._release(refs)
