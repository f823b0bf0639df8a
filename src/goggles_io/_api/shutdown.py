"""``GracefulShutdown``: turn SIGINT/SIGTERM into a flag that a training loop polls."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterable
from types import FrameType, TracebackType
from typing import Any

from goggles_io.exceptions import ShutdownError

__all__ = ["GracefulShutdown", "ShutdownError"]

_Handler = Any  # what signal.getsignal returns: a callable, an int constant, or None


class GracefulShutdown:
    """Context manager that records SIGINT/SIGTERM instead of dying mid-step.

    Inside the ``with`` block the first signal only sets a flag (``requested``, also ``bool(gs)``);
    the loop checks it, finishes its step, saves and leaves. The signal handler does nothing else
    (no I/O, no locks), so it cannot deadlock with code it interrupts. With
    ``raise_on_second=True`` (the default) a second signal raises ``KeyboardInterrupt``, so a
    stuck loop can still be stopped with a second Ctrl-C. The previous handlers are restored on
    exit, also when the block raises. Signal handlers can only be installed from the main
    thread, so entering elsewhere raises ``ShutdownError``.

    robo-goggles' form works unchanged: ``with GracefulShutdown(exit_message="...") as gs:
    while not gs.stop: ...``. The message is logged (INFO, logger ``goggles_io.shutdown``) when
    the loop first sees the request, or on leaving the block, never from the signal handler.

    Args:
        exit_message: logged once after a shutdown signal arrived; ``None`` logs nothing.
        signals: the signals to catch; SIGINT and SIGTERM by default.
        raise_on_second: raise ``KeyboardInterrupt`` on the second caught signal.
    """

    def __init__(
        self,
        exit_message: str | None = None,
        *,
        signals: Iterable[int] = (signal.SIGINT, signal.SIGTERM),
        raise_on_second: bool = True,
    ) -> None:
        if exit_message is not None and not isinstance(exit_message, str):
            msg = f"exit_message must be a str or None (got {exit_message!r})."
            raise TypeError(msg)
        self.exit_message = exit_message
        self._announced = False
        chosen = tuple(signals)
        if not chosen:
            msg = f"signals must name at least one signal (got {signals!r})."
            raise ValueError(msg)
        valid = signal.valid_signals()
        for signum in chosen:
            if signum not in valid or signum in (signal.SIGKILL, signal.SIGSTOP):
                msg = f"signals holds {signum!r}, which cannot be caught; pass e.g. signal.SIGINT."
                raise ValueError(msg)
        self._signals = tuple(signal.Signals(s) for s in dict.fromkeys(chosen))
        self._raise_on_second = bool(raise_on_second)
        self._previous: dict[signal.Signals, _Handler] = {}
        self._active = False
        self.count = 0
        self.signal: signal.Signals | None = None

    @property
    def requested(self) -> bool:
        """Whether a shutdown signal arrived since the block was entered."""
        if self.count > 0:
            self._announce()
            return True
        return False

    @property
    def stop(self) -> bool:
        """robo-goggles' name for :attr:`requested`: ``while not gs.stop: ...``.

        Settable, as robo-goggles' plain attribute is: ``gs.stop = True`` ends the loop from
        the code itself (it counts as one request, without a signal).
        """
        return self.requested

    @stop.setter
    def stop(self, value: bool) -> None:
        self.count = max(self.count, 1) if value else 0
        if not value:
            self.signal = None

    def __bool__(self) -> bool:
        return self.requested

    def _announce(self) -> None:
        """Log ``exit_message`` once, in the loop's thread (signal handlers must not do I/O)."""
        if self._announced or self.exit_message is None:
            return
        self._announced = True
        from goggles_io._api.get_logger import get_logger

        get_logger("goggles_io.shutdown").info(self.exit_message)

    def __repr__(self) -> str:
        names = ", ".join(s.name for s in self._signals)
        return f"GracefulShutdown(signals=[{names}], requested={self.requested})"

    def __enter__(self) -> GracefulShutdown:
        if threading.current_thread() is not threading.main_thread():
            msg = (
                "GracefulShutdown must be entered from the main thread (entered from "
                f"{threading.current_thread().name!r}); signal handlers run only there."
            )
            raise ShutdownError(msg)
        if self._active:
            msg = f"{self!r} is already active; create a new GracefulShutdown per block."
            raise ShutdownError(msg)
        self.count = 0
        self.signal = None
        self._announced = False
        installed: dict[signal.Signals, _Handler] = {}
        try:
            for signum in self._signals:
                installed[signum] = signal.signal(signum, self._on_signal)
        except BaseException:
            _restore(installed)
            raise
        self._previous = installed
        self._active = True
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        _restore(self._previous)
        self._previous = {}
        self._active = False
        if self.count > 0:
            self._announce()

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        # Runs between bytecodes of the main thread: integer updates only.
        self.count += 1
        self.signal = signal.Signals(signum)
        if self._raise_on_second and self.count > 1:
            raise KeyboardInterrupt


def _restore(previous: dict[signal.Signals, _Handler]) -> None:
    for signum, handler in previous.items():
        # None means "installed from C, not Python": the default action is the closest we can do.
        signal.signal(signum, signal.SIG_DFL if handler is None else handler)
