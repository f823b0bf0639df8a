"""capture_events(): the shipped fake for tests of runtime code."""

from __future__ import annotations

import logging

import attrs

from runtime_telemetry import TelemetryEvent, TelemetrySnapshot, configure, get_telemetry
from runtime_telemetry.testing import capture_events


@attrs.frozen(kw_only=True)
class CaptureTestPing(TelemetryEvent):
    pass


@attrs.frozen(kw_only=True)
class CaptureTestFrame(TelemetrySnapshot):
    pass


emitter = get_telemetry("robot.capture")


class TestCaptureEvents:
    def test_collects_events_and_snapshots(self) -> None:
        """Events and snapshots emitted in the block land in the yielded list, in order."""
        ping, frame = CaptureTestPing(), CaptureTestFrame()

        with capture_events() as captured:
            emitter.emit(ping)
            emitter.snapshot(frame)

        assert [ping, frame] == captured

    def test_works_while_telemetry_is_off(self) -> None:
        """The roots are lowered for the block even where telemetry was configured OFF."""
        configure({"telemetry": "OFF"})
        with capture_events() as captured:
            emitter.emit(CaptureTestPing())

        assert 1 == len(captured)

    def test_restores_levels_afterwards(self) -> None:
        """Levels of the captured loggers are back to what they were after the block."""
        before = logging.getLogger("telemetry").level

        with capture_events():
            pass

        assert before == logging.getLogger("telemetry").level

    def test_stops_capturing_after_the_block(self) -> None:
        """Nothing emitted after the block is added to the list."""
        with capture_events() as captured:
            pass
        emitter.emit(CaptureTestPing())

        assert [] == captured

    def test_limits_capture_to_named_loggers(self) -> None:
        """capture_events('telemetry.robot.other') ignores other modules."""
        with capture_events("telemetry.robot.other") as captured:
            emitter.emit(CaptureTestPing())

        assert [] == captured
