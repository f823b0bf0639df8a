"""Tests for ``telemetry show``: config and the last value of each metric."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from experiment_telemetry.cli import show as show_cli
from goggles_io.runs import RunContext


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="telemetry")
    show_cli.add_parser(parser.add_subparsers())
    args = parser.parse_args(argv)
    return int(args.handler(args))


class TestShowCommand:
    def test_prints_config_and_last_metrics(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The recorded config and the last value of each metric are printed."""
        run = RunContext(project="p", driver="d", slug="s", root=tmp_path)
        run.set_config("algo", "sac")
        (run.dir / "metrics.csv").write_text("step,loss,acc\n0,1,0.1\n1,0.5,\n")
        run.close()

        assert 0 == main(["show", str(run.dir)])
        out = capsys.readouterr().out
        assert "algo = sac" in out
        assert "loss = 0.5" in out
        assert "acc = 0.1" in out

    def test_not_a_run_dir_exits_2(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A directory without run.kv is reported on stderr with exit status 2."""
        assert 2 == main(["show", str(tmp_path)])
        assert "no run.kv" in capsys.readouterr().err
