"""Replay: the recorded events give back the live stats; damaged input is reported."""

from __future__ import annotations

from pathlib import Path

import pytest

from experiment_telemetry.exceptions import ReplayError
from experiment_telemetry.replay import read_stats, replay_run


class TestReplay:
    def test_missing_log_is_a_replay_error(self, tmp_path: Path) -> None:
        """A directory without an event log raises ReplayError naming the file."""
        with pytest.raises(ReplayError, match=r"runtime_events\.jsonl"):
            replay_run(tmp_path)

    def test_damaged_line_names_its_number(self, tmp_path: Path) -> None:
        """A line that does not decode raises ReplayError with its line number."""
        (tmp_path / "runtime_events.jsonl").write_text('{"kind": "nope", "version": 1}\n')

        with pytest.raises(ReplayError, match="line 1"):
            replay_run(tmp_path)

    def test_stats_file_with_runtime_events_refused(self, tmp_path: Path) -> None:
        """read_stats refuses a file holding something other than stat events."""
        (tmp_path / "stats.jsonl").write_text(
            '{"kind":"learning_module_no_match","version":2,"timestamp":1.0,"lm_id":"a","step":1}\n'
        )

        with pytest.raises(ReplayError, match="non-stat schema"):
            read_stats(tmp_path)
