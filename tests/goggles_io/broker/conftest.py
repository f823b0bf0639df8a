"""A real ``redis-server`` per test, on a free loopback port, started and stopped by the test."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from redis_server import RedisServer
from support import start, stop

SCRIPTS = Path(__file__).parent / "scripts"
_SRC = Path(__file__).parents[3] / "src"
_TESTS = Path(__file__).parents[2]

pytestmark = pytest.mark.skipif(
    shutil.which("redis-server") is None,
    reason="redis-server is not installed (.ci/run installs Debian's redis-server)",
)


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    """A ``redis-server`` of the test's own on a free loopback port, stopped afterwards."""
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    root = Path(tempfile.mkdtemp(prefix="ggr-"))
    server = RedisServer(root)
    server.start()
    yield server
    server.stop()
    shutil.rmtree(root, ignore_errors=True)


class Machines:
    """Scripts run as separate "machines": each its own socket (so its own host)."""

    def __init__(self, root: Path, broker_url: str) -> None:
        self.root = root
        self.broker_url = broker_url
        self.procs: list[subprocess.Popen[str]] = []

    def run(
        self, script: str, *args: object, machine: str = "m0", **env: str
    ) -> subprocess.Popen[str]:
        sock_dir = self.root / machine
        sock_dir.mkdir(exist_ok=True, mode=0o700)
        full_env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("GOGGLES_")},
            "GOGGLES_TRANSPORT": "socket",
            "GOGGLES_SOCKET": str(sock_dir / "bus.sock"),
            "GOGGLES_HOST_IDLE_TIMEOUT": "0.5",
            "GOGGLES_HOST_LOG": str(sock_dir / "host.log"),
            "GOGGLES_BROKER": self.broker_url,
            "GOGGLES_SPOOL_DIR": str(self.root / "spool"),
            "GOGGLES_BROKER_CLAIM_IDLE_MS": "300",
            "PYTHONPATH": os.pathsep.join([str(SCRIPTS), str(_SRC), str(_TESTS)]),
            **env,
        }
        proc = start(
            [sys.executable, str(SCRIPTS / script), *map(str, args)],
            cwd=SCRIPTS,
            env=full_env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.procs.append(proc)
        return proc

    def host_log(self, machine: str) -> str:
        path = self.root / machine / "host.log"
        return path.read_text(errors="replace") if path.exists() else ""


@pytest.fixture
def aof_redis_server() -> Iterator[RedisServer]:
    """A redis-server that keeps its data through a restart (append-only file, fsync always)."""
    root = Path(tempfile.mkdtemp(prefix="gga-"))
    server = RedisServer(root, aof=True)
    server.start()
    yield server
    server.stop()
    shutil.rmtree(root, ignore_errors=True)


def _machines(server: RedisServer) -> Iterator[Machines]:
    root = Path(tempfile.mkdtemp(prefix="ggm-"))
    m = Machines(root, server.url)
    yield m
    for proc in m.procs:
        stop(proc)
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def machines(redis_server: RedisServer) -> Iterator[Machines]:
    yield from _machines(redis_server)


@pytest.fixture
def aof_machines(aof_redis_server: RedisServer) -> Iterator[Machines]:
    """Machines on the Redis of ``aof_redis_server``."""
    yield from _machines(aof_redis_server)


@pytest.fixture
def password_redis() -> Iterator[tuple[RedisServer, Machines]]:
    """A redis-server that requires a password, and machines whose URL carries it."""
    root = Path(tempfile.mkdtemp(prefix="ggp-"))
    server = RedisServer(root, password="s3cret")
    server.start()
    (root / "m").mkdir()
    m = Machines(root / "m", server.url)
    yield server, m
    for proc in m.procs:
        stop(proc)
    server.stop()
    shutil.rmtree(root, ignore_errors=True)
