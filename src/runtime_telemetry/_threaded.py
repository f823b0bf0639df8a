"""``ThreadedSubscriber``: callbacks on a worker thread, fed by a bounded queue that never blocks."""

from __future__ import annotations

import logging
import os
import threading
import weakref
from collections import deque

from runtime_telemetry._schema import TelemetrySchema
from runtime_telemetry._subscriber import Subscriber, _logger
from runtime_telemetry.exceptions import TelemetryTypeError, TelemetryValueError

__all__ = ["ThreadedSubscriber"]

_DEFAULT_QUEUE_SIZE = 10_000
_DEFAULT_TIMEOUT = 10.0


class _Control:
    """A private queue token (flush or close): never a schema, never seen by callbacks."""

    __slots__ = ("closing", "done")

    def __init__(self, closing: bool) -> None:
        self.closing = closing
        self.done = threading.Event()


class ThreadedSubscriber(Subscriber):
    """A ``Subscriber`` whose callbacks run on its own thread, off the emitting thread.

    The emitting thread only appends to a bounded queue: when ``queue_size`` events are
    waiting, new ones are dropped and counted in ``dropped`` (the first drop is reported on
    the ``runtime_telemetry`` logger), so a slow subscriber can never stall the runtime.
    ``close(timeout=...)`` delivers what is queued, joins the thread and reports the drops;
    it stops the worker with a private token, so nothing appears on the data plane. After
    ``os.fork()`` the child starts with an empty queue and a fresh worker.

    Raises:
        TelemetryTypeError / TelemetryValueError: ``queue_size`` is not an int >= 1.
    """

    def __init__(self, queue_size: int = _DEFAULT_QUEUE_SIZE, level: int = logging.NOTSET) -> None:
        if isinstance(queue_size, bool) or not isinstance(queue_size, int):
            msg = f"queue_size must be an int >= 1 (got {queue_size!r})."
            raise TelemetryTypeError(msg, queue_size)
        if queue_size < 1:
            msg = (
                f"queue_size must be >= 1 (got {queue_size!r}); pass a positive int, or leave "
                f"it out for the default {_DEFAULT_QUEUE_SIZE}."
            )
            raise TelemetryValueError(msg, queue_size)
        super().__init__(level)
        self.queue_size = queue_size
        self.dropped = 0
        self._closing = False
        self._start()
        _live.add(self)

    def __repr__(self) -> str:
        return f"<{type(self).__qualname__} dropped={self.dropped} errors={self.errors}>"

    def _start(self) -> None:
        # deque appends and pops are atomic; the handler lock orders producers among
        # themselves, and the worker is the only consumer.
        self._queue: deque[TelemetrySchema | _Control] = deque()
        self._wake = threading.Event()
        self._worker = threading.Thread(
            target=self._run,
            args=(self._queue, self._wake),
            name=f"{type(self).__qualname__}-worker",
            daemon=True,
        )
        self._worker.start()

    def emit_schema(self, name: str, level: int, schema: TelemetrySchema) -> None:
        """Queue the schema, or drop and count it when the queue is full or closed."""
        queue = self._queue
        if len(queue) >= self.queue_size or self._closing:
            self._drop()
            return
        queue.append(schema)
        # Append before testing the flag; the worker clears it before draining (no lost wake).
        if not self._wake.is_set():
            self._wake.set()

    def flush(self, timeout: float | None = _DEFAULT_TIMEOUT) -> bool:  # type: ignore[override]
        """Wait until everything queued so far is delivered; False if ``timeout`` s ran out."""
        _check_timeout(timeout)
        if self._closing or threading.current_thread() is self._worker:
            return not self._queue
        token = _Control(closing=False)
        with self.lock:
            self._queue.append(token)
        self._wake.set()
        return token.done.wait(timeout)

    def close(self, timeout: float | None = _DEFAULT_TIMEOUT) -> bool:  # type: ignore[override]
        """Detach, deliver what is queued, join the worker and report drops; idempotent.

        Returns:
            True if the queue was fully delivered within ``timeout`` seconds (None: no limit).
        """
        _check_timeout(timeout)
        self._detach()
        token = _Control(closing=True)
        with self.lock:
            first_close = not self._closing
            self._closing = True
            if first_close:
                self._queue.append(token)
        self._wake.set()
        if threading.current_thread() is not self._worker:
            self._worker.join(timeout)
        drained = not self._worker.is_alive()
        if first_close:
            undelivered = 0 if drained else sum(1 for x in self._queue if type(x) is not _Control)
            if self.dropped:
                _logger.warning(
                    "%r dropped %d event(s) because its queue (queue_size=%d) was full",
                    self,
                    self.dropped,
                    self.queue_size,
                )
            if undelivered:
                _logger.warning(
                    "%r closed after %s s with %d event(s) still undelivered",
                    self,
                    timeout,
                    undelivered,
                )
        super().close()
        return drained

    def _drop(self) -> None:
        self.dropped += 1
        if self.dropped == 1:
            _logger.warning(
                "%r: queue full (queue_size=%d); dropping events and counting them in .dropped",
                self,
                self.queue_size,
            )

    def _run(self, queue: deque[TelemetrySchema | _Control], wake: threading.Event) -> None:
        while True:
            wake.wait()
            wake.clear()
            while queue:
                item = queue.popleft()
                if isinstance(item, _Control):
                    item.done.set()
                    if item.closing:
                        return
                    continue
                self._deliver(item)

    def _restart_after_fork(self) -> None:
        """In a fork child: the parent's worker is gone and its queue belongs to the parent."""
        if self._closing:
            return
        self.dropped = 0
        self.errors = 0
        self._start()


def _check_timeout(timeout: float | None) -> None:
    if timeout is None:
        return
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        msg = f"timeout must be seconds as a float >= 0, or None (got {timeout!r})."
        raise TelemetryTypeError(msg, timeout)
    if not timeout >= 0:
        msg = f"timeout must be >= 0 seconds, or None to wait forever (got {timeout!r})."
        raise TelemetryValueError(msg, timeout)


_live: weakref.WeakSet[ThreadedSubscriber] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for subscriber in list(_live):
        subscriber._restart_after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
