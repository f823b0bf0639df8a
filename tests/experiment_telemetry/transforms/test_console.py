"""ConsoleTransform: a line per episode and the summary table, as goggles_io text events."""

from __future__ import annotations

import goggles_io
from experiment_telemetry.stats import MetricAlert
from experiment_telemetry.transforms import ConsoleTransform, PlainTextHandler
from goggles_io.testing import MemoryHandler
from runtime_telemetry import get_telemetry

from .test_goggles import emit_episode


class TestConsoleTransform:
    def test_one_line_per_episode_with_module_verdicts(self) -> None:
        """Each episode becomes one text line naming the verdict and each module's verdict."""
        handler = MemoryHandler(name="mem")
        goggles_io.attach(handler, scopes=["experiment"])
        transform = ConsoleTransform().attach()
        emit_episode(3)
        goggles_io.flush()

        (line,) = [e.payload for e in handler.of_kind("text")]

        assert "episode   3" in line and "verdict=correct" in line and "lm_1=correct" in line
        transform.close()

    def test_summary_table_once_on_close(self) -> None:
        """close() logs the latest totals per mode as a table, once."""
        handler = MemoryHandler(name="mem")
        goggles_io.attach(handler, scopes=["experiment"])
        transform = ConsoleTransform().attach()
        emit_episode(0)
        transform.close()
        transform.close()
        goggles_io.flush()

        summaries = [e.payload for e in handler.of_kind("text") if e.extra.get("name") == "summary"]

        assert 1 == len(summaries)
        assert "correct%" in summaries[0] and "100.0" in summaries[0]

    def test_plain_text_handler_prints_payload_only(self, capsys) -> None:  # type: ignore[no-untyped-def]
        """PlainTextHandler writes the text without time or level prefix."""
        goggles_io.attach(PlainTextHandler(name="plain"), scopes=["experiment"])
        logger = goggles_io.get_logger("t", scope="experiment", with_metrics=True)
        logger.text("hello table", step=0)  # type: ignore[union-attr]
        goggles_io.finish()

        assert "hello table\n" == capsys.readouterr().out

    def test_plain_text_handler_clears_an_active_progress_bar(self, capsys) -> None:  # type: ignore[no-untyped-def]
        """A line printed while a tqdm bar runs on stderr first clears the bar, then redraws it."""
        import sys

        from tqdm import tqdm

        goggles_io.attach(PlainTextHandler(name="plain"), scopes=["experiment"])
        logger = goggles_io.get_logger("t", scope="experiment", with_metrics=True)
        with tqdm(total=3, file=sys.stderr, desc="bar", mininterval=0) as bar:
            bar.update(1)
            before = capsys.readouterr().err
            logger.text("hello table", step=0)  # type: ignore[union-attr]
            goggles_io.finish()
            out, err = capsys.readouterr()

        assert "hello table\n" == out
        assert "bar" in before and err.startswith("\r") and "bar" in err


class TestAlertLine:
    def test_alert_becomes_one_text_line(self) -> None:
        """A MetricAlert is logged as an 'ALERT <SEVERITY> <message>' text event named alert."""
        handler = MemoryHandler(name="mem-alert")
        goggles_io.attach(handler, scopes=["experiment"])
        transform = ConsoleTransform().attach()
        get_telemetry("experiment_telemetry.stats").emit(
            MetricAlert(
                check="silence",
                severity="warning",
                source="sac",
                metric="x_loss",
                step=3,
                message="gone",
            )
        )
        goggles_io.flush()
        transform.close()

        texts = [(e.extra.get("name"), e.payload) for e in handler.of_kind("text")]
        assert ("alert", "ALERT WARNING gone") in texts
