"""Any bytes a same-uid peer sends leave a real host serving, with its memory bounded (issue 41,
item 6; ADR 0062).

A dedicated host process (``python -m goggles_io._transport.host``) is fed hostile streams over
its socket, and its peak resident set (``VmHWM`` in ``/proc/<pid>/status``) is read before and
after. What it must hold: a FrameError closes the one connection (no acknowledgement), the
count a batch claims is checked before anything is built, large frames being received share a
64 MiB budget, and a well-behaved producer is served afterwards.
"""

from __future__ import annotations

import contextlib
import os
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings

from goggles_io import EventBus
from goggles_io._event.codec import Ack, Batch, Decoder, Encoder, Hello
from goggles_io._event.records import Event, Kind
from goggles_io._event.rows import row_of
from goggles_io._transport.framing import MAGIC, VERSION, FrameDecoder, encode_frame
from goggles_io._transport.host import Host
from hostile_frames import BATCH_TAG, ISSUE_FRAME, row, streams
from support import start, stop, wait_until

pytestmark = pytest.mark.slow
Bus = Any  # the ``bus`` fixture of this folder's conftest
_MIB = 1 << 20


def _status_kib(pid: int, key: str) -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise AssertionError(f"no {key} for pid {pid}")


def _peak_mib(pid: int) -> float:
    return _status_kib(pid, "VmHWM") / 1024


def _connectable(path: str) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        try:
            s.connect(path)
        except OSError:
            return False
    return True


@contextlib.contextmanager
def _dedicated_host(bus: Bus) -> Iterator[subprocess.Popen[bytes]]:
    """The dedicated host as users run it, on the bus's socket, stopped on the way out."""
    with open(bus.host_log, "ab") as log:
        proc = start(
            [
                sys.executable,
                "-m",
                "goggles_io._transport.host",
                "--socket",
                bus.socket,
                "--idle-timeout",
                "300",
            ],
            env=bus.env,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
    try:
        wait_until(lambda: _connectable(bus.socket), timeout_s=60, what="the host listening")
        yield proc
    finally:
        stop(proc)


def _exchange(
    path: str, data: bytes, *, until_ack: int | None = None, timeout_s: float = 30.0
) -> list[Ack]:
    """Send ``data`` and return the acknowledgements the host wrote: until ``Ack(until_ack)``
    (then we hang up), else until the host closed (having ended our side first)."""
    acks: list[Ack] = []
    frames, decoder = FrameDecoder(), Decoder()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout_s)
        s.connect(path)
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            s.sendall(data)
            if until_ack is None:
                s.shutdown(socket.SHUT_WR)
        while not (acks and acks[-1].seq == until_ack):
            try:
                chunk = s.recv(1 << 16)
            except TimeoutError:
                msg = f"the host neither answered nor closed in {timeout_s} s"
                raise AssertionError(msg) from None
            except ConnectionResetError:
                break
            if not chunk:
                break
            acks += [m for m in map(decoder.decode, frames.feed(chunk)) if type(m) is Ack]
    return acks


def _hello() -> bytes:
    return encode_frame(Encoder().encode(Hello(os.getpid())))


def _big_batch(nbytes: int) -> bytes:
    """A valid batch frame of about ``nbytes``: one log line that long."""
    event = Event(Kind.LOG, "global", "x" * nbytes, 20, None, 1.0, "big", os.getpid())
    return encode_frame(Encoder().encode(Batch(7, [row_of(event)])))


def _producer_served(bus: Bus, finished: Callable[..., Any]) -> None:
    finished(bus.run("producer.py", bus.jsonl, 500))
    wait_until(lambda: len(bus.lines()) >= 500, what="500 lines from a good producer")


class TestFuzzOverTheSocket:
    def test_any_bytes_give_frame_error_or_a_batch_and_the_host_grows_under_64_mib(
        self, bus: Bus, finished: Callable[..., Any]
    ) -> None:
        """Hypothesis streams (garbage, wild batch bodies, corrupted batches, claims of frames up
        to 4 GiB, frames cut short), one connection each: each gets acknowledgements for valid
        batches or is closed; the host's peak RSS grows by less than 64 MiB, a 40 MiB frame
        still finds the budget free afterwards, and a producer is served."""
        with _dedicated_host(bus) as host:
            assert [Ack(7, 0)] == _exchange(bus.socket, _hello() + _big_batch(100), until_ack=7)
            before = _peak_mib(host.pid)
            seen = {"examples": 0}

            @settings(
                max_examples=1000,
                deadline=None,
                database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
            )
            @given(streams())
            def one(stream: bytes) -> None:
                _exchange(bus.socket, stream)
                seen["examples"] += 1
                assert host.poll() is None, "the host died"

            one()
            grew = _peak_mib(host.pid) - before
            print(f"\nfuzz: {seen['examples']} streams, host peak RSS grew {grew:.1f} MiB")
            assert [Ack(7, 0)] == _exchange(
                bus.socket, _hello() + _big_batch(40 * _MIB), until_ack=7
            )
            _producer_served(bus, finished)

        assert grew < 64, grew


