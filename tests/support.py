"""Helpers shared by the test suites: condition waits instead of sleeps, and child processes
that behave the same however the suite was started and never outlive their test."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

T = TypeVar("T")
# Children started in a process group of their own: stop() kills the whole group.
_GROUP_LEADERS: weakref.WeakSet[subprocess.Popen[Any]] = weakref.WeakSet()

__all__ = [
    "ctrl_c_reaches_us",
    "expect_line",
    "send_line",
    "start",
    "started",
    "stop",
    "wait_until",
]


def wait_until(
    predicate: Callable[[], T], timeout_s: float = 30.0, interval_s: float = 0.005, what: str = ""
) -> T:
    """Poll ``predicate`` until it returns a truthy value; fail loudly after ``timeout_s``.

    Tests wait on conditions, never on fixed sleeps: CI machines have 2 noisy cores.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() > deadline:
            msg = f"condition not met within {timeout_s} s: {what or predicate!r}"
            raise AssertionError(msg)
        time.sleep(interval_s)


@contextlib.contextmanager
def _sigint_default_in_children() -> Iterator[dict[str, Any]]:
    """Give a child started inside the block the default SIGINT disposition.

    A suite started in the background by a non-interactive shell (``nohup``, many CI runners)
    inherits SIGINT *ignored*, and exec keeps an ignored signal ignored: a test's Ctrl-C then
    never reaches its child. A *caught* signal is reset to the default at exec (POSIX), so the
    main thread catches SIGINT for the instant of the fork; other threads, which cannot touch
    signal handlers, reset it in the child before exec instead. Yields extra ``Popen`` kwargs.
    """
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        yield {}
    elif threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            yield {}
        finally:
            signal.signal(signal.SIGINT, previous)
    else:
        yield {"preexec_fn": lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)}


@contextlib.contextmanager
def ctrl_c_reaches_us() -> Iterator[None]:
    """Inside the block, SIGINT raises ``KeyboardInterrupt`` in this process, as in a terminal.

    A test that sends itself Ctrl-C would wait in vain in a suite started with SIGINT ignored
    (see :func:`_sigint_default_in_children`); the previous disposition comes back after.
    """
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def start(argv: Sequence[str], **kwargs: Any) -> subprocess.Popen[Any]:
    """``subprocess.Popen(argv, **kwargs)`` whose child starts with SIGINT at its default.

    Prefer :func:`started`, which also stops the child; use this where a fixture owns the stop.
    """
    with _sigint_default_in_children() as extra:
        proc = subprocess.Popen(list(argv), **kwargs, **extra)
    if kwargs.get("start_new_session") or kwargs.get("process_group") == 0:
        _GROUP_LEADERS.add(proc)
    return proc


def stop(proc: subprocess.Popen[Any], timeout_s: float = 30.0) -> None:
    """Kill ``proc`` (its whole process group when it leads one) if still running, and reap it.

    Safe to call twice and after the child exited; closes its pipes so no descriptor leaks.
    """
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if proc in _GROUP_LEADERS:  # its workers too, even when the leader already exited
            os.killpg(proc.pid, signal.SIGKILL)
        elif proc.poll() is None:
            proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired, ValueError, OSError):
        proc.communicate(timeout=timeout_s)
    if proc.poll() is None:
        proc.wait(timeout=timeout_s)


@contextlib.contextmanager
def started(argv: Sequence[str], **kwargs: Any) -> Iterator[subprocess.Popen[Any]]:
    """:func:`start` a child for the block and :func:`stop` it on the way out, whatever failed.

    A test that waits on ``proc.wait(timeout=...)`` and times out must not leave a server
    running after pytest ends; this is the one place that guarantees it.
    """
    proc = start(argv, **kwargs)
    try:
        yield proc
    finally:
        stop(proc)


def send_line(proc: subprocess.Popen[str], line: str) -> None:
    """Tell a scripted child (text stdin) one line of its step-by-step protocol."""
    assert proc.stdin is not None
    proc.stdin.write(line + "\n")
    proc.stdin.flush()


def expect_line(proc: subprocess.Popen[str], want: str) -> None:
    """Read the scripted child's next line: ``want``, else kill it and fail with all it said."""
    assert proc.stdout is not None
    got = proc.stdout.readline().strip()
    if got != want:
        proc.kill()
        out, err = proc.communicate(timeout=30)
        raise AssertionError(f"expected {want!r}, got {got!r}\nstdout:\n{out}\nstderr:\n{err}")
