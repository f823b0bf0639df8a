"""ConsoleHandler: readable lines, emission time, colour only on a tty."""

from __future__ import annotations

import inspect
import io
import time
from pathlib import Path

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


class TestPathStyle:
    def test_relative_path_style_shows_the_file_under_project_root(self, tmp_path) -> None:
        """path_style="relative" shows the caller file relative to project_root, with its line."""
        handler = gg.ConsoleHandler(path_style="relative", project_root=tmp_path)
        line = handler.format(_event(filepath=str(tmp_path / "pkg" / "train.py"), lineno=7))

        assert line.endswith("app: hello (pkg/train.py:7)")

    def test_file_outside_project_root_stays_absolute(self, tmp_path) -> None:
        """A caller outside project_root is shown with its absolute path."""
        handler = gg.ConsoleHandler(path_style="relative", project_root=tmp_path / "proj")
        line = handler.format(_event(filepath="/opt/lib/x.py", lineno=3))

        assert line.endswith("(/opt/lib/x.py:3)")

    def test_absolute_path_style(self, tmp_path) -> None:
        """path_style="absolute" shows the absolute path even under project_root."""
        handler = gg.ConsoleHandler(path_style="absolute", project_root=tmp_path)
        line = handler.format(_event(filepath=str(tmp_path / "a.py"), lineno=1))

        assert line.endswith(f"({tmp_path / 'a.py'}:1)")

    def test_project_root_defaults_to_the_cwd_at_construction(self, tmp_path, monkeypatch) -> None:
        """project_root defaults to the working directory, resolved into the spec."""
        monkeypatch.chdir(tmp_path)
        spec = gg.ConsoleHandler(path_style="relative").to_dict()["data"]

        assert (str(tmp_path), "relative", True) == (
            spec["project_root"], spec["path_style"], spec["show_caller"],
        )  # fmt: skip

    def test_unknown_path_style_is_rejected(self) -> None:
        """path_style="weird" raises ConfigurationError naming path_style."""
        with pytest.raises(ConfigurationError, match="path_style"):
            gg.ConsoleHandler(path_style="weird")

    def test_configure_passes_path_style_and_project_root(self, capsys) -> None:
        """configure(console_path_style=, project_root=) shapes the console it attaches."""
        here = Path(__file__)
        gg.configure(console_path_style="relative", project_root=here.parent)
        line_no = inspect.currentframe().f_lineno + 1  # type: ignore[union-attr]
        gg.get_logger("cfg").info("shown")
        gg.finish(timeout=10)

        line = capsys.readouterr().err.strip().splitlines()[-1]
        assert line.endswith(f"cfg: shown ({here.name}:{line_no})")

    def test_default_name_is_robo_goggles(self) -> None:
        """ConsoleHandler() and configure() use robo-goggles' name, goggles.console."""
        gg.configure(enable_console=True)

        assert "goggles.console" == gg.ConsoleHandler().name
        gg.detach("goggles.console", "global")  # raises if configure used another name
