"""The last rough inputs of the command line: each one line (or a clean output), exit 2 where
it is an error, never a traceback. Each case runs the real command in a subprocess."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

ROOT = Path(__file__).parents[3]
_SRC = ROOT / "src"


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOGGLES_")}
    env.update(GOGGLES_SOCKET=str(tmp / "bus.sock"), GOGGLES_HOST_IDLE_TIMEOUT="0.5")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_SRC), env.get("PYTHONPATH", "")) if p)
    return env


def test_broker_port_out_of_range_is_one_line_exit_2(tmp_path: Path) -> None:
    """`demo --workers 2 --broker redis://127.0.0.1:99999/0`: one line naming the port, exit 2."""
    out = subprocess.run(
        [sys.executable, "-m", "experiment_telemetry", "demo", "--root", str(tmp_path / "runs"),
         "--workers", "2", "--broker", "redis://127.0.0.1:99999/0", "--no-wandb"],
        capture_output=True, text=True, timeout=120, check=False, env=_env(tmp_path),
    )  # fmt: skip
    (line,) = out.stderr.strip().splitlines()

    assert 2 == out.returncode
    assert "Port out of range" in line and "the demo does not start" in line
    assert "Traceback" not in out.stderr


def _demo_args(root: Path) -> list[str]:
    return [sys.executable, "-m", "experiment_telemetry", "demo", "--root", str(root),
            "--epochs", "1", "--no-wandb"]  # fmt: skip


def test_no_progress_bar_in_output_that_shares_one_pipe(tmp_path: Path) -> None:
    """stdout and stderr into one pipe: the episode lines come without a bar drawn into them."""
    out = subprocess.run(
        _demo_args(tmp_path / "runs"), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, timeout=300, check=False, env=_env(tmp_path),
    )  # fmt: skip

    assert 0 == out.returncode, out.stdout[-2000:]
    assert "train epoch 0 episode   0" in out.stdout
    assert "\r" not in out.stdout and "ep/s" not in out.stdout


def test_progress_bar_on_a_terminal(tmp_path: Path) -> None:
    """stderr a terminal (a pty here): the bar is drawn there, stdout stays plain lines."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # 100 columns
    try:
        proc = subprocess.Popen(
            _demo_args(tmp_path / "runs"), stdout=subprocess.PIPE, stderr=follower,
            env=_env(tmp_path), text=True,
        )  # fmt: skip
        os.close(follower)
        follower = -1
        seen = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the pty closed: every writer exited
                break
            if not chunk:
                break
            seen += chunk
        out, _ = proc.communicate(timeout=300)
    finally:
        if follower != -1:
            os.close(follower)
        os.close(leader)
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)

    assert 0 == proc.returncode
    assert b"ep/s" in seen or b"ep]" in seen
    assert "\r" not in out


def test_logger_benchmark_without_the_bench_extra_names_it(tmp_path: Path) -> None:
    """benchmarks/logger.py with robo-goggles not importable: one line naming the extra, exit 2."""
    blocker = tmp_path / "no-goggles" / "goggles"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'goggles'\", name='goggles')\n"
    )
    env = _env(tmp_path)
    env["PYTHONPATH"] = os.pathsep.join([str(blocker.parent), env["PYTHONPATH"]])
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "logger.py"), "--calls", "10"],
        capture_output=True, text=True, timeout=120, check=False, env=env,
    )  # fmt: skip
    (line,) = out.stderr.strip().splitlines()

    assert 2 == out.returncode
    assert "bench extra" in line and ".[bench]" in line
