"""ThreadedSubscriber: never blocks the emitter, counts drops, drains on close, survives fork."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

import attrs
import pytest

from runtime_telemetry import (
    TelemetryEvent,
    TelemetrySchema,
    ThreadedSubscriber,
    configure,
    get_telemetry,
)
from runtime_telemetry.exceptions import TelemetryTypeError, TelemetryValueError
from support import wait_until

SCRIPTS = Path(__file__).parent / "scripts"


@attrs.frozen(kw_only=True)
class ThreadTestTick(TelemetryEvent):
    n: int


class Collector(ThreadedSubscriber):
    """Keeps what it receives; blocks in the callback while ``gate`` is clear."""

    def __init__(self, queue_size: int = 1000) -> None:
        super().__init__(queue_size=queue_size)
        self.received: list[int] = []
        self.threads: set[str] = set()
        self.entered = threading.Event()
        self.gate = threading.Event()
        self.gate.set()

    def on_event(self, schema: TelemetrySchema) -> None:
        self.threads.add(threading.current_thread().name)
        self.entered.set()
        self.gate.wait()
        self.received.append(schema.n)  # type: ignore[attr-defined]


class Failing(ThreadedSubscriber):
    def on_event(self, schema: TelemetrySchema) -> None:
        raise RuntimeError("worker bug")


@pytest.fixture(autouse=True)
def _enabled() -> None:
    configure({"telemetry": "INFO"})


emitter = get_telemetry("robot.threaded")


def emit_ticks(*numbers: int) -> None:
    for n in numbers:
        emitter.emit(ThreadTestTick(n=n))


class TestDelivery:
    def test_callbacks_run_on_the_worker_thread(self) -> None:
        """Events are delivered off the emitting thread."""
        collector = Collector().subscribe()

        emit_ticks(1)
        collector.flush(timeout=30)

        assert threading.current_thread().name not in collector.threads

    def test_delivers_in_order(self) -> None:
        """Events arrive in the order they were emitted."""
        collector = Collector().subscribe()

        emit_ticks(*range(50))
        collector.flush(timeout=30)

        assert list(range(50)) == collector.received

    def test_flush_returns_false_when_the_timeout_runs_out(self) -> None:
        """flush() waits at most ``timeout`` seconds and says whether it got there."""
        collector = Collector().subscribe()
        collector.gate.clear()
        emit_ticks(1)

        flushed = collector.flush(timeout=0.01)
        collector.gate.set()

        assert (False, True) == (flushed, collector.flush(timeout=30))


class TestFullQueue:
    def test_full_queue_counts_drop_and_does_not_block(self) -> None:
        """With the worker stuck, events beyond queue_size are dropped and counted at once."""
        collector = Collector(queue_size=2).subscribe()
        collector.gate.clear()
        emit_ticks(0)
        wait_until(collector.entered.is_set, what="worker entered the callback")

        emit_ticks(1, 2, 3, 4, 5)  # returns although the worker is blocked

        assert 3 == collector.dropped
        collector.gate.set()
        collector.close(timeout=30)
        assert [0, 1, 2] == collector.received

    def test_first_drop_is_reported_once(self, caplog: pytest.LogCaptureFixture) -> None:
        """One warning on the runtime_telemetry logger for the first drop, none for later."""
        collector = Collector(queue_size=1).subscribe()
        collector.gate.clear()
        emit_ticks(0)
        wait_until(collector.entered.is_set, what="worker entered the callback")
        caplog.set_level(logging.WARNING, logger="runtime_telemetry")

        emit_ticks(1, 2, 3, 4)

        assert 1 == len([r for r in caplog.records if "queue full" in r.getMessage()])
        collector.gate.set()


class TestClose:
    def test_close_drains_the_queue(self) -> None:
        """Everything queued before close() is delivered before it returns True."""
        collector = Collector().subscribe()
        collector.gate.clear()
        emit_ticks(*range(20))
        collector.gate.set()

        drained = collector.close(timeout=None)

        assert (True, list(range(20))) == (drained, collector.received)

    def test_close_stops_the_worker(self) -> None:
        """After close() the worker thread has ended."""

        # Compare thread sets, not counts: another test's worker may end meanwhile.
        before = set(threading.enumerate())
        collector = Collector().subscribe()
        (worker,) = set(threading.enumerate()) - before

        collector.close(timeout=30)

        assert ("Collector-worker", False) == (worker.name, worker.is_alive())

    def test_close_reports_drops(self, caplog: pytest.LogCaptureFixture) -> None:
        """close() logs the drop count on the runtime_telemetry logger."""
        collector = Collector(queue_size=1).subscribe()
        collector.gate.clear()
        emit_ticks(0)
        wait_until(collector.entered.is_set, what="worker entered the callback")
        emit_ticks(1, 2, 3)
        collector.gate.set()
        caplog.set_level(logging.WARNING, logger="runtime_telemetry")

        collector.close(timeout=30)

        assert any("dropped 2 event(s)" in r.getMessage() for r in caplog.records)

    def test_close_times_out_with_a_stuck_callback(self, caplog: pytest.LogCaptureFixture) -> None:
        """close(timeout) returns False and reports what is undelivered if the worker is stuck."""
        collector = Collector().subscribe()
        collector.gate.clear()
        emit_ticks(0, 1, 2)
        wait_until(collector.entered.is_set, what="worker entered the callback")
        caplog.set_level(logging.WARNING, logger="runtime_telemetry")

        drained = collector.close(timeout=0.01)
        collector.gate.set()
        collector.close(timeout=30)  # join the worker so it cannot outlive this test

        assert (False, True) == (
            drained,
            any("2 event(s) still undelivered" in r.getMessage() for r in caplog.records),
        )

    def test_close_is_idempotent(self) -> None:
        """A second close() returns True at once."""
        collector = Collector().subscribe()
        collector.close(timeout=30)

        assert collector.close(timeout=30)

    def test_events_after_close_are_not_delivered(self) -> None:
        """The closed subscriber is detached; later events never reach it."""
        collector = Collector().subscribe()
        collector.close(timeout=30)

        emit_ticks(1)

        assert [] == collector.received

    def test_worker_exceptions_are_counted(self) -> None:
        """A failing callback on the worker is counted in ``errors``, not raised."""
        failing = Failing().subscribe()

        emit_ticks(1, 2, 3)
        failing.close(timeout=30)

        assert 3 == failing.errors


class TestValidation:
    @pytest.mark.parametrize("size", [0, -5])
    def test_queue_size_below_one_raises(self, size: int) -> None:
        """queue_size must be >= 1."""
        with pytest.raises(TelemetryValueError, match="queue_size"):
            ThreadedSubscriber(queue_size=size)

    @pytest.mark.parametrize("size", [True, 2.0, "10"])
    def test_queue_size_of_wrong_type_raises(self, size: object) -> None:
        """queue_size must be an int (not a bool)."""
        with pytest.raises(TelemetryTypeError, match="queue_size"):
            ThreadedSubscriber(queue_size=size)  # type: ignore[arg-type]

    @pytest.mark.parametrize(
        ("timeout", "error"),
        [(-1, TelemetryValueError), (float("nan"), TelemetryValueError), ("1", TelemetryTypeError)],
    )
    def test_bad_timeout_raises(self, timeout: object, error: type[Exception]) -> None:
        """close(timeout) takes seconds >= 0 or None."""
        collector = Collector()

        with pytest.raises(error, match="timeout"):
            collector.close(timeout=timeout)  # type: ignore[arg-type]
        collector.close(timeout=30)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
class TestFork:
    def test_parent_and_child_both_deliver_after_fork(self) -> None:
        """After fork the child gets a fresh worker and empty queue; the parent keeps its own."""
        result = subprocess.run(
            [sys.executable, str(SCRIPTS / "threaded_after_fork.py")],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        reports = {
            line["who"]: line for line in map(json.loads, result.stdout.splitlines()) if line
        }

        assert 0 == result.returncode, result.stderr
        assert {
            "parent": {"who": "parent", "received": ["parent:0", "parent:2"], "drained": True},
            "child": {"who": "child", "received": ["parent:0", "child:1"], "drained": True},
        } == reports
