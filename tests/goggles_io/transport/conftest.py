"""Fixtures for the transport tests: a private socket directory per test and script runners."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from support import start, stop, wait_until

SCRIPTS = Path(__file__).parent / "scripts"
_SRC = Path(__file__).parents[3] / "src"


class Bus:
    """A socket path in a private directory, with helpers to run scripts against it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.socket = str(root / "bus.sock")
        self.jsonl = str(root / "out.jsonl")
        self.host_log = str(root / "host.log")
        self.procs: list[subprocess.Popen[str]] = []
        self.env = {
            **os.environ,
            "GOGGLES_TRANSPORT": "socket",
            "GOGGLES_SOCKET": self.socket,
            "GOGGLES_HOST_LOG": self.host_log,
            "GOGGLES_HOST_IDLE_TIMEOUT": "0.5",
            "GOGGLES_HOST_IMPORTS": "jsonl_sink",
            "PYTHONPATH": os.pathsep.join([str(SCRIPTS), str(_SRC)]),
        }

    def run(
        self, script: str, *args: object, new_session: bool = False, **env: str
    ) -> subprocess.Popen[str]:
        """Start ``scripts/<script>`` with this bus's environment."""
        proc = start(
            [sys.executable, str(SCRIPTS / script), *map(str, args)],
            cwd=SCRIPTS,
            env={**self.env, **env},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=new_session,
        )
        self.procs.append(proc)
        return proc

    def lines(self) -> list[str]:
        """The complete lines the host's JSONL sink has written so far."""
        with contextlib.suppress(FileNotFoundError), open(self.jsonl, encoding="utf-8") as fh:
            return [line for line in fh.read().split("\n")[:-1] if line]
        return []

    def host_pid(self) -> int | None:
        """Pid written by the current election-lock holder, if any."""
        with contextlib.suppress(FileNotFoundError, ValueError):
            return int(Path(self.socket + ".lock").read_text().strip())
        return None

    def host_alive(self) -> bool:
        """Whether the last recorded host process still runs."""
        pid = self.host_pid()
        if pid is None:
            return False
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        with contextlib.suppress(OSError, IndexError):  # ESRCH if it ends while read
            if Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z":
                return False
        return True


@pytest.fixture(autouse=True)
def _private_socket(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Never the default socket path: concurrent test runs must not share a host."""
    root = tempfile.mkdtemp(prefix="ggd-")
    monkeypatch.setenv("GOGGLES_SOCKET", os.path.join(root, "bus.sock"))
    yield
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def bus() -> Iterator[Bus]:
    """A private (0700) directory with a short path (Unix socket paths are limited to ~100 bytes)."""
    root = Path(tempfile.mkdtemp(prefix="ggt-"))
    b = Bus(root)
    yield b
    for proc in b.procs:
        stop(proc)
    with contextlib.suppress(AssertionError):
        wait_until(lambda: not b.host_alive(), timeout_s=10, what="host exits after idle grace")
    if b.host_alive():
        pid = b.host_pid()
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def finished() -> Callable[..., Any]:
    """Wait for a script and return ``(stdout, stderr)``, failing with both on a non-zero exit."""

    def wait(proc: subprocess.Popen[str], timeout_s: float = 60) -> tuple[str, str]:
        out, err = proc.communicate(timeout=timeout_s)
        assert proc.returncode == 0, f"exit {proc.returncode}\nstdout:\n{out}\nstderr:\n{err}"
        return out, err

    return wait


class ForeignHost:
    """A dedicated host started by "another process": other cwd, hostile environment."""

    def __init__(self, root: Path, socket_path: str) -> None:
        self.cwd = root / "elsewhere"
        self.cwd.mkdir()
        # What a host spawned elsewhere might have: none of it may leak into our handlers.
        (self.cwd / ".env").write_text(
            "TELEMETRY_REMOTE_URL=http://127.0.0.1:9\nTELEMETRY_REMOTE_API_KEY=host-side-wrong-key\n"
        )
        self.stderr_path = root / "foreign-host.err"
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("WANDB_", "TELEMETRY_", "GOGGLES_"))
        }
        env.update(
            WANDB_MODE="disabled",
            WANDB_DIR=str(self.cwd),
            TELEMETRY_NO_REMOTE="1",
            TELEMETRY_REMOTE_API_KEY="host-side-wrong-key",
            PYTHONPATH=str(_SRC),
        )
        with open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "goggles_io._transport.host",
                    "--socket",
                    socket_path,
                    "--idle-timeout",
                    "0.5",
                ],
                cwd=self.cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
                start_new_session=True,
            )
        wait_until(lambda: os.path.exists(socket_path), what="foreign host listening")
        lock = Path(socket_path + ".lock")
        assert str(self.proc.pid) == lock.read_text().strip(), "another host holds the socket"

    def stderr(self) -> str:
        """What the host wrote on its stderr so far."""
        return self.stderr_path.read_text(errors="replace")


@pytest.fixture
def foreign_host(monkeypatch: pytest.MonkeyPatch) -> Iterator[ForeignHost]:
    """Run this test's goggles_io on the socket transport, served by a host started elsewhere.

    The host runs in another directory, with ``WANDB_MODE=disabled``, ``TELEMETRY_NO_REMOTE=1``
    and a wrong key in its environment and ``.env``: a handler works there only if its spec
    carries the attaching process's context.
    """
    from goggles_io.testing import reset_defaults

    root = Path(tempfile.mkdtemp(prefix="ggf-"))
    socket_path = str(root / "bus.sock")
    monkeypatch.setenv("GOGGLES_TRANSPORT", "socket")
    monkeypatch.setenv("GOGGLES_SOCKET", socket_path)
    monkeypatch.setenv("GOGGLES_HOST_IDLE_TIMEOUT", "0.5")
    reset_defaults()
    host = ForeignHost(root, socket_path)
    yield host
    reset_defaults()
    try:
        host.proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        host.proc.kill()
        host.proc.wait(timeout=30)
    shutil.rmtree(root, ignore_errors=True)
