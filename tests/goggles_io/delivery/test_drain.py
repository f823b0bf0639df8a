"""``wait_while_progressing``: waits while a real worker thread drains, gives up on a stall only."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from goggles_io._delivery.drain import (
    DEFAULT_FINISH_STALL_S,
    read_finish_stall,
    wait_while_progressing,
)
from goggles_io.exceptions import ConfigurationError
from support import ctrl_c_reaches_us


class _Worker:
    """A thread that takes one item every ``cost_s`` until told to stall or ``left`` is 0."""

    def __init__(self, items: int, cost_s: float) -> None:
        self.left = items
        self.taken = 0
        self.cost_s = cost_s
        self.stall = threading.Event()
        self.stop = threading.Event()
        self._lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            if self.stall.is_set():
                self.stop.wait(0.01)
                continue
            with self._lock:
                if self.left == 0:
                    return
                self.left -= 1
                self.taken += 1
            time.sleep(self.cost_s)

    def __enter__(self) -> _Worker:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(10)


def test_a_slow_worker_that_keeps_going_is_waited_for_past_the_stall_deadline() -> None:
    """The total wait (~1 s) is far past stall_s (0.3 s): progress keeps it going."""
    with _Worker(items=200, cost_s=0.005) as worker:
        outcome = wait_while_progressing(
            lambda: worker.left, stall_s=0.3, what="slow", taken=lambda: worker.taken
        )
    assert outcome.drained
    assert outcome.left == 0
    assert worker.taken == 200
    assert outcome.elapsed_s > 0.3


def test_progress_read_from_left_alone_also_counts() -> None:
    with _Worker(items=100, cost_s=0.005) as worker:
        outcome = wait_while_progressing(lambda: worker.left, stall_s=0.3, what="slow")
    assert outcome.drained and worker.taken == 100


def test_a_stalled_worker_is_given_up_after_stall_s_with_the_count() -> None:
    with _Worker(items=1_000, cost_s=0.001) as worker:
        deadline = time.monotonic() + 30
        while worker.taken < 50 and time.monotonic() < deadline:
            time.sleep(0.001)
        worker.stall.set()
        start = time.monotonic()
        outcome = wait_while_progressing(
            lambda: worker.left, stall_s=0.4, what="stuck", taken=lambda: worker.taken
        )
        waited = time.monotonic() - start
        left_then = worker.left
    assert outcome.stalled and not outcome.abandoned and not outcome.drained
    assert outcome.left == left_then > 0
    assert 0.4 <= waited < 5


def test_done_ends_the_wait() -> None:
    finished = threading.Event()
    threading.Timer(0.1, finished.set).start()
    outcome = wait_while_progressing(
        lambda: 5, stall_s=float("inf"), what="x", done=finished.is_set
    )
    assert outcome.left == 5 and not outcome.stalled and not outcome.abandoned


def test_nothing_left_returns_at_once() -> None:
    outcome = wait_while_progressing(lambda: 0, stall_s=10, what="x")
    assert outcome.drained and outcome.elapsed_s < 0.5


def test_a_limit_abandons_even_while_progressing() -> None:
    with _Worker(items=10_000, cost_s=0.001) as worker:
        outcome = wait_while_progressing(
            lambda: worker.left, stall_s=10, what="x", limit_s=0.2, taken=lambda: worker.taken
        )
    assert outcome.abandoned and outcome.left > 0 and 0.2 <= outcome.elapsed_s < 5


def test_a_long_wait_reports_progress_on_stderr(capfd: pytest.CaptureFixture[str]) -> None:
    with _Worker(items=300, cost_s=0.002) as worker:
        outcome = wait_while_progressing(
            lambda: worker.left, stall_s=5, what="wandb", report_every_s=0.1
        )
    assert outcome.drained
    err = capfd.readouterr().err
    assert "goggles_io: finishing: " in err
    assert "events left for wandb" in err and "/s" in err


def test_ctrl_c_abandons_the_wait_with_the_counts() -> None:
    """A real SIGINT from another thread ends the wait at once; no traceback, the count kept."""
    assert threading.current_thread() is threading.main_thread()
    with ctrl_c_reaches_us():
        threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()
        start = time.monotonic()
        outcome = wait_while_progressing(lambda: 7, stall_s=30, what="x")
    assert outcome.abandoned and not outcome.stalled
    assert outcome.left == 7
    assert time.monotonic() - start < 5


def test_finish_stall_knob() -> None:
    assert read_finish_stall({}) == DEFAULT_FINISH_STALL_S == 30.0
    assert read_finish_stall({"GOGGLES_FINISH_STALL": "2.5"}) == 2.5
    assert read_finish_stall({"GOGGLES_SHUTDOWN_TIMEOUT": "180"}) == 180.0
    both = {"GOGGLES_SHUTDOWN_TIMEOUT": "180", "GOGGLES_FINISH_STALL": "4"}
    assert read_finish_stall(both) == 4.0
    with pytest.raises(ConfigurationError, match="GOGGLES_FINISH_STALL"):
        read_finish_stall({"GOGGLES_FINISH_STALL": "soon"})
