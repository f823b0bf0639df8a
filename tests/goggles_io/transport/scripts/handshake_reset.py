"""A connection reset before its handshake is sent, then a real host; argv: path n.

What a client meets when it reconnects while a SIGKILLed host is being torn down: the kernel
releases the dead host's connections first (the client sees EOF) and its listener last, so the
reconnect lands in the dead listener's backlog and the first send fails. This script plays that
host: it holds the election lock and listens, and closes both the moment the client has
connected, before the client sends its handshake. Then the client must elect a real host and
deliver every event. Prints ``timed_out <bool>``.
"""

from __future__ import annotations

import fcntl
import os
import socket
import sys

from _setup import attach_sink, use_socket

import goggles_io as gg
from goggles_io._transport.client.link import HostLink

path, n = sys.argv[1], int(sys.argv[2])
socket_path = os.environ["GOGGLES_SOCKET"]
lock_fd = os.open(socket_path + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # no host may be spawned meanwhile
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind(socket_path)
listener.listen(8)  # never accepts: the connection waits in the backlog, as in a dead host's

real_handshake = HostLink._handshake
dying = [True]


def host_dies_now(self: HostLink, sock: socket.socket) -> None:
    """The client has connected; the host is gone before its handshake goes out."""
    if dying and dying.pop():
        listener.close()  # resets the connection waiting in the backlog
        os.unlink(socket_path)
        os.close(lock_fd)  # the election is open again
    real_handshake(self, sock)  # sends on the reset connection first: BrokenPipeError


HostLink._handshake = host_dies_now  # type: ignore[method-assign]
use_socket()
attach_sink(path)
log = gg.get_logger("reset", with_metrics=True)
for i in range(n):
    log.scalar("x", float(i), step=i)
report = gg.finish(timeout=30)
print("timed_out", report.timed_out, flush=True)
