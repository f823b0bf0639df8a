"""The host serving real client processes over a real Unix socket."""

from __future__ import annotations

import json
import os
import random
import socket
import stat
import struct
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from goggles_io import EventBus
from goggles_io._transport.framing import HEADER_BYTES, MAGIC, VERSION, encode_frame
from goggles_io._transport.host import Host
from goggles_io._transport.settings import prepare_socket_dir
from goggles_io.exceptions import SocketOwnershipError
from support import wait_until


class TestDelivery:
    def test_four_processes_deliver_every_event_exactly_once(self, bus, finished) -> None:
        """4 producers x 20k scalars end up in the host's JSONL exactly once each."""
        procs = [bus.run("producer.py", bus.jsonl, 20_000) for _ in range(4)]
        for proc in procs:
            finished(proc, timeout_s=120)
        wait_until(lambda: len(bus.lines()) >= 80_000, timeout_s=30, what="80k lines")
        rows = [json.loads(line) for line in bus.lines()]
        seen = Counter((r["pid"], r["step"]) for r in rows)

        assert {p.pid for p in procs} == {pid for pid, _ in seen}
        assert 80_000 == len(rows)
        assert {1} == set(seen.values())

    def test_socket_is_created_owner_only(self, bus, finished) -> None:
        """The host's socket has mode 0600."""
        proc = bus.run("steady.py", bus.jsonl, str(bus.root / "stop"))
        wait_until(lambda: len(bus.lines()) > 10, what="host is serving")
        mode = stat.S_IMODE(os.stat(bus.socket).st_mode)
        (bus.root / "stop").touch()
        finished(proc)

        assert 0o600 == mode


class TestIdleExit:
    def test_host_exits_after_its_sigkilled_last_client(self, bus) -> None:
        """A client SIGKILLed mid-stream (no goodbye) still lets the host exit after its idle grace."""
        proc = bus.run("steady.py", bus.jsonl, str(bus.root / "never"))
        wait_until(lambda: len(bus.lines()) > 100, what="host is serving")
        host = bus.host_pid()
        proc.kill()
        proc.communicate(timeout=30)
        wait_until(lambda: not bus.host_alive(), timeout_s=20, what="host exits after idle grace")

        assert host is not None
        assert not os.path.exists(bus.socket)


def _in_process_host(path: str) -> Host:
    host = Host(path, EventBus(async_mode=True), idle_timeout_s=float("inf"))
    host.bind()
    host.start()
    return host


def _garbage(rng: random.Random) -> bytes:
    choice = rng.randrange(5)
    if choice == 0:  # random bytes
        return rng.randbytes(rng.randrange(1, 64))
    if choice == 1:  # valid header, garbage payload
        return encode_frame(rng.randbytes(rng.randrange(0, 64)))
    if choice == 2:  # oversized length
        return struct.pack(">BBI", MAGIC, VERSION, 0xFFFFFFFF)
    if choice == 3:  # truncated frame, then EOF
        return encode_frame(rng.randbytes(32))[: HEADER_BYTES + rng.randrange(0, 32)]
    # a well-formed message with hostile content: an array of object dtype
    return encode_frame(bytes([0x92, 0x01, 0x92, 0x01, 0x91]) + rng.randbytes(8))


class TestHostileInput:
    def test_ten_thousand_bad_frames_leave_the_host_serving(
        self, bus, finished, monkeypatch
    ) -> None:
        """After 10k malformed, truncated and oversized frames a well-behaved client is still served."""
        monkeypatch.syspath_prepend(str(Path(__file__).parent / "scripts"))
        host = _in_process_host(bus.socket)
        rng = random.Random(4)
        try:
            for _ in range(10_000):
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                    s.connect(bus.socket)
                    s.sendall(_garbage(rng))
            proc = bus.run("producer.py", bus.jsonl, 500)
            finished(proc)
            wait_until(lambda: len(bus.lines()) >= 500, what="500 lines from the good client")
            lines = len(bus.lines())
        finally:
            host.close(5)

        assert 500 == lines
        assert host.bad_frames > 0


_OTHER_USER = "ggtransport"


def _user_exists(name: str) -> bool:
    return subprocess.run(["id", "-u", name], capture_output=True).returncode == 0


@pytest.fixture
def other_user() -> Iterator[tuple[int, int]]:
    """A second system user ``(uid, gid)``: reused if present, removed at teardown if we made it."""
    created = False
    if not _user_exists(_OTHER_USER):
        made = subprocess.run(
            ["useradd", "--no-create-home", "--shell", "/bin/false", _OTHER_USER],
            capture_output=True,
            text=True,
        )
        created = made.returncode == 0
        if not created and not _user_exists(_OTHER_USER):  # lost no race: a real failure
            pytest.fail(f"useradd {_OTHER_USER} failed: {made.stderr.strip()}")
    ids = subprocess.run(["id", "-u", _OTHER_USER], capture_output=True, text=True, check=True)
    gids = subprocess.run(["id", "-g", _OTHER_USER], capture_output=True, text=True, check=True)
    try:
        yield int(ids.stdout), int(gids.stdout)
    finally:
        if created:
            subprocess.run(["userdel", _OTHER_USER], capture_output=True, check=False)


needs_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="needs root to create a second user and run a peer as that uid"
)


@needs_root
class TestPeerUid:
    @pytest.mark.filterwarnings("ignore:os.fork")
    def test_peer_of_another_uid_is_refused(self, bus, capfd, other_user) -> None:
        """Even with the socket mode opened up, a peer of another uid is disconnected (SO_PEERCRED)."""
        uid, gid = other_user
        host = _in_process_host(bus.socket)
        os.chmod(bus.root, 0o711)  # simulate a misconfigured mode: the uid check must still hold
        os.chmod(bus.socket, 0o666)
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # child: become the other user, connect, expect EOF
            os.close(read_end)
            code = 2
            try:
                os.setgid(gid)
                os.setuid(uid)
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                    s.settimeout(30)
                    s.connect(bus.socket)  # succeeds: the file mode lets us in
                    code = 1
                    try:
                        s.sendall(encode_frame(b"\x92\x00\x92\x01\x01"))
                        code = 0 if s.recv(100) == b"" else 1
                    except (ConnectionResetError, BrokenPipeError):
                        code = 0  # the host hung up on us
            except BaseException as exc:  # tell the parent why, instead of a bare exit code
                os.write(write_end, repr(exc).encode()[:1000])
            finally:
                os._exit(code)
        os.close(write_end)
        _, status = os.waitpid(pid, 0)
        with os.fdopen(read_end, "rb") as why:
            child_error = why.read().decode(errors="replace")
        code = os.waitstatus_to_exitcode(status)
        if code == 2:
            host.close(5)
            pytest.fail(
                f"the child running as uid {uid} could not reach {bus.socket!r}: {child_error}. "
                "Every directory above the socket must be traversable by other users (mode o+x) "
                "for this test; the host was never asked anything."
            )
        wait_until(lambda: host.refused == 1, what="host counted the refusal")
        host.close(5)

        assert 0 == code, child_error
        assert "refused peer" in capfd.readouterr().err

    def test_socket_path_of_another_user_is_refused_by_name(self, bus, other_user) -> None:
        """A socket path owned by another uid raises SocketOwnershipError naming the path."""
        uid, gid = other_user
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.bind(bus.socket)
            os.chown(bus.socket, uid, gid)
            with pytest.raises(SocketOwnershipError, match=str(Path(bus.socket))):
                prepare_socket_dir(bus.socket)
