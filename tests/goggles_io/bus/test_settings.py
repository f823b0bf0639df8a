"""Environment knobs: parsed in one place, malformed values name the variable."""

from __future__ import annotations

import pytest

from goggles_io._bus.settings import Settings, read_settings
from goggles_io.exceptions import ConfigurationError


class TestReadSettings:
    def test_defaults(self) -> None:
        """An empty environment gives the documented defaults."""
        assert Settings() == read_settings({})
        assert (16 * 2**20, False) == (Settings().queue_bytes, Settings().verbose)

    @pytest.mark.parametrize(
        ("raw", "expected"),
        [("0", False), ("false", False), ("1", True), ("YES", True), ("off", False)],
    )
    def test_async_values(self, raw: str, expected: bool) -> None:
        """GOGGLES_ASYNC accepts the usual spellings of true and false."""
        assert expected == read_settings({"GOGGLES_ASYNC": raw}).async_mode

    @pytest.mark.parametrize(
        ("key", "raw"),
        [
            ("GOGGLES_ASYNC", "maybe"),
            ("GOGGLES_QUEUE_SIZE", "0"),
            ("GOGGLES_QUEUE_SIZE", "many"),
            ("GOGGLES_QUEUE_BYTES", "0"),
            ("GOGGLES_VERBOSE", "loud"),
            ("GOGGLES_SHUTDOWN_TIMEOUT", "-1"),
            ("GOGGLES_CALLER_INFO", "2"),
        ],
    )
    def test_malformed_value_names_variable(self, key: str, raw: str) -> None:
        """A malformed value raises ConfigurationError naming the variable and the value."""
        with pytest.raises(ConfigurationError, match=f"{key}.*{raw!r}"):
            read_settings({key: raw})
