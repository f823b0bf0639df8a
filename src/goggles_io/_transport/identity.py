"""Who is on the socket: the host holding its election lock, and the peer at the other end.

A host holds ``flock`` on ``<socket>.lock`` for its whole life (the election, see
:mod:`~goggles_io._transport.client.election`); every connection's peer is checked with Linux
``SO_PEERCRED`` so only processes of the host's own uid are served (ADR 0010).
"""

from __future__ import annotations

import fcntl
import os
import socket
import struct

__all__ = ["acquire_host_lock", "peer_credentials"]


def acquire_host_lock(socket_path: str, *, record_pid: bool = True) -> int | None:
    """Take the election lock next to the socket without waiting; ``None`` if another host holds it.

    ``record_pid=False`` for a probe that only asks whether a host holds it (a client about to
    spawn one): the file keeps naming a host, never a client that held the lock for a moment.
    """
    fd = os.open(socket_path + ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    if not record_pid:
        return fd
    # The holder's pid, for diagnostics ("which process hosts this socket?").
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def peer_credentials(conn: socket.socket) -> tuple[int, int, int] | None:
    """Return ``(pid, uid, gid)`` of the peer (Linux ``SO_PEERCRED``), ``None`` where unsupported."""
    opt = getattr(socket, "SO_PEERCRED", None)
    if opt is None:
        return None
    raw = conn.getsockopt(socket.SOL_SOCKET, opt, struct.calcsize("3i"))
    pid, uid, gid = struct.unpack("3i", raw)
    return pid, uid, gid
