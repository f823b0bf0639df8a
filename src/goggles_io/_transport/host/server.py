"""The host: one per socket path, it owns the handlers and feeds every client's events to its bus.

Over 400 lines, one piece: the accept loop, each connection's reader and the operations share
one bus and one frame budget; acks, departures, the subscriber sink and handler specs are apart.

Runs either as a dedicated process (``python -m goggles_io._transport.host --socket PATH``, in
its own session so a terminal Ctrl-C reaches only the application) or as a thread inside the
first process when ``GOGGLES_DEDICATED_HOST=0``. Election is an ``fcntl.flock`` on
``<socket>.lock`` held for the host's whole life. Each client gets its own reader thread; a
malformed, oversized or truncated frame closes that connection only. Peers of another uid are
refused (``SO_PEERCRED``).

A client that sent events and left without ``finish()`` died (``departures.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import os
import socket
import threading
import time
from typing import Any

from goggles_io._delivery.policy import WhenFull
from goggles_io._event.codec import Batch, Call, Decoder, Hello, Reply
from goggles_io._transport.framing import DEFAULT_MAX_FRAME_BYTES, FrameBudget, FrameDecoder
from goggles_io._transport.host.acks import BatchAcks
from goggles_io._transport.host.departures import says_goodbye, tell_producer_lost
from goggles_io._transport.host.specs import build_handler, positive_bound
from goggles_io._transport.host.subscriber import ConnWriter, SubscriberSink
from goggles_io._transport.identity import acquire_host_lock, peer_credentials
from goggles_io._transport.lending import SlotLeases
from goggles_io._transport.settings import SUBSCRIBER_PREFIX, prepare_socket_dir
from goggles_io._transport.shm import ShmReader, sweep_dead_segments
from goggles_io._util.report import ReportOnce, host_name, report
from goggles_io.exceptions import FrameError

__all__ = ["Host", "main"]

_STARTUP_GRACE_S = 10.0
# Large frames being received or decoded hold at most this much, all connections together
# (framing.FrameBudget, ADR 0062): one frame of the largest size at a time.
FRAME_BUDGET_BYTES = DEFAULT_MAX_FRAME_BYTES
# A connection holding part of that budget in a half-sent frame is closed after this long
# without a byte: a stalled peer cannot keep the others' large frames waiting.
FRAME_STALL_S = 30.0
MAX_CONNECTIONS = 1024  # beyond this many at once, a new connection is refused (one line)
_BACKPRESSURE_MAX_S = 2.0
# The longest sleep between looks at a full lane: a lane of 1 MiB images frees half its bytes
# every millisecond or so, and a 10 ms sleep left the host idle most of a burst (issue 44).
_ROOM_POLL_S = 0.0005
_BATCH_ROOM = 1024  # events a client batch holds at most: the room kept free in handler queues
# A message is msgpack ``[tag, body]`` (0x92, then the tag as a positive fixint): the second
# byte of a Hello (0) or Call (3) frame. Anything else waits for room as a batch would.
_NOT_BATCHES = (b"\x92\x00", b"\x92\x03")


class Host:
    """Accept clients on ``socket_path`` and run their events through ``bus``."""

    def __init__(
        self,
        socket_path: str,
        bus: Any,
        *,
        idle_timeout_s: float,
        lock_fd: int | None = None,
        frame_budget_bytes: int = FRAME_BUDGET_BYTES,
        frame_stall_s: float = FRAME_STALL_S,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        self.socket_path = socket_path
        self.frame_budget = FrameBudget(frame_budget_bytes)
        self.frame_stall_s = frame_stall_s
        self.max_connections = max_connections
        self.too_many = 0  # connections refused past max_connections
        self.bus = bus
        self.idle_timeout_s = idle_timeout_s
        self.lock_fd = lock_fd
        self.refused = 0
        self.bad_frames = 0
        self.failed_calls = 0  # handler operations (attach, call_handler, ...) that failed
        self._subscribers = 0
        self.lost_producers = 0  # clients that sent events and left without finish, since the last
        self._sub_conns: set[socket.socket] = set()  # connections that only read a subscription
        self._report_once = ReportOnce(who=host_name())
        self._listener: socket.socket | None = None
        self._conns: set[socket.socket] = set()
        self._live = 0  # connections accepted whose thread has not ended
        self._lock = threading.Lock()
        # Handler operations, and a last producer's finish with the forgetting after it, one at
        # a time: a run that attaches while the last one ends never meets its handlers.
        self._ops_lock = threading.Lock()
        self._ever_connected = False
        self._last_left = time.monotonic()
        self._closing = threading.Event()
        self._thread: threading.Thread | None = None
        self._inode = -1
        self.leases = SlotLeases()  # what handlers hold of producers' shared memory (ADR 0077)
        if hasattr(bus, "producers_keep"):
            bus.producers_keep = True  # clients keep each batch until its handlers took it

    # -- lifecycle --------------------------------------------------------------------------
    def bind(self) -> None:
        """Create the listening socket 0600; replace a stale socket file nobody answers on."""
        prepare_socket_dir(self.socket_path)
        if os.path.exists(self.socket_path):
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                probe.connect(self.socket_path)
            except OSError:
                os.unlink(self.socket_path)
            else:
                probe.close()
                msg = f"another host already serves {self.socket_path!r}"
                raise FileExistsError(msg)
            finally:
                probe.close()
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)  # the socket is born 0600: no window where others could connect
        try:
            listener.bind(self.socket_path)
        finally:
            os.umask(old)
        os.chmod(self.socket_path, 0o600)
        self._inode = os.stat(self.socket_path).st_ino
        listener.listen(128)
        listener.settimeout(0.1)
        self._listener = listener
        self._last_left = time.monotonic()

    def start(self) -> None:
        """Serve in a daemon thread (in-process hosting)."""
        self._thread = threading.Thread(target=self.serve, name="goggles_io:host", daemon=True)
        self._thread.start()

    def serve(self) -> None:
        """Accept until asked to close or idle for ``idle_timeout_s`` with no client left."""
        assert self._listener is not None
        while not self._closing.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                if self._idle_expired():
                    break
                continue
            except OSError:
                break
            with self._lock:
                full = self._live >= self.max_connections
                if not full:
                    self._live += 1
            if full:
                self.too_many += 1
                self._report_once(
                    "too many",
                    f"refusing connections past {self.max_connections} at once "
                    f"(refused so far: {self.too_many})",
                )
                conn.close()
                continue
            threading.Thread(
                target=self._serve_conn, args=(conn,), name="goggles_io:host-conn", daemon=True
            ).start()
        self._shutdown()

    def _idle_expired(self) -> bool:
        with self._lock:
            if self._conns:
                return False
            grace = self.idle_timeout_s if self._ever_connected else _STARTUP_GRACE_S
            return time.monotonic() - self._last_left > grace

    def close(self, timeout_s: float | None = None) -> None:
        """Stop accepting, drop the connections, finish the bus; for in-process hosts."""
        self._closing.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout_s)

    def _shutdown(self) -> None:
        if self._listener is not None:
            with contextlib.suppress(OSError):
                # Only unlink the path if it is still ours (a newer host may have replaced it).
                if os.stat(self.socket_path).st_ino == self._inode:
                    os.unlink(self.socket_path)
            self._listener.close()
        self.frame_budget.close()  # wakes connections waiting for room for a frame
        with self._lock:
            conns = list(self._conns)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        try:
            if self.lost_producers:
                tell_producer_lost(self.bus.handlers.values(), self._report_once)
            self.bus.finish(5.0)
        finally:
            if self.lock_fd is not None:
                with contextlib.suppress(OSError):
                    os.close(self.lock_fd)
                self.lock_fd = None

    # -- one client -------------------------------------------------------------------------
    def _serve_conn(self, conn: socket.socket) -> None:
        try:
            self._serve_peer(conn)
        finally:
            with self._lock:
                self._live -= 1

    def _serve_peer(self, conn: socket.socket) -> None:
        creds = peer_credentials(conn)
        if creds is not None and creds[1] != os.getuid():
            self.refused += 1
            report(
                f"refused peer pid {creds[0]} uid {creds[1]}: only uid {os.getuid()} may connect",
                host_name(),
            )
            conn.close()
            return
        with self._lock:
            self._conns.add(conn)
            self._ever_connected = True
        reader = ShmReader(lend=self.leases)  # handlers get read-only views (ADR 0077)
        decoder = Decoder(reader)
        writer = ConnWriter(conn)
        acks = BatchAcks(writer, self.leases)
        frames = FrameDecoder(budget=self.frame_budget)
        peer = creds[0] if creds else "?"
        subscribed: list[str] = []  # names of this connection's subscriber sinks
        unfinished = False  # events sent since this client's last finish (or release)
        try:
            while True:
                # Straight into the frame's buffer; large frames within the shared budget.
                payloads = frames.read(conn, self.frame_stall_s)
                if payloads is None:
                    break
                for payload in payloads:
                    # Wait before decoding: decoding reads the batch's disk-pool arrays into
                    # memory. Only a batch waits: an operation (a finish that gave up on a hung
                    # handler, on a connection of its own) is answered however full the lanes are.
                    if bytes(payload[:2]) not in _NOT_BATCHES:
                        self._wait_for_room(_BATCH_ROOM)
                    refs = decoder.shm_refs
                    reader.lent = []
                    msg = decoder.decode(payload)
                    if type(msg) is Batch:
                        if not unfinished and type(peer) is int:
                            acks.serve(peer)  # this producer's slot releases come here
                        unfinished = True
                        # Acknowledged once its handlers took it, not now (ADR 0030). A frame
                        # without shared memory may travel on as it came (ADR 0079).
                        ticket = acks.ticket(msg.seq, reader.lent)
                        ticket.dropped = self.bus.put_rows(
                            msg.rows,
                            ticket=ticket,
                            redelivered=msg.redelivered,
                            frame=payload if decoder.shm_refs == refs else None,
                        )
                        del msg  # the lanes hold its rows: a lent view ends with them
                        ticket.settle()
                    elif type(msg) is Call:
                        if says_goodbye(msg):
                            unfinished = False
                        reply = self._call(msg, conn, writer, subscribed)
                        acks.send_ready()  # what a flush waited for is acknowledged before it
                        writer.send(reply)
                    elif type(msg) is Hello:
                        peer = msg.pid
                    else:
                        msg_ = f"unexpected message {type(msg).__name__} from a client"
                        raise FrameError(msg_)
        except FrameError as exc:
            self.bad_frames += 1
            if self.bad_frames <= 3:
                report(f"closing connection of pid {peer}: {exc}", host_name())
        except OSError:
            pass
        finally:
            frames.discard()  # gives back what this connection held of the frame budget
            writer.broken = True
            acks.close()
            for name in subscribed:
                self.bus.forget(name)
            reader.close()
            with contextlib.suppress(OSError):
                conn.close()
            with self._lock:
                self._conns.discard(conn)
                self._sub_conns.discard(conn)
                self.lost_producers += unfinished
                if not self._conns:
                    self._last_left = time.monotonic()

    def _end_of_run(self) -> None:
        """The last producer finished: its handlers end with it (ADR 0060). The next process
        attaches its own, even under the same names, and nothing it logs reaches these. Live
        subscribers' sinks stay."""
        forget = getattr(self.bus, "forget_finished", None)
        if forget is not None:
            forget({name for name in self.bus.handlers if not name.startswith(SUBSCRIBER_PREFIX)})

    def _wait_for_room(self, n: int) -> None:
        """Backpressure: while a handler lane is full, stop reading this socket.

        The host's handler lanes do not spill (the producers keep every unacknowledged batch,
        ADR 0030), so a full lane makes the host stop reading until it has room, however long:
        the producer's own buffers take the burst. Waiting happens before decoding, since
        decoding reads the batch's disk-pool arrays into memory (and lends its shared memory).
        With ``GOGGLES_WHEN_FULL=drop`` a nearly full lane (within one batch of its bound, or
        past half its bytes) holds each batch up to 2 s, as before ADR 0025. Subscriber lanes
        never count here.
        """
        bus = self.bus
        congested = getattr(bus, "congested", None)
        policy = getattr(bus, "policy", None)
        if congested is None or policy is None:
            return
        if policy.when_full is WhenFull.DROP:
            self._wait_as_before(n)
            return
        if not congested(n):
            return
        # The producers keep what the host has not acknowledged (ADR 0030): waiting here loses
        # nothing, so the host waits as long as it takes; a producer whose own buffers fill
        # spills, then blocks, then drops and counts, under its own policy.
        delay = 0.0001
        while congested(n) and not self._closing.is_set():
            time.sleep(delay)
            delay = min(delay * 2, _ROOM_POLL_S)

    def _wait_as_before(self, n: int) -> None:
        backlog = self.bus.backlog
        backlog_bytes = self.bus.backlog_bytes
        limit = self.bus.queue_size - n
        byte_limit = self.bus.queue_bytes // 2
        if limit <= 0:
            return
        deadline = time.monotonic() + _BACKPRESSURE_MAX_S
        delay = 0.0005
        while backlog() > limit or backlog_bytes() > byte_limit:
            if time.monotonic() >= deadline or self._closing.is_set():
                return
            time.sleep(delay)
            delay = min(delay * 2, 0.02)

    def _call(
        self, call: Call, conn: socket.socket, writer: ConnWriter, subscribed: list[str]
    ) -> Reply:
        args = call.args if isinstance(call.args, dict) else {}
        try:
            if call.op in ("subscribe", "sub_flush"):
                result = self._subscription(call.op, args, writer, subscribed)
            else:
                result = self._dispatch(call.op, args, conn)
        except Exception as exc:  # a bad spec or call must not take the host down
            self.failed_calls += 1
            text = f"{call.op} failed: {type(exc).__name__}: {exc}"
            # once per distinct failure; all are counted
            self._report_once(text, f"{text} (failed operations so far: {self.failed_calls})")
            return Reply(call.token, False, f"{type(exc).__name__}: {exc}")
        return Reply(call.token, True, result)

    def _subscription(
        self, op: str, args: dict[str, Any], writer: ConnWriter, subscribed: list[str]
    ) -> Any:
        """``subscribe`` attaches (or widens) this connection's sink; ``sub_flush`` drains it."""
        bus = self.bus
        if op == "subscribe":
            scopes = [str(s) for s in args.get("scopes") or ["global"]]
            kinds = args.get("kinds")
            with self._lock:
                self._sub_conns.add(writer.conn)
            if subscribed:
                sink = bus.handlers[subscribed[0]]
            else:
                self._subscribers += 1
                name = f"{SUBSCRIBER_PREFIX}{args.get('pid', '?')}.{self._subscribers}"
                sink = SubscriberSink(name, writer, list(kinds) if kinds else None)
                sink.queue_size = positive_bound(args.get("max_events"))
                sink.queue_bytes = positive_bound(args.get("max_bytes"))
                sink.backpressure = args.get("backpressure") is True
                subscribed.append(name)
            bus.attach(sink, scopes)
            sink.dropped = lambda: bus.dropped_count(sink.name)
            return sink.name
        timeout_s = args.get("timeout_s")
        timeout_s = float(timeout_s) if isinstance(timeout_s, (int, float)) else None
        done = all(bus.flush_handler(name, timeout_s) for name in subscribed)
        dropped = sum(bus.dropped_count(name) for name in subscribed)
        return {"done": done, "dropped": dropped}

    def _dispatch(self, op: str, args: dict[str, Any], conn: socket.socket) -> Any:
        bus = self.bus
        if op == "attach":
            handler = build_handler(args["spec"])
            with self._ops_lock:
                bus.attach(handler, list(args["scopes"]))
            return None
        if op == "replace":
            handler = build_handler(args["spec"])
            with self._ops_lock:
                bus.replace(handler, list(args["scopes"]), enable=bool(args["enable"]))
            return None
        if op == "detach":
            with self._ops_lock:
                bus.detach(str(args["name"]), str(args["scope"]), missing_ok=True)
            return None
        if op == "call":
            bus.call(str(args["name"]), str(args["method"]), args.get("payload"))
            return None
        timeout_s = args.get("timeout_s")
        timeout_s = float(timeout_s) if isinstance(timeout_s, (int, float)) else None
        deadline = args.get("deadline")
        if isinstance(deadline, (int, float)) and timeout_s is not None:
            timeout_s = max(0.0, min(timeout_s, float(deadline) - time.time()))
        stall_s = float(args["stall_s"]) if isinstance(args.get("stall_s"), (int, float)) else None
        if op == "flush":
            return bool(bus.flush(timeout_s, stall_s=stall_s))
        if op == "finish":
            # Close the handlers only when this is the last client; others keep logging.
            with self._lock:
                last = (self._conns - self._sub_conns) == {conn}
            if last:  # its report keeps the handlers detached since the last finish
                with self._lock:
                    self.lost_producers = 0  # a clean end: the handlers close as done
                with self._ops_lock:
                    done = bus.finish(timeout_s, stall_s=stall_s)
                    self._end_of_run()
                timed_out, tallies = done.timed_out, done.handlers
            else:
                timed_out, tallies = not bus.flush(timeout_s, stall_s=stall_s), bus.stats()
            stats = {name: tally.to_wire() for name, tally in tallies.items()}
            return {"timed_out": timed_out, "handlers": stats}
        msg = f"unknown host operation {op!r}"
        raise ValueError(msg)


