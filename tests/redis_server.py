"""A real ``redis-server`` on a free loopback port, started and stopped by the test.

The broker tests' fixtures (``goggles_io/broker/conftest.py``) and the experiment-side tests
share this one class.
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
    """One redis-server process on 127.0.0.1:<port>; can be killed and restarted on that port.

    Without ``aof`` nothing is persisted (a restart comes back empty); with it every write is
    in the append-only file before Redis answers (``appendfsync always``).
    """

    def __init__(self, root: Path, password: str | None = None, aof: bool = False) -> None:
        self.root = root
        self.port = free_port()
        self.password = password
        self.aof = aof
        self.proc: subprocess.Popen[bytes] | None = None
        auth = f":{password}@" if password else ""
        self.url = f"redis://{auth}127.0.0.1:{self.port}/0"

    def start(self) -> None:
        args = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1"]
        persist = ["yes", "--appendfsync", "always"] if self.aof else ["no"]
        args += ["--save", "", "--appendonly", *persist, "--dir", str(self.root)]
        if self.password:
            args += ["--requirepass", self.password]
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

    def kill(self) -> None:
        """SIGKILL: Redis gets no chance to save anything."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
        self.proc = None

    def client(self):  # type: ignore[no-untyped-def]
        import redis

        return redis.Redis.from_url(self.url)
