"""Finding a host when nobody answers on the socket: spawn a dedicated one, or host here.

Election is the ``flock`` on ``<socket>.lock`` that a host holds for its whole life. A client
that cannot connect either spawns ``python -m goggles_io._transport.host`` in its own session
(the default; spawned hosts that lose the lock race exit at once) or, with
``GOGGLES_DEDICATED_HOST=0``, takes the lock itself and serves in a thread.
"""

from __future__ import annotations

import math
import os
import subprocess
import threading
import time

from goggles_io._bus.bus import EventBus
from goggles_io._bus.settings import Settings
from goggles_io._transport.client.spawn import spawn_detached
from goggles_io._transport.host import Host
from goggles_io._transport.identity import acquire_host_lock
from goggles_io._transport.settings import TransportSettings
from goggles_io._transport.shm import sweep_dead_segments

__all__ = ["HostElector"]

_SPAWN_RETRY_S = 3.0

# A fork between taking the election lock and closing it would leave the child holding the lock
# (flock belongs to the open file, which the child's copy of the fd keeps open): no host could
# then start until the child exits. Forks wait while a client holds it for that instant.
_PROBING = threading.Lock()


class _ForkHold:
    """Holds :data:`_PROBING` across a fork; the parent releases only what ``before`` took.

    This module is imported lazily, by the pipe's worker thread. An import that lands while
    another thread is inside ``os.fork()`` registers these hooks after that fork's ``before``
    hooks ran but before its ``after`` hooks run. A bare ``release`` in the parent then freed a
    lock the fork never took: the worker's own hold in :meth:`HostElector.elect`, which failed
    with "release unlocked lock" and started no host (a flaky fork test). The child, where only
    the forking thread lives, always starts with the lock free.
    """

    held = False

    @classmethod
    def before(cls) -> None:
        _PROBING.acquire()
        cls.held = True

    @classmethod
    def after_in_parent(cls) -> None:
        if cls.held:
            cls.held = False
            _PROBING.release()

    @classmethod
    def after_in_child(cls) -> None:
        cls.held = False
        if _PROBING.locked():  # held by this thread's before, or by a thread the child lacks
            _PROBING.release()


os.register_at_fork(
    before=_ForkHold.before,
    after_in_parent=_ForkHold.after_in_parent,
    after_in_child=_ForkHold.after_in_child,
)


class HostElector:
    """Start a host for ``socket_path``; one per client (a forked child builds its own)."""

    def __init__(self, socket_path: str, settings: Settings, transport: TransportSettings) -> None:
        self.socket_path = socket_path
        self.settings = settings
        self.transport = transport
        self.host: Host | None = None  # the in-process host, when this process serves
        self._spawned: subprocess.Popen[bytes] | None = None
        self._spawned_at = -1e9

    def elect(self) -> None:
        """Make sure a host is starting; raises when one cannot be started here."""
        if not self.transport.dedicated_host:
            self._host_here()
            return
        spawned = self._spawned
        if spawned is not None and spawned.poll() is None:
            if time.monotonic() - self._spawned_at < _SPAWN_RETRY_S:
                return  # still starting up
        with _PROBING:
            lock_fd = acquire_host_lock(self.socket_path, record_pid=False)
            if lock_fd is None:
                return  # a host holds the lock: it is starting, we will connect shortly
            os.close(lock_fd)
        self._spawn()

    def _host_here(self) -> None:
        lock_fd = acquire_host_lock(self.socket_path)
        if lock_fd is None:
            return
        sweep_dead_segments()
        bus = EventBus(
            async_mode=True,
            queue_size=self.settings.queue_size,
            queue_bytes=self.settings.queue_bytes,
            policy=self.settings.delivery,
        )
        host = Host(self.socket_path, bus, idle_timeout_s=math.inf, lock_fd=lock_fd)
        try:
            host.bind()
        except (OSError, FileExistsError):
            os.close(lock_fd)
            raise
        host.start()
        self.host = host

    def _spawn(self) -> None:
        self._spawned = spawn_detached(
            [
                "goggles_io._transport.host",
                "--socket",
                self.socket_path,
                "--idle-timeout",
                repr(self.transport.host_idle_timeout_s),
            ],
            self.transport.host_log,
        )
        self._spawned_at = time.monotonic()

    def close(self, timeout_s: float) -> None:
        """Stop the in-process host, if this process runs one."""
        if self.host is not None:
            self.host.close(timeout_s)
            self.host = None
