"""Runs logged through a ``RemoteHandler``, as the dashboard lists and draws them (issue 30).

Real processes: the script logs to a real server (``goggles_io.server.Collector``, the server
``telemetry ui`` runs) over HTTP, with the dedicated host process or the host in-process.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from goggles_io.server import Collector
from support import wait_until

_SCRIPT = Path(__file__).parent / "scripts" / "remote_run.py"


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as reply:
        return json.loads(reply.read())


def _rows(server: Collector, run_id: str) -> list[dict[str, Any]]:
    return [r for r in _get(server.url + "/api/runs")["runs"] if r["run_id"] == run_id]


class _Script:
    """``scripts/remote_run.py`` with a private socket; stops it and its host afterwards."""

    def __init__(self, tmp: Path, dedicated: bool) -> None:
        self.socket = str(tmp / "bus.sock")
        self.env = {
            **os.environ,
            "GOGGLES_TRANSPORT": "socket",
            "GOGGLES_SOCKET": self.socket,
            "GOGGLES_DEDICATED_HOST": "1" if dedicated else "0",
            "PYTHONPATH": os.pathsep.join(sys.path),
        }
        self.proc: subprocess.Popen[str] | None = None
        self.dedicated = dedicated

    def start(self, url: str, root: str, mode: str) -> str:
        self.proc = subprocess.Popen(
            [sys.executable, str(_SCRIPT), url, root, mode],
            env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        line = self.proc.stdout.readline().strip()  # type: ignore[union-attr]
        assert line, self.proc.stderr.read()  # type: ignore[union-attr]
        return line

    def host_pid(self) -> int | None:
        with contextlib.suppress(OSError, ValueError):
            return int(Path(self.socket + ".lock").read_text().strip())
        return None

    def stop(self) -> None:
        host = self.host_pid()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
        if self.proc is not None:
            self.proc.communicate(timeout=30)
        if host is not None and host != getattr(self.proc, "pid", None):
            with contextlib.suppress(OSError):
                wait_until(lambda: not _alive(host), 30.0, 0.05, "the host idles out")
            with contextlib.suppress(ProcessLookupError):
                os.kill(host, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with contextlib.suppress(OSError):  # a zombie child of ours is gone too
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    return True


@pytest.fixture(params=[True, False], ids=["dedicated-host", "host-in-process"])
def script(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[_Script]:
    runner = _Script(tmp_path, dedicated=request.param)
    try:
        yield runner
    finally:
        runner.stop()


class TestKilledRemoteRun:
    def test_sigkilled_run_is_crashed_within_10_s(self, script: _Script, tmp_path: Path) -> None:
        """A script with a RemoteHandler SIGKILLed mid-run is crashed in /api/runs within 10 s
        (default settings: the host reports it, or the server sees its process gone)."""
        with Collector(run_dirs=[str(tmp_path / "none")]) as server:
            run_id = script.start(server.url, "-", "hang")
            wait_until(lambda: _rows(server, run_id), 30.0, 0.05, "the run is listed")
            assert _rows(server, run_id)[0]["status"] == "running"
            assert script.proc is not None
            script.proc.send_signal(signal.SIGKILL)
            killed = time.monotonic()  # not reaped yet: a zombie counts as gone
            wait_until(
                lambda: _rows(server, run_id)[0]["status"] == "crashed",
                30.0, 0.05, "the run is shown crashed",
            )  # fmt: skip
            took = time.monotonic() - killed
            stored = next(r for r in server.runs() if r["run_id"] == run_id)
        assert took < 10.0, f"crashed after {took:.1f} s"
        # The dedicated host reports the crash; in-process, the server saw the process gone.
        assert stored["status"] == ("crashed" if script.dedicated else "stale")


class TestOneRunOneRow:
    def test_run_context_and_remote_handler_are_one_row(
        self, script: _Script, tmp_path: Path
    ) -> None:
        """A RunContext + RemoteHandler run is one row listing both sources, and its wall-time
        series is the same curve from the folder and from the collector's copy."""
        root = tmp_path / "runs"
        root.mkdir()
        with Collector(run_dirs=[str(root)]) as server:
            run_id = script.start(server.url, str(root), "finish")
            assert script.proc is not None
            assert script.proc.wait(60) == 0
            row = wait_until(
                lambda: next(iter(_rows(server, run_id)), {}).get("status") == "done"
                and _rows(server, run_id),
                30.0, 0.05, "the run is listed as done",
            )[0]  # fmt: skip
            assert len(_rows(server, run_id)) == 1
            assert row["sources"] == ["dir", "collector"]
            keys = row["keys"]

            def series() -> dict[str, Any] | None:
                query = f"metric=loss&axis=time&run={keys['dir']}&run={keys['collector']}"
                got = _get(f"{server.url}/api/series?{query}")["series"]
                full = [s for s in got.values() if s["total"] == 600 and len(s["x"]) == 600]
                return got if len(full) == 2 else None

            got = wait_until(series, 30.0, 0.05, "both sources indexed")
        folder, copy = got[keys["dir"]], got[keys["collector"]]
        assert folder["y"] == copy["y"]
        assert folder["x"] == pytest.approx(copy["x"], rel=0, abs=1e-6)
        assert folder["x"][-1] - folder["x"][0] > 0.2  # the log calls' spread, not a batch's
