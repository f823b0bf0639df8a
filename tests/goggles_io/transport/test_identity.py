"""The election lock names its host, never a client that only probed it."""

from __future__ import annotations

import os
from pathlib import Path

from goggles_io._transport.identity import acquire_host_lock


def test_a_probe_leaves_the_hosts_pid_in_the_lock_file(tmp_path: Path) -> None:
    """A client's probe (record_pid=False) takes and drops the lock without writing its pid:
    a reader of ``<socket>.lock`` (the chaos test, a user asking which process hosts the
    socket) never sees a client's pid there, and once killed the producer instead of the host."""
    socket_path = str(tmp_path / "bus.sock")
    Path(socket_path + ".lock").write_text("4242\n")

    fd = acquire_host_lock(socket_path, record_pid=False)
    assert fd is not None
    os.close(fd)

    assert "4242\n" == Path(socket_path + ".lock").read_text()


def test_the_holder_writes_its_pid(tmp_path: Path) -> None:
    """A host taking the lock writes its own pid over the last one."""
    socket_path = str(tmp_path / "bus.sock")
    Path(socket_path + ".lock").write_text("4242\n")

    fd = acquire_host_lock(socket_path)
    assert fd is not None
    try:
        assert f"{os.getpid()}\n" == Path(socket_path + ".lock").read_text()
    finally:
        os.close(fd)
