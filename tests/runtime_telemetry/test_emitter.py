"""Emitters: cached per module, level check first, records carry the schema and the caller."""

from __future__ import annotations

import logging

import attrs
import pytest

from runtime_telemetry import (
    OFF,
    TRACE,
    TelemetryEvent,
    TelemetrySnapshot,
    configure,
    get_telemetry,
    getTelemetry,
)
from runtime_telemetry.exceptions import SchemaTypeError, TelemetryTypeError


@attrs.frozen(kw_only=True)
class EmitterTestPing(TelemetryEvent):
    n: int = 0


@attrs.frozen(kw_only=True)
class EmitterTestFrame(TelemetrySnapshot):
    n: int = 0


class RecordList(logging.Handler):
    """A plain stdlib handler that keeps the records it sees."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def records() -> list[logging.LogRecord]:
    handler = RecordList()
    for name in ("telemetry", "snapshots"):
        logging.getLogger(name).addHandler(handler)
    configure({"telemetry": "INFO", "snapshots": "TRACE"})
    return handler.records


def emit_from_runtime_code(n: int) -> int:
    """Stands in for runtime code; returns the line that emits."""
    get_telemetry("robot.arm").emit(EmitterTestPing(n=n))
    return emit_from_runtime_code.__code__.co_firstlineno + 2


class TestGetTelemetry:
    def test_same_name_gives_the_same_emitter(self) -> None:
        """get_telemetry caches emitters by name, like logging.getLogger."""

        assert get_telemetry("robot.arm") is get_telemetry("robot.arm")

    def test_camel_case_alias(self) -> None:
        """getTelemetry is the same function, for logging-style call sites."""

        assert getTelemetry is get_telemetry

    def test_loggers_are_under_the_two_roots(self) -> None:
        """The emitter for ``x`` owns ``telemetry.x`` and ``snapshots.x``."""
        emitter = get_telemetry("robot.arm")

        assert ("telemetry.robot.arm", "snapshots.robot.arm") == (
            emitter.events_logger.name,
            emitter.snapshots_logger.name,
        )

    @pytest.mark.parametrize("name", ["", None, 3, ["robot"]])
    def test_bad_name_raises(self, name: object) -> None:
        """A name that is not a non-empty str raises TelemetryTypeError (a TypeError)."""
        with pytest.raises(TelemetryTypeError, match="name"):
            get_telemetry(name)  # type: ignore[arg-type]


class TestEmit:
    def test_record_msg_is_the_event(self, records: list[logging.LogRecord]) -> None:
        """The record carries the event object itself, not a rendering of it."""
        event = EmitterTestPing(n=1)

        get_telemetry("robot.arm").emit(event)

        assert event is records[0].msg

    def test_get_message_is_the_kind(self, records: list[logging.LogRecord]) -> None:
        """record.getMessage() is the event's kind."""
        get_telemetry("robot.arm").emit(EmitterTestPing())

        assert "emitter_test_ping" == records[0].getMessage()

    def test_record_points_at_the_caller(self, records: list[logging.LogRecord]) -> None:
        """funcName, lineno and pathname name the runtime code that called emit."""
        line = emit_from_runtime_code(1)

        assert ("emit_from_runtime_code", line, __file__) == (
            records[0].funcName,
            records[0].lineno,
            records[0].pathname,
        )

    def test_stacklevel_skips_helpers(self, records: list[logging.LogRecord]) -> None:
        """stacklevel=2 attributes the record to the helper's caller."""

        def helper() -> None:
            get_telemetry("robot.arm").emit(EmitterTestPing(), stacklevel=2)

        helper()

        assert "test_stacklevel_skips_helpers" == records[0].funcName

    def test_level_is_recorded(self, records: list[logging.LogRecord]) -> None:
        """The record has the level passed to emit."""
        get_telemetry("robot.arm").emit(EmitterTestPing(), level=logging.WARNING)

        assert logging.WARNING == records[0].levelno

    def test_disabled_module_delivers_nothing(self, records: list[logging.LogRecord]) -> None:
        """An event below the module's level never reaches a handler."""
        configure({"telemetry.robot": "OFF"})

        get_telemetry("robot.arm").emit(EmitterTestPing())

        assert [] == records

    def test_non_schema_raises_type_error(self, records: list[logging.LogRecord]) -> None:
        """emit() of something that is not an event raises SchemaTypeError (a TypeError)."""
        with pytest.raises(TypeError, match="TelemetryEvent"):
            get_telemetry("robot.arm").emit("hello")  # type: ignore[arg-type]

    def test_snapshot_to_emit_raises(self, records: list[logging.LogRecord]) -> None:
        """emit() of a snapshot raises SchemaTypeError and points at snapshot()."""
        with pytest.raises(SchemaTypeError, match=r"snapshot\(\)"):
            get_telemetry("robot.arm").emit(EmitterTestFrame())  # type: ignore[arg-type]

    def test_event_to_snapshot_raises(self, records: list[logging.LogRecord]) -> None:
        """snapshot() of an event raises SchemaTypeError and points at emit()."""
        with pytest.raises(SchemaTypeError, match=r"emit\(\)"):
            get_telemetry("robot.arm").snapshot(EmitterTestPing())  # type: ignore[arg-type]

    def test_wrong_type_is_not_checked_while_disabled(self) -> None:
        """The level is checked first: a disabled emit costs nothing, not even a type check."""
        configure({"telemetry": "OFF"})

        get_telemetry("robot.arm").emit("not an event")  # type: ignore[arg-type]


