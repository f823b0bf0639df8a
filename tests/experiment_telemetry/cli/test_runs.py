"""Tests for ``telemetry runs``: one line per run with status, age and last step."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from experiment_telemetry.cli import runs as runs_cli
from goggles_io.runs import RunContext


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="telemetry")
    runs_cli.add_parser(parser.add_subparsers())
    args = parser.parse_args(argv)
    return int(args.handler(args))


class TestRunsCommand:
    def test_lists_status_and_last_step(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Each run is listed with its status and last step."""
        run = RunContext(project="p", driver="d", slug="s", root=tmp_path)
        (run.dir / "metrics.csv").write_text("step,loss\n0,1\n41,0.5\n")
        run.close()

        assert 0 == main(["runs", str(tmp_path)])
        line = capsys.readouterr().out.splitlines()[1]
        assert [run.id, "done", "41"] == [line.split()[i] for i in (0, 1, 3)]

    def test_empty_root_says_so(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """An existing root without runs prints that there are none and exits 0 (issue 12: a
        root that does not exist is an error, see test_bad_inputs.py)."""
        assert 0 == main(["runs", str(tmp_path)])
        assert "no runs" in capsys.readouterr().out
