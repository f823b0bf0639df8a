"""Tests for ``telemetry collector``: serves the protocol until interrupted."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

from support import started

# A shell without job control starts background jobs with SIGINT ignored, and children inherit
# that (pytest run as `cmd &` from a script would then hang here): restore Ctrl-C first.
SCRIPT = """
import argparse, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
from experiment_telemetry.cli import collector
parser = argparse.ArgumentParser()
collector.add_parser(parser.add_subparsers())
args = parser.parse_args(sys.argv[1:])
sys.exit(args.handler(args))
"""


class TestCollectorCommand:
    def test_serves_and_stops_on_ctrl_c(self, tmp_path: Path) -> None:
        """The command prints its URL, answers GET /runs, and exits 0 on SIGINT."""
        with started(
            [
                sys.executable,
                "-c",
                SCRIPT,
                "collector",
                "--port",
                "0",
                "--db",
                str(tmp_path / "r.db"),
            ],
            stdout=subprocess.PIPE,
            text=True,
        ) as proc:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            url = line.split()[3].rstrip(",")
            with urllib.request.urlopen(f"{url}/runs", timeout=10) as response:
                body = json.loads(response.read())
            proc.send_signal(signal.SIGINT)
            code = proc.wait(timeout=30)

        assert {"runs": []} == body
        assert 0 == code
        assert (tmp_path / "r.db").is_file()
