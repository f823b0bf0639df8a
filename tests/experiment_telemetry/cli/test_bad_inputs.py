"""Every bad input named in issue 12: one line on stderr, a non-zero exit, never a traceback.

Each case runs the real command in a subprocess (``python -m experiment_telemetry``).
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from experiment_telemetry.demo.experiment import run_demo
from experiment_telemetry.recorder import RUNTIME_EVENTS_FILE


def telemetry(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "GOGGLES_TRANSPORT": "inprocess"}
    return subprocess.run([sys.executable, "-m", "experiment_telemetry", *args],
                          capture_output=True, text=True, timeout=120, env=env)  # fmt: skip


def assert_one_line_error(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode != 0, done.stdout
    assert "Traceback" not in done.stderr
    assert 1 == len(done.stderr.strip().splitlines()), done.stderr
    for word in words:
        assert word in done.stderr


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("demo")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return Path(run_demo(root, seed=0, num_epochs=1, wandb=False).run_dir)


def copy_of(run: Path, into: Path) -> Path:
    target = into / run.name
    shutil.copytree(run, target)
    return target


class TestDemo:
    @pytest.mark.parametrize("epochs", ["0", "-1"])
    def test_epochs_below_one(self, tmp_path: Path, epochs: str) -> None:
        """demo --epochs 0 / -1: one line naming --epochs, exit 2, nothing written."""
        done = telemetry("demo", "--epochs", epochs, "--root", str(tmp_path / "r"), "--no-wandb")

        assert_one_line_error(done, "--epochs")
        assert not (tmp_path / "r").exists()

    def test_root_that_cannot_be_written(self) -> None:
        """demo --root /proc/x: one line naming the root, exit 2."""
        done = telemetry("demo", "--root", "/proc/x", "--no-wandb")

        assert_one_line_error(done, "/proc/x")

    @pytest.mark.slow
    def test_ends_with_the_ui_line(self, tmp_path: Path) -> None:
        """A demo run's last line is the `telemetry ui` command to look at it."""
        done = telemetry("demo", "--root", str(tmp_path), "--no-wandb", "--epochs", "1")

        assert 0 == done.returncode, done.stderr
        assert f"telemetry ui {tmp_path}" in done.stdout.strip().splitlines()[-1]


class TestRunsShowReplay:
    def test_runs_on_missing_root(self) -> None:
        """runs /nonexistent: not a directory, exit 2 (it used to say 'no runs' and exit 0)."""
        assert_one_line_error(telemetry("runs", "/nonexistent"), "/nonexistent")

    def test_show_on_corrupt_run_kv(self, demo_dir: Path, tmp_path: Path) -> None:
        """show on a run.kv without run_id/status: one line, exit 2 (not 'run None')."""
        run = copy_of(demo_dir, tmp_path)
        (run / "run.kv").write_text("garbage\nmore garbage\n")
        done = telemetry("show", str(run))

        assert_one_line_error(done, "run.kv")
        assert "None" not in done.stdout

    def test_replay_with_broken_config_yaml(self, demo_dir: Path, tmp_path: Path) -> None:
        """replay with a broken config.yaml: one line naming the file, exit 2."""
        run = copy_of(demo_dir, tmp_path)
        (run / "config.yaml").write_text("a: [b\nc: {\n")
        done = telemetry("replay", str(run))

        assert_one_line_error(done, "config.yaml")
        assert 2 == done.returncode

    def test_replay_on_empty_event_log(self, demo_dir: Path, tmp_path: Path) -> None:
        """replay on an empty event log says it is empty (not DIFFERENT), exit 2."""
        run = copy_of(demo_dir, tmp_path)
        (run / RUNTIME_EVENTS_FILE).write_bytes(b"")
        done = telemetry("replay", str(run))

        assert_one_line_error(done, "empty")
        assert "DIFFERENT" not in done.stderr + done.stdout


class TestUiCommand:
    def test_missing_directory(self) -> None:
        """ui /nonexistent: one line, exit 2."""
        assert_one_line_error(telemetry("ui", "/nonexistent", "--port", "0"), "/nonexistent")

    def test_port_in_use(self, tmp_path: Path) -> None:
        """ui on a port already taken: one line, exit 2."""
        import socket

        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            done = telemetry("ui", str(tmp_path), "--port", str(taken.getsockname()[1]))

        assert_one_line_error(done, "cannot serve")

    def test_public_host_without_key(self, tmp_path: Path) -> None:
        """ui --host 0.0.0.0 without a key: one line saying so, exit 2."""
        env_key = os.environ.pop("TELEMETRY_COLLECTOR_API_KEY", None)
        try:
            done = telemetry("ui", str(tmp_path), "--host", "0.0.0.0", "--port", "0")
        finally:
            if env_key is not None:
                os.environ["TELEMETRY_COLLECTOR_API_KEY"] = env_key

        assert_one_line_error(done, "API key")

    def test_serves_the_page_and_stops_on_ctrl_c(self, demo_dir: Path) -> None:
        """ui prints its URL, serves the page and the runs, and exits 0 on SIGINT."""
        script = ("import signal, sys\nsignal.signal(signal.SIGINT, signal.default_int_handler)\n"
                  "from experiment_telemetry.cli import main\nsys.exit(main(sys.argv[1:]))\n")  # fmt: skip
        proc = subprocess.Popen(
            [sys.executable, "-c", script, "ui", str(demo_dir.parent), "--port", "0"],
            stdout=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )  # fmt: skip
        try:
            url = proc.stdout.readline().split()[3].rstrip("/")  # type: ignore[union-attr]
            with urllib.request.urlopen(f"{url}/", timeout=30) as reply:
                page = reply.read()
            with urllib.request.urlopen(f"{url}/api/runs", timeout=30) as reply:
                runs = reply.read()
            proc.send_signal(signal.SIGINT)

            assert b"/static/uplot-" in page and demo_dir.name.encode() in runs
            assert 0 == proc.wait(timeout=30)
        finally:
            proc.kill()
            proc.wait(30)
