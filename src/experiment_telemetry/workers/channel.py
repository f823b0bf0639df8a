"""``WorkerChannel``: the experiment's end of one worker process, JSON lines both ways.

A worker is a fresh interpreter, ``python -m experiment_telemetry.workers.process`` (the
"spawn" model without multiprocessing's pickled bootstrap). The channel starts it with the
environment ``worker_env`` builds, writes one command per line on its stdin, reads its replies
on a thread of its own and hands each to a callback, and ends it: EOF on stdin lets the worker
finish goggles_io and exit, a kill follows a deadline. What the commands mean is the pool's
business (``pool.py``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["WorkerChannel", "worker_env"]


def worker_env(scope: str) -> tuple[dict[str, str], str | None]:
    """The workers' environment, and the folder of their own socket when a broker links them.

    Workers import what this process can (the runtime factory may live on ``sys.path`` only).
    With ``GOGGLES_BROKER`` set they stand for other machines: their own host, on a socket in a
    new temporary folder (returned; the caller removes it), reaching this process only through
    the broker, on a stream named for ``scope`` unless ``GOGGLES_BROKER_RUN`` names one (set
    here too, for this process's consumer). Without a broker the folder is None.
    """
    env = dict(os.environ)
    remote_dir: str | None = None
    if env.get("GOGGLES_BROKER", "").strip():
        remote_dir = tempfile.mkdtemp(prefix="experiment-workers-")
        env["GOGGLES_SOCKET"] = os.path.join(remote_dir, "workers.sock")
        env["GOGGLES_DEDICATED_HOST"] = "1"
        run = env.get("GOGGLES_BROKER_RUN") or scope.replace("experiment_workers.", "w")
        env["GOGGLES_BROKER_RUN"] = os.environ["GOGGLES_BROKER_RUN"] = run
        env["GOGGLES_BROKER_FORWARD"] = "1"  # the workers' events are what the stream is for
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p and os.path.isdir(p))
    return env, remote_dir


class WorkerChannel:
    """One worker process, its pipes and the thread that reads its replies.

    ``alive`` stays True until the owner marks the process ended (from ``on_exit``, under its
    own lock, together with whatever else that death changes); ``send`` does nothing after.

    Args:
        index: the worker's number in its pool.
        env: the process environment (``worker_env``).
        on_reply: called on the reader thread with each reply line that is JSON.
        on_exit: called on the reader thread with the return code once the worker's stdout
            closed.
    """

    def __init__(
        self,
        index: int,
        env: Mapping[str, str],
        *,
        on_reply: Callable[[Any], None],
        on_exit: Callable[[int], None],
    ) -> None:
        self.index = index
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "experiment_telemetry.workers.process"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            env=dict(env),
        )
        self.pid = self.proc.pid
        self.alive = True
        self._on_reply = on_reply
        self._on_exit = on_exit
        self._reader = threading.Thread(
            target=self._read, name=f"experiment:worker-{index}", daemon=True
        )

    def start_reading(self) -> None:
        """Start the reader thread (the pool sends the setup line first)."""
        self._reader.start()

    def send(self, message: Mapping[str, Any]) -> bool:
        """Write ``message`` as one JSON line; False when the worker is gone."""
        stdin = self.proc.stdin
        if stdin is None or not self.alive:
            return False
        try:
            stdin.write(json.dumps(message) + "\n")
            stdin.flush()
        except (OSError, ValueError):  # its pipe closed: the reader thread reports the death
            return False
        return True

    @property
    def input_closed(self) -> bool:
        """Whether this side closed the worker's stdin (the worker was told to end)."""
        stdin = self.proc.stdin
        return stdin is None or stdin.closed

    def close_input(self) -> None:
        """EOF on the worker's stdin: it finishes goggles_io and exits. Idempotent."""
        stdin = self.proc.stdin
        if stdin is not None and not stdin.closed:
            try:
                stdin.close()
            except OSError:
                pass

    def wait(self, timeout_s: float) -> None:
        """Wait up to ``timeout_s`` for the worker to exit; kill it after that."""
        try:
            self.proc.wait(max(0.0, timeout_s))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def join(self, timeout_s: float) -> None:
        """Wait up to ``timeout_s`` for the reader thread to end (if it ever started)."""
        if self._reader.ident is not None:
            self._reader.join(timeout=timeout_s)

    def _read(self) -> None:
        stdout = self.proc.stdout
        assert stdout is not None
        for line in stdout:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            self._on_reply(message)
        self._on_exit(self.proc.wait())
