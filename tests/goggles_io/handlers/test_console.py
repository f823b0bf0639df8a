"""ConsoleHandler: readable lines, emission time, colour only on a tty."""

from __future__ import annotations

import io
import time

import pytest

import goggles_io as gg
from goggles_io import Event, Kind
from goggles_io.exceptions import ConfigurationError


def _event(**kw: object) -> Event:
    base: dict[str, object] = dict(
        kind=Kind.LOG,
        scope="global",
        payload="hello",
        level=gg.INFO,
        timestamp=1_700_000_000.123,
        logger="app",
    )
    base.update(kw)
    return Event(**base)  # type: ignore[arg-type]


class TestConsoleHandler:
    def test_line_shows_emission_time_level_scope_logger(self) -> None:
        """The line holds the event's own timestamp (ms), level, scope, logger and message."""
        line = gg.ConsoleHandler().format(_event())
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(1_700_000_000.123))

        assert f"{stamp}.123 INFO     [global] app: hello" == line

    def test_traceback_follows_message(self) -> None:
        """exc_text is printed on the lines after the message."""
        line = gg.ConsoleHandler().format(_event(extra={"exc_text": "Traceback...\nKeyError\n"}))

        assert line.endswith("hello\nTraceback...\nKeyError")

    def test_no_colour_when_not_a_tty(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Writing to a non-tty stream emits no ANSI escape codes."""
        gg.ConsoleHandler().handle(_event())

        assert "\x1b[" not in capsys.readouterr().err

    def test_colour_can_be_forced(self) -> None:
        """color=True colours the level name."""
        assert "\x1b[32m" in gg.ConsoleHandler(color=True).format(_event(), colour=True)

    def test_stdout_stream(self, capsys: pytest.CaptureFixture[str]) -> None:
        """stream='stdout' writes to stdout."""
        gg.ConsoleHandler(stream="stdout").handle(_event())

        assert "hello" in capsys.readouterr().out

    def test_unknown_stream_is_rejected(self) -> None:
        """stream='file' raises ConfigurationError."""
        with pytest.raises(ConfigurationError, match="stream"):
            gg.ConsoleHandler(stream="file")

    def test_spec_round_trip(self) -> None:
        """from_dict(to_dict()) rebuilds the same configuration."""
        handler = gg.ConsoleHandler(name="c", level=gg.WARNING, stream="stdout", show_caller=True)

        assert handler.to_dict() == gg.ConsoleHandler.from_dict(handler.to_dict()).to_dict()

    def test_through_the_bus(self, capfd: pytest.CaptureFixture[str]) -> None:
        """Attached on global, an INFO message appears on stderr after finish()."""
        gg.attach(gg.ConsoleHandler(name="c", level=gg.INFO))
        gg.get_logger("app").info("through the bus")
        gg.finish()

        assert "app: through the bus" in capfd.readouterr().err

    def test_writes_bound_fields(self) -> None:
        """Bound fields are appended as key=value."""
        assert (
            gg.ConsoleHandler()
            .format(_event(extra={"bound": {"run": "r1"}}))
            .endswith("hello run='r1'")
        )

    def test_is_not_a_tty_stream_by_default(self) -> None:
        """A StringIO stream has no isatty True, so handle() stays plain (sanity of the probe)."""
        assert not io.StringIO().isatty()
