"""timeit and trace_on_error: what they log and where they say it came from."""

from __future__ import annotations

import inspect

import pytest

import goggles_io as gg
from goggles_io.testing import MemoryHandler


@gg.timeit(severity=gg.INFO, name="step")
def _timed(x: int) -> int:
    return x * 2


@gg.trace_on_error()
def _risky(data: int, *, scale: float = 1.0) -> float:
    return data / 0


class TestTimeit:
    def test_returns_result_and_logs_duration(self, mem: MemoryHandler) -> None:
        """The wrapped function's result is returned and one INFO event says how long it took."""
        result = _timed(21)
        gg.flush()

        event = mem.events[0]
        assert (42, gg.INFO) == (result, event.level)
        assert event.payload.startswith("step took ")
        assert event.extra["duration_s"] >= 0

    def test_records_decorated_function_location(self, mem: MemoryHandler) -> None:
        """filepath/lineno are the decorated function's, not the decorator's."""
        _timed(1)
        gg.flush()

        event = mem.events[0]
        assert (__file__, inspect.getsourcelines(_timed.__wrapped__)[1]) == (
            event.filepath,
            event.lineno,
        )

    def test_unknown_severity_is_rejected(self) -> None:
        """timeit(severity='LOUD') raises InvalidLevelError at decoration time."""
        from goggles_io.exceptions import InvalidLevelError

        with pytest.raises(InvalidLevelError):
            gg.timeit(severity="LOUD")


class TestTraceOnError:
    def test_logs_traceback_and_arguments_then_reraises(self, mem: MemoryHandler) -> None:
        """The exception propagates; the event holds the traceback and the call's arguments."""
        with pytest.raises(ZeroDivisionError):
            _risky(10, scale=2.0)
        gg.flush()

        event = mem.events[0]
        assert gg.ERROR == event.level
        assert "ZeroDivisionError" in event.extra["exc_text"]
        assert (["10"], {"scale": "2.0"}) == (event.extra["args"], event.extra["kwargs"])
        assert "_risky(10, scale=2.0) raised ZeroDivisionError" == event.payload

    def test_records_decorated_function_location(self, mem: MemoryHandler) -> None:
        """filepath/lineno point at the decorated function."""
        with pytest.raises(ZeroDivisionError):
            _risky(1)
        gg.flush()

        assert (__file__, inspect.getsourcelines(_risky.__wrapped__)[1]) == (
            mem.events[0].filepath,
            mem.events[0].lineno,
        )

    def test_no_event_without_error(self, mem: MemoryHandler) -> None:
        """A call that does not raise logs nothing."""
        gg.trace_on_error()(lambda: 1)()
        gg.flush()

        assert [] == mem.events
