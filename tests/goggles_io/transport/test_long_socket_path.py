"""A socket path too long for AF_UNIX is mapped to a short private one: every event still arrives."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from goggles_io._transport.settings import bindable_socket_path
from host_kills import alive as _alive
from support import wait_until

SCRIPTS = Path(__file__).parent / "scripts"
_SRC = Path(__file__).parents[3] / "src"
_N = 100


@pytest.fixture
def root() -> Iterator[Path]:
    """A private directory for the run, the host log and the long paths."""
    path = Path(tempfile.mkdtemp(prefix="ggl-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _host_pid(socket_path: str) -> int | None:
    with contextlib.suppress(FileNotFoundError, ValueError):
        return int(Path(socket_path + ".lock").read_text().strip())
    return None


def _produce(root: Path, env: dict[str, str], stand_in: str) -> tuple[list[str], str]:
    """Run the producer with a dedicated host; return log.jsonl's lines and all stderr."""
    host_log = root / "host.log"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("GOGGLES_")},
        "GOGGLES_TRANSPORT": "socket",
        "GOGGLES_HOST_LOG": str(host_log),
        "GOGGLES_HOST_IDLE_TIMEOUT": "0.5",
        "PYTHONPATH": os.pathsep.join([str(SCRIPTS), str(_SRC)]),
        **env,
    }
    env.pop("XDG_RUNTIME_DIR", None)
    run_dir = root / "run"
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPTS / "storage_producer.py"), str(run_dir), str(_N)],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = proc.communicate(timeout=120)
        assert 0 == proc.returncode, err
        assert "timed_out False" in out, out + err
        log = run_dir / "log.jsonl"
        lines = log.read_text().splitlines() if log.exists() else []
        host_err = host_log.read_text(errors="replace") if host_log.exists() else ""
        return lines, err + host_err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)
        pid = _host_pid(stand_in)
        if pid is not None:
            with contextlib.suppress(AssertionError):
                wait_until(lambda: not _alive(pid), timeout_s=20, what="host exits when idle")
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(stand_in + ".lock")


def test_120_byte_goggles_socket_delivers_every_event(root: Path) -> None:
    """GOGGLES_SOCKET of 120 bytes: the host serves a short stand-in; 100 of 100 events arrive."""
    prefix = str(root / "deep") + "/"
    long_path = prefix + "d" * (120 - len(prefix) - len("/bus.sock")) + "/bus.sock"
    assert 120 == len(long_path)
    os.makedirs(os.path.dirname(long_path))
    stand_in = bindable_socket_path(long_path)

    lines, stderr = _produce(root, {"GOGGLES_SOCKET": long_path}, stand_in)

    assert _N == len(lines)
    assert "Traceback" not in stderr
    assert "too long" not in stderr
    assert len(stand_in) < 108


def test_long_tmpdir_default_socket_delivers_every_event(root: Path) -> None:
    """A TMPDIR that makes the default ``<tmp>/goggles_io-<uid>/bus.sock`` too long: all arrive."""
    tmp = root / ("t" * 100)
    tmp.mkdir()
    default = os.path.join(str(tmp), f"goggles_io-{os.getuid()}", "bus.sock")
    assert len(default) > 108
    stand_in = bindable_socket_path(default)

    lines, stderr = _produce(root, {"TMPDIR": str(tmp)}, stand_in)

    assert _N == len(lines)
    assert "Traceback" not in stderr
    assert "too long" not in stderr
