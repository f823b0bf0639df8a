"""The client's sender thread: take queued items (memory first, then the spillover), send them.

Items are events, batched into frames (:mod:`goggles_io._transport.batching`), or handler
operations (:class:`~goggles_io._transport.operations.Marker`), sent one at a time so they keep
their place. A batch is capped by what the host will hold once it copied the arrays out.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from typing import TYPE_CHECKING, Any

from goggles_io._event.records import ShmRef, approx_nbytes
from goggles_io._transport.framing import encode_frame
from goggles_io._transport.operations import Marker

if TYPE_CHECKING:
    from goggles_io._event.codec import Encoder
    from goggles_io._transport.batching import Batcher
    from goggles_io._transport.diskpool import DiskPool
    from goggles_io._transport.shm import ShmPool
    from goggles_io._transport.spillover import Spillover

__all__ = ["REPLAYED", "SenderThread", "load_modules", "loading_modules"]

# The codec (numpy, cattrs), the election and the pools are imported by the sender thread, so
# attach() and the first log calls never wait on them (ADR 0025). A fork while that import runs
# would leave the child with half-imported modules: the fork waits for it to end (bounded).
_LOADING = threading.Event()
_LOADED = threading.Event()


def loading_modules() -> None:
    """Say that a sender thread is about to import (called before it starts)."""
    if not _LOADED.is_set():
        _LOADING.set()


def load_modules() -> None:
    """Import what the sender thread needs; idempotent."""
    if _LOADED.is_set():
        return
    try:
        import goggles_io._event.codec
        import goggles_io._transport.batching
        import goggles_io._transport.election
        import goggles_io._transport.shm  # noqa: F401
    finally:
        _LOADED.set()


def _before_fork() -> None:
    if _LOADING.is_set() and not _LOADED.is_set():
        _LOADED.wait(10.0)


os.register_at_fork(before=_before_fork)

_BATCH_EVENTS = 1024
_BATCH_BYTES = 4 * 1024 * 1024  # a batch's events, so encoding one never doubles a big backlog
_IDLE_WAIT_S = 0.05
# Operations replayed, in order, on a new host (after a host death, or in a forked child).
REPLAYED = ("attach", "replace", "detach", "call")


class SenderThread:
    """The sending half of :class:`~goggles_io._transport.client.SocketClient`."""

    # Provided by SocketClient.
    _queue: deque[Any]
    _spill: Spillover
    _batcher: Batcher | None
    _lock: threading.Lock
    _wake: threading.Event
    _sleeping: bool
    _stop: bool
    _sock: Any
    _conn_gen: int
    _bytes_out: int
    _inflight: deque[tuple[int, bytes, int, list[Any]]]
    _pending: dict[int, Marker]
    _ops: list[Any]
    _pool: ShmPool | None
    _disk_pool: DiskPool | None
    transport: Any
    unencodable: int

    if TYPE_CHECKING:  # defined by SocketClient and HostLink

        def _connect(self) -> bool: ...

        def _disconnect(self, *, keep: bool, warn: bool, only: Any = None) -> None: ...

        def _warn_once(self, key: str, message: str) -> None: ...

        def _drained(self) -> None: ...

    def _send_loop(self) -> None:
        load_modules()
        from goggles_io._event.codec import Encoder
        from goggles_io._transport.batching import Batcher

        if self._batcher is None:
            self._batcher = Batcher(self._release, self._on_unencodable)
        batcher = self._batcher
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
                batcher.encoder = encoder
            items = self._take()
            if not items:
                self._drained()
                self._sleeping = True
                if not self._queue and not self._spill.active:
                    self._wake.wait(_IDLE_WAIT_S)
                self._wake.clear()
                self._sleeping = False
                continue
            try:
                self._send_items(items, encoder)
            except OSError:
                self._disconnect(keep=True, warn=True)
            except Exception as exc:  # a bug here must not stop all logging silently
                lost = sum(1 for item in items if type(item) is not Marker)
                self.unencodable += lost
                self._warn_once("send", f"{lost} events could not be sent and are dropped: {exc!r}")

    def _take(self) -> list[Any]:
        queue = self._queue
        if not queue:
            return self._spill.take() if self._spill.active else []
        items: list[Any] = []
        taken = 0  # bytes this batch will hold in the host
        threshold = self.transport.shm_threshold
        while queue and len(items) < _BATCH_EVENTS and taken < _BATCH_BYTES:
            item = queue[0]
            if type(item) is Marker:
                if items:
                    break
                items.append(queue.popleft())
                break
            items.append(queue.popleft())
            size = approx_nbytes(item)
            self._bytes_out += size
            payload = item.payload
            if type(payload) is ShmRef:
                taken += payload.nbytes
            elif size >= threshold:
                # A big array travelling inline ends the batch: the host's copy of it is a view
                # of the frame, so a frame of several would keep them all alive for the longest.
                break
            else:
                taken += size  # a batch is capped by what the host will hold once decoded
        return items

    def _send_items(self, items: list[Any], encoder: Encoder) -> None:
        sock = self._sock
        if sock is None:
            raise OSError("not connected")
        if type(items[0]) is Marker:
            marker = items[0]
            self._pending[marker.call.token] = marker
            if marker.call.op in REPLAYED:
                self._ops.append(marker.call)
            sock.sendall(encode_frame(encoder.encode(marker.call)))
            return
        assert self._batcher is not None
        for seq, frame, events, refs in self._batcher.frames(items):
            # Kept until the host says its handlers took it (ADR 0030).
            self._inflight.append((seq, frame, len(events), refs))
            sock.sendall(frame)

    def _on_unencodable(self, exc: Exception) -> None:
        self.unencodable += 1
        self._warn_once("enc", f"an event cannot be sent to the host and is dropped: {exc}")

    def _release(self, refs: list[Any]) -> None:
        pool, disk = self._pool, self._disk_pool
        for ref in refs:
            if ref.segment.startswith("/"):
                if disk is not None:
                    disk.release(ref.segment, ref.offset)
            elif pool is not None:
                pool.release(ref.segment, ref.offset)

    def _get_pool(self) -> ShmPool | None:
        if self._pool is None:
            from goggles_io._transport.shm import ShmPool, sweep_dead_segments

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
