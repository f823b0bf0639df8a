"""One handler's delivery lane: a bounded queue drained by its own worker thread.

One lane per handler means a slow handler only ever delays itself. The queue is a C
``SimpleQueue`` (cheap ``put``, blocking ``get``) bounded by checking ``qsize()`` before the
put: when full the event is dropped and counted, the producer never blocks and memory never
grows past ``queue_size`` events (plus at most one per concurrent producer thread).
"""

from __future__ import annotations

import sys
import threading
from queue import SimpleQueue
from typing import Any

import attrs

from goggles_io._records import Event
from goggles_io.handlers.base import Handler

__all__ = ["HandlerStats", "Lane"]


@attrs.frozen
class HandlerStats:
    """Delivery tally of one handler, reported by ``finish()``."""

    delivered: int = 0
    dropped: int = 0
    errors: int = 0


class _Control:
    """A flush or close request travelling through the queue behind the events before it."""

    __slots__ = ("close", "done")

    def __init__(self, close: bool) -> None:
        self.close = close
        self.done = threading.Event()


def _report(message: str) -> None:
    # Straight to stderr: a diagnostics logger nobody configured must not swallow it.
    try:
        sys.stderr.write(f"goggles_io: {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


class Lane:
    """Deliver events to one handler, asynchronously (own thread) or synchronously (caller)."""

    def __init__(self, handler: Handler, *, async_mode: bool, queue_size: int) -> None:
        self.handler = handler
        self.name: str = handler.name
        self.kinds = frozenset(getattr(handler, "capabilities", ()))
        self.level: int = int(getattr(handler, "level", 0) or 0)
        self.scopes: set[str] = set()
        self.async_mode = async_mode
        self.queue_size = queue_size
        self.delivered = 0
        self.dropped = 0
        self.errors = 0
        self.broken = False  # open() failed: every event is a counted drop
        self._queue: SimpleQueue[Any] = SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._reported: set[str] = set()

    # -- lifecycle --------------------------------------------------------------------------
    def start(self) -> bool:
        """Open the handler and start the worker; ``False`` (reported once) if open() fails."""
        try:
            self.handler.open()
        except Exception as exc:
            self.broken = True
            self._report_once(
                "open",
                f"handler {self.name!r} could not be opened ({exc!r}); "
                "its events are dropped and counted",
            )
            return False
        self.broken = False
        if self.async_mode:
            self._queue = SimpleQueue()
            self._thread = threading.Thread(
                target=self._run, name=f"goggles_io:{self.name}", daemon=True
            )
            self._thread.start()
        return True

    def restart_after_fork(self) -> None:
        """Give the child its own lock, queue and thread (the parent's thread is not copied)."""
        self._lock = threading.Lock()
        self._thread = None
        if self.async_mode and not self.broken:
            self._queue = SimpleQueue()
            self._thread = threading.Thread(
                target=self._run, name=f"goggles_io:{self.name}", daemon=True
            )
            self._thread.start()

    def flush(self, timeout_s: float | None) -> bool:
        """Wait until every event offered so far was handled and the handler flushed."""
        return self._control(close=False, timeout_s=timeout_s)

    def close(self, timeout_s: float | None) -> bool:
        """Deliver what is queued, flush and close the handler, stop the worker."""
        done = self._control(close=True, timeout_s=timeout_s)
        if done and self._thread is not None:
            self._thread.join(timeout_s)
        if not done:
            pending = self._queue.qsize()
            with self._lock:
                self.dropped += pending
            self._report_once(
                "close",
                f"handler {self.name!r} did not finish in time; "
                f"{pending} queued events counted as dropped",
            )
        self._thread = None
        return done

    def _control(self, *, close: bool, timeout_s: float | None) -> bool:
        if self.broken:
            return True
        if self._thread is None or not self.async_mode:
            with self._lock:
                self._safe(self.handler.flush)
                if close:
                    self._safe(self.handler.close)
            return True
        request = _Control(close)
        self._queue.put(request)
        return request.done.wait(timeout_s)

    # -- hot path ---------------------------------------------------------------------------
    def offer(self, event: Event) -> None:
        """Queue (async) or handle (sync) one event; never blocks on a full queue."""
        if self._thread is not None:
            if self._queue.qsize() >= self.queue_size:
                self._drop("queue full")
                return
            self._queue.put(event)
        elif self.broken:
            self._drop("handler could not be opened")
        else:
            with self._lock:
                self._deliver(event)

    def _drop(self, why: str) -> None:
        with self._lock:
            self.dropped += 1
        if why not in self._reported:
            self._report_once(why, f"handler {self.name!r}: {why}; dropping events and counting")

    def _deliver(self, event: Event) -> None:
        try:
            self.handler.handle(event)
        except Exception as exc:
            self.errors += 1
            self._report_once(
                f"handle:{type(exc).__name__}",
                f"handler {self.name!r} raised {exc!r} (further errors counted, not shown)",
            )
        else:
            self.delivered += 1

    def _run(self) -> None:
        queue = self._queue
        while True:
            item = queue.get()
            if item.__class__ is _Control:
                self._safe(self.handler.flush)
                if item.close:
                    self._safe(self.handler.close)
                    item.done.set()
                    return
                item.done.set()
            else:
                self._deliver(item)

    # -- diagnostics ------------------------------------------------------------------------
    def _safe(self, fn: Any) -> None:
        try:
            fn()
        except Exception as exc:
            self.errors += 1
            self._report_once(
                f"{fn.__name__}:{type(exc).__name__}",
                f"handler {self.name!r}.{fn.__name__}() raised {exc!r}",
            )

    def _report_once(self, key: str, message: str) -> None:
        if key in self._reported:
            return
        self._reported.add(key)
        _report(message)

    def stats(self) -> HandlerStats:
        """Return the tally so far."""
        return HandlerStats(delivered=self.delivered, dropped=self.dropped, errors=self.errors)