class TestSnapshot:
    def test_snapshot_goes_to_the_snapshots_logger(self, records: list[logging.LogRecord]) -> None:
        """snapshot() logs on snapshots.<name> at TRACE by default."""
        get_telemetry("robot.arm").snapshot(EmitterTestFrame())

        assert ("snapshots.robot.arm", TRACE) == (records[0].name, records[0].levelno)

    def test_levels_are_independent(self, records: list[logging.LogRecord]) -> None:
        """Snapshots can be off while events are on, for the same module."""
        configure({"snapshots.robot.arm": "OFF"})
        emitter = get_telemetry("robot.arm")

        emitter.snapshot(EmitterTestFrame())
        emitter.emit(EmitterTestPing())

        assert ["telemetry.robot.arm"] == [r.name for r in records]


class TestEnabled:
    def test_enabled_follows_the_events_level(self) -> None:
        """enabled() is True once the module's events level admits INFO."""
        emitter = get_telemetry("robot.arm")
        configure({"telemetry.robot.arm": "WARNING"})
        before = emitter.enabled()
        configure({"telemetry.robot.arm": "INFO"})

        assert (False, True) == (before, emitter.enabled())

    def test_snapshots_enabled_follows_the_snapshots_level(self) -> None:
        """snapshots_enabled() is True once the module's snapshots level admits TRACE."""
        emitter = get_telemetry("robot.arm")
        before = emitter.snapshots_enabled()
        configure({"snapshots.robot": "TRACE"})

        assert (False, True) == (before, emitter.snapshots_enabled())


class TestRoots:
    @pytest.mark.parametrize("root", ["telemetry", "snapshots"])
    def test_roots_do_not_propagate(self, root: str) -> None:
        """Telemetry never reaches the root logger and its handlers."""

        assert logging.getLogger(root).propagate is False

    @pytest.mark.parametrize("root", ["telemetry", "snapshots"])
    def test_roots_carry_a_null_handler(self, root: str) -> None:
        """A NullHandler on each root keeps logging.lastResort out of the picture."""

        assert any(type(h) is logging.NullHandler for h in logging.getLogger(root).handlers)

    def test_nothing_reaches_last_resort(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Even a CRITICAL event with no subscriber prints nothing to stderr."""
        configure({"telemetry": "TRACE", "snapshots": "TRACE"})
        emitter = get_telemetry("robot.arm")

        emitter.emit(EmitterTestPing(), level=logging.CRITICAL)
        emitter.snapshot(EmitterTestFrame(), level=logging.CRITICAL)

        assert "" == capsys.readouterr().err

    def test_trace_is_registered_below_debug(self) -> None:
        """TRACE has the name 'TRACE' and sits below DEBUG."""

        assert ("TRACE", True) == (logging.getLevelName(TRACE), TRACE < logging.DEBUG)

    def test_off_is_above_everything(self) -> None:
        """OFF is named and above CRITICAL."""

        assert ("OFF", True) == (logging.getLevelName(OFF), OFF > logging.CRITICAL)

    def test_events_on_and_snapshots_off_out_of_the_box(self) -> None:
        """Out of the box INFO events are enabled and TRACE snapshots are not."""
        emitter = get_telemetry("fresh.module")

        assert (True, False) == (emitter.enabled(), emitter.snapshots_enabled())