_GC_YOUNG = 20_000  # tracked allocations between young collections (CPython's default: 700)


def _quiet_gc() -> None:
    """The dedicated host is our own process: freeze what its imports made, so full collections
    stop rescanning it, and collect the young generation less often, so events that a lane
    hands over soon die young instead of being promoted (the GC took ~0.8 us per event)."""
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(_GC_YOUNG, middle, old)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the dedicated host process."""
    parser = argparse.ArgumentParser(prog="python -m goggles_io._transport.host")
    parser.add_argument("--socket", required=True)
    parser.add_argument("--idle-timeout", type=float, default=1.0)
    args = parser.parse_args(argv)
    lock_fd = acquire_host_lock(args.socket)
    if lock_fd is None:
        return 0  # another host won the election; clients will find it
    # Handler classes (built-in ones too) are imported on first attach from their spec's module.
    from goggles_io._bus.bus import EventBus
    from goggles_io._bus.settings import read_settings
    from goggles_io._transport.host.heap import keep_freed_arrays
    from goggles_io._transport.settings import read_transport_settings

    for module in read_transport_settings().host_imports:
        try:
            importlib.import_module(module)
        except Exception as exc:
            report(f"GOGGLES_HOST_IMPORTS: cannot import {module!r}: {exc!r}", host_name())
    sweep_dead_segments()
    _quiet_gc()
    keep_freed_arrays()  # each array copied out reuses freed heap, not fresh pages (ADR 0053)
    settings = read_settings()
    bus = EventBus(
        async_mode=True,
        queue_size=settings.queue_size,
        queue_bytes=settings.queue_bytes,
        policy=settings.delivery,
    )
    host = Host(args.socket, bus, idle_timeout_s=args.idle_timeout, lock_fd=lock_fd)
    try:
        host.bind()
    except FileExistsError:
        return 0
    host.serve()
    return 0
