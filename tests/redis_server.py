"""A real ``redis-server`` on a free loopback port, for tests outside ``goggles_io/broker``.

The same as that folder's conftest ``RedisServer`` (its fixtures are not importable from other
folders), kept to what the experiment-side tests need: start, stop.
"""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

from support import wait_until

__all__ = ["RedisServer", "free_port"]


def free_port() -> int:
    """A loopback TCP port nothing listens on (right now)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RedisServer:
    """One redis-server process on 127.0.0.1:<port>, no persistence."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        args = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1"]
        args += ["--save", "", "--appendonly", "no", "--dir", str(self.root)]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until(self.ping, timeout_s=30, what=f"redis-server on port {self.port} answers")

    def ping(self) -> bool:
        import redis

        try:
            return bool(redis.Redis.from_url(self.url, socket_connect_timeout=0.5).ping())
        except redis.RedisError:
            return False

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)
        self.proc = None