class TestCountsAndKinds:
    def test_the_63_byte_frame_costs_the_host_nothing(self, bus: Bus) -> None:
        """Issue 41's frame (a million rows, one column an empty list) sent 20 times: each
        connection is closed unacknowledged and the host's peak grows by under 16 MiB (it grew
        by 192-195 MiB per frame before)."""
        with _dedicated_host(bus) as host:
            assert not _exchange(bus.socket, _hello())
            before = _peak_mib(host.pid)
            replies = [_exchange(bus.socket, _hello() + ISSUE_FRAME) for _ in range(20)]
            grew = _peak_mib(host.pid) - before
            print(f"\n63-byte frame x 20: host peak grew {grew:.1f} MiB")

        assert [[]] * 20 == replies
        assert grew < 16, grew

    def test_scalar_rows_of_another_kind_are_refused_not_acknowledged(self, bus: Bus) -> None:
        """A tag-5 batch of ``image`` rows with numbers for payloads was acknowledged (then
        LocalStorageHandler raised AttributeError): now the connection is closed, no ack. (Tag
        5 is gone, ADR 0071: the one form's rows with a value are refused the same way.)"""
        body = msgpack.unpackb(Encoder().encode(Batch(3, [row(i) for i in range(4)])))[1]
        good = encode_frame(msgpack.packb([BATCH_TAG, body]))
        body[2] = "image"
        bad = encode_frame(msgpack.packb([BATCH_TAG, body]))
        with _dedicated_host(bus):
            accepted = _exchange(bus.socket, _hello() + good, until_ack=3)
            refused = _exchange(bus.socket, _hello() + bad, until_ack=3)  # or closed

        assert [Ack(3, 0)] == accepted
        assert [] == refused


def _header(length: int) -> bytes:
    return struct.pack(">BBI", MAGIC, VERSION, length)


class TestHalfSentFrames:
    def test_four_half_sent_60_mib_frames_hold_at_most_the_budget(
        self, bus: Bus, finished: Callable[..., Any]
    ) -> None:
        """Four peers each send 60 MiB of a 64 MiB frame and stop. The host takes one of them
        (the 64 MiB budget) and leaves the others in their sockets: its peak grows by under
        80 MiB (about 320 MiB before). Once they hang up it serves a producer again."""
        body = bytes(60 * _MIB)
        socks = [socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(4)]
        done: list[int] = []

        def send(i: int) -> None:
            with contextlib.suppress(OSError):
                socks[i].sendall(_header(64 * _MIB) + body)
                done.append(i)

        threads = [threading.Thread(target=send, args=(i,), daemon=True) for i in range(4)]
        with _dedicated_host(bus) as host:
            before = _peak_mib(host.pid)
            try:
                for s in socks:
                    s.connect(bus.socket)
                for t in threads:
                    t.start()
                wait_until(lambda: done, timeout_s=120, what="one half-sent frame taken in")
                # The others must not be: waiting for something that must never happen.
                with contextlib.suppress(AssertionError):
                    wait_until(lambda: len(done) > 1, timeout_s=5, what="no second frame")
                taken = len(done)
                grew = _peak_mib(host.pid) - before
                print(f"\nhalf-sent: {taken} of 4 frames taken in, host peak grew {grew:.1f} MiB")
            finally:
                for s in socks:
                    with contextlib.suppress(OSError):
                        s.shutdown(socket.SHUT_RDWR)
                    s.close()
                for t in threads:
                    t.join(30)
            _producer_served(bus, finished)
            assert host.poll() is None

        assert 1 == taken
        assert grew < 80, grew

    def test_a_stalled_half_sent_frame_is_closed_and_the_waiting_one_goes(self, bus: Bus) -> None:
        """A peer holding the budget with a half-sent frame and sending nothing is closed after
        the stall limit; a peer waiting for room then gets its frame in and acknowledged."""
        host = Host(
            bus.socket,
            EventBus(),
            idle_timeout_s=float("inf"),
            frame_budget_bytes=2 * _MIB,
            frame_stall_s=1.0,
        )
        host.bind()
        host.start()
        stalled = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            stalled.settimeout(60)
            stalled.connect(bus.socket)
            stalled.sendall(_header(int(1.5 * _MIB)) + bytes(10))
            wait_until(lambda: host.frame_budget.held, what="the stalled frame holds the budget")
            reply = _exchange(bus.socket, _hello() + _big_batch(_MIB), until_ack=7, timeout_s=60)
            closed = stalled.recv(16)
        finally:
            stalled.close()
            host.close(5)

        assert b"" == closed
        assert [Ack(7, 0)] == reply


class TestConnectionCap:
    def test_connections_past_the_cap_are_closed_at_accept(self, bus: Bus) -> None:
        """With room for three, a fourth connection is closed unserved (counted, one line); once
        one of the three leaves, a new one is served."""
        host = Host(bus.socket, EventBus(), idle_timeout_s=float("inf"), max_connections=3)
        host.bind()
        host.start()
        held = [socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(3)]
        try:
            for s in held:
                s.connect(bus.socket)
                s.sendall(_hello())
            fourth = _exchange(bus.socket, _hello() + _big_batch(10), until_ack=7)
            refused = host.too_many
            held.pop().close()
            wait_until(
                lambda: _exchange(bus.socket, _hello() + _big_batch(10), until_ack=7),
                what="a connection served once one of the three left",
            )
        finally:
            for s in held:
                s.close()
            host.close(5)

        assert [] == fourth
        assert 1 == refused
