"""Rough inputs at the logger: an oversized name, a scope no handler reaches."""

from __future__ import annotations

import pytest

import goggles_io as gg
from goggles_io.exceptions import InvalidNameError
from goggles_io.testing import MemoryHandler


class TestNameLimit:
    @pytest.mark.parametrize(
        "log",
        [
            lambda lg, name: lg.scalar(name, 1.0, step=0),
            lambda lg, name: lg.push({name: 1.0}, step=0),
            lambda lg, name: lg.dictionary(name, {"a": 1.0}, step=0),
            lambda lg, name: gg.get_logger(name),
        ],
        ids=["scalar", "push", "dictionary", "logger name"],
    )
    def test_a_10_mb_name_is_refused_naming_the_limit(self, mem: MemoryHandler, log) -> None:
        """A 10 MB name: InvalidNameError saying its length and the 1024-character limit."""
        logger = gg.get_logger("t", with_metrics=True)
        with pytest.raises(InvalidNameError, match=r"10000000 characters long.*at most 1024"):
            log(logger, "n" * 10_000_000)
        gg.finish(timeout=10)

        assert [] == mem.metrics()

    def test_a_name_of_exactly_1024_characters_is_kept(self, mem: MemoryHandler) -> None:
        """The limit is inclusive: 1024 characters pass, as the remote protocol's do."""
        gg.get_logger("t", with_metrics=True).scalar("n" * 1024, 1.0, step=0)
        gg.finish(timeout=10)

        assert [("n" * 1024, 1.0, 0)] == mem.metrics()

    def test_the_error_stays_short(self) -> None:
        """The message quotes the name cut short: an error about 10 MB is not 10 MB."""
        with pytest.raises(InvalidNameError) as info:
            gg.get_logger("t", with_metrics=True).scalar("n" * 10_000_000, 1.0, step=0)

        assert len(str(info.value)) < 400


class TestUnroutedScope:
    def test_first_event_on_a_scope_no_handler_reaches_is_said_once_and_counted(
        self, capfd: pytest.CaptureFixture[str]
    ) -> None:
        """Handler on "train", logger on "eval": one line naming both scopes; all counted."""
        gg.attach(MemoryHandler(name="m"), scopes=["train"])
        log = gg.get_logger("t", scope="eval")
        for _ in range(5):
            log.info("lost")
        gg.get_logger("t", scope="test").info("lost too")
        gg.finish(timeout=10)
        err = capfd.readouterr().err

        assert 1 == err.count("scope 'eval' reach no handler")
        assert 1 == err.count("scope 'test' reach no handler")
        assert "['train']" in err
        assert {"eval": 5, "test": 1} == gg.get_bus().unrouted.counts

    def test_nothing_attached_stays_silent(self, capfd: pytest.CaptureFixture[str]) -> None:
        """No handler at all (a library logging before the application configured): silent."""
        gg.get_logger("t", scope="eval").info("nobody listens yet")
        gg.finish(timeout=10)

        assert "reach no handler" not in capfd.readouterr().err

    def test_a_child_scope_of_an_attached_one_is_routed(
        self, mem: MemoryHandler, capfd: pytest.CaptureFixture[str]
    ) -> None:
        """global.train reaches a handler on global: no warning."""
        gg.get_logger("t", scope="global.train").info("kept")
        gg.finish(timeout=10)

        assert "reach no handler" not in capfd.readouterr().err
        assert ["kept"] == mem.messages()
