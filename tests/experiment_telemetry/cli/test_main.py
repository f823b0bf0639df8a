"""The ``telemetry`` entry point: version, help, and a reader that leaves early."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from experiment_telemetry.cli import main
from support import started


class TestMain:
    def test_no_command_prints_help(self, capsys) -> None:  # type: ignore[no-untyped-def]
        """``telemetry`` alone prints the help listing every subcommand and exits 0."""
        status = main([])

        out = capsys.readouterr().out
        assert 0 == status
        assert all(name in out for name in ("demo", "runs", "show", "replay", "plot", "collector"))

    def test_closed_pipe_exits_quietly(self, tmp_path: Path) -> None:
        """``telemetry runs ROOT | head -0``: nothing on stderr when the reader has gone."""
        with started(
            [sys.executable, "-m", "experiment_telemetry", "runs", str(tmp_path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        ) as proc:
            assert proc.stdout is not None
            proc.stdout.close()  # the reader leaves before anything is written
            _, err = proc.communicate(timeout=60)

        assert b"" == err
