"""The on-disk spool: records and blobs come back in order, the budget holds, dead owners' folders
are swept, and a closed spool leaves nothing (ADR 0025)."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from goggles_io import Event, Kind
from goggles_io._delivery.policy import DeliveryPolicy, WhenFull, read_delivery_policy
from goggles_io._delivery.spool import Spool
from goggles_io._delivery.spool_space import list_spools, remove_own_tree, sweep_dead_spools
from goggles_io._event.rows import events_of, row_of
from goggles_io._event.spilled import SpillEncoder, decode_spilled
from goggles_io._util.liveness import pid_alive

T = TypeVar("T")


def _policy(tmp: Path, **kw: object) -> DeliveryPolicy:
    return DeliveryPolicy(spool_dir=str(tmp), **kw)  # type: ignore[arg-type]


class TestSpool:
    @settings(max_examples=30, deadline=None)
    @given(records=st.lists(st.binary(max_size=3000), max_size=60))
    def test_records_come_back_in_order(self, tmp_path_factory, records: list[bytes]) -> None:
        """Whatever is appended is popped back byte for byte, oldest first, then None."""
        spool = Spool("t", _policy(tmp_path_factory.mktemp("s")))
        for record in records:
            assert spool.append(record)
        got = [spool.pop() for _ in records]
        tail = spool.pop()
        spool.close()

        assert (records, None) == (got, tail)

    def test_blobs_are_read_straight_back(self, tmp_path: Path) -> None:
        """A record's blobs (written from their own buffers) read back into a new buffer."""
        spool = Spool("t", _policy(tmp_path))
        spool.append(b"head", [b"ab", memoryview(b"cdef")])
        record = spool.pop_record()
        assert record is not None
        into = bytearray(4)
        record.read_blob(2, memoryview(into))
        spool.close()

        assert (b"head", 6, b"cdef") == (record.data, record.blob_bytes, bytes(into))

    def test_budget_refuses_with_a_reason_and_writes_nothing(self, tmp_path: Path) -> None:
        """Past GOGGLES_SPOOL_BYTES the append is refused, the failure says why."""
        spool = Spool("t", _policy(tmp_path, spool_bytes=100_000))
        taken = sum(spool.append(b"x" * 1000) for _ in range(200))
        spool.close()

        assert taken < 200 and "spool budget full" in spool.failure

    def test_close_removes_the_folder_of_the_process(self, tmp_path: Path) -> None:
        """After the last spool of a process closes, no folder of it is left."""
        spools = [Spool(f"t{i}", _policy(tmp_path)) for i in range(3)]
        for spool in spools:
            spool.append(b"x")
        for spool in spools:
            spool.close()

        assert [] == list_spools(tmp_path)

    def test_folder_of_a_dead_process_is_swept(self, tmp_path: Path) -> None:
        """A folder left by a SIGKILLed process is removed by the sweep, with its size."""
        code = (
            "import os, signal, sys; sys.path[:0] = sys.argv[2:]\n"
            "from goggles_io._delivery.spool import Spool\n"
            "from goggles_io._delivery.policy import DeliveryPolicy\n"
            "Spool('t', DeliveryPolicy(spool_dir=sys.argv[1])).append(b'x' * 1000)\n"
            "os.kill(os.getpid(), signal.SIGKILL)"
        )
        done = subprocess.run([sys.executable, "-c", code, str(tmp_path), *sys.path], check=False)
        left = list_spools(tmp_path)
        swept = sweep_dead_spools(tmp_path)

        assert -9 == done.returncode and 1 == len(left)
        assert [left[0]] == [name for name, size in swept if size > 1000]
        assert [] == list_spools(tmp_path)


def dead_pids(n: int) -> list[int]:
    """``n`` pids no process has now, for folder names of dead owners."""
    return list(itertools.islice((p for p in range(999_999, 1, -1) if not pid_alive(p)), n))


def _within(timeout_s: float, call: Callable[[], T], release: Path) -> T:
    """``call()`` on a thread; if it is still blocked after ``timeout_s`` (opening the FIFO
    ``release``), open the FIFO's other end to free it, then fail."""
    out: list[T] = []
    worker = threading.Thread(target=lambda: out.append(call()), daemon=True)
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        fd = os.open(release, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        worker.join(timeout_s)
        raise AssertionError(f"blocked for {timeout_s} s on the FIFO {release}")
    return out[0]


class TestSweepNeverOpensWhatIsNotOurs:
    def test_fifo_symlink_and_fifo_inside_are_left_and_nothing_hangs(self, tmp_path: Path) -> None:
        """lstat first: a FIFO named like a folder is never opened, a symlink never followed, a
        folder holding a FIFO loses its regular files and keeps the rest; a plain dead folder goes."""
        root, outside = tmp_path / "spool", tmp_path / "outside"
        root.mkdir()
        outside.mkdir()
        (outside / "keep.txt").write_text("mine")
        fifo, link, holder, plain = (f"p{pid}-1" for pid in dead_pids(4))
        os.mkfifo(root / fifo)
        (root / link).symlink_to(outside, target_is_directory=True)
        (root / holder / "sub").mkdir(parents=True)
        os.mkfifo(root / holder / "sub" / "q")
        (root / holder / "old.seg").write_bytes(b"x" * 100)
        (root / plain / "client-1").mkdir(parents=True)
        (root / plain / "client-1" / "0.seg").write_bytes(b"x" * 300)

        swept = _within(30, lambda: sweep_dead_spools(root), release=root / fifo)

        assert [(plain, 300)] == swept
        assert sorted([fifo, link, holder]) == list_spools(root)
        assert ["sub"] == os.listdir(root / holder)
        assert "mine" == (outside / "keep.txt").read_text()
        assert (root / link).is_symlink()

    def test_a_symlink_given_as_the_folder_is_not_followed(self, tmp_path: Path) -> None:
        """remove_own_tree on a symlink leaves it and its target."""
        (tmp_path / "target").mkdir()
        (tmp_path / "target" / "f").write_text("keep")
        (tmp_path / "link").symlink_to(tmp_path / "target")

        assert (False, 0) == remove_own_tree(tmp_path / "link")
        assert "keep" == (tmp_path / "target" / "f").read_text()


class TestSpilledEvents:
    def test_events_with_arrays_round_trip_through_a_spool(self, tmp_path: Path) -> None:
        """A list of events, big arrays beside the record, comes back equal."""
        events = [
            Event(
                kind=Kind.IMAGE, scope="global", payload=np.arange(10_000, dtype=np.int32), step=1
            ),
            Event(kind=Kind.METRIC, scope="global", payload={"loss": 0.5}, step=2),
            Event(kind=Kind.TEXT, scope="global", payload="hello", step=3),
        ]
        spool = Spool("t", _policy(tmp_path))
        record, blobs = SpillEncoder().encode([row_of(event) for event in events])
        spool.append(record, blobs)
        popped = spool.pop_record()
        assert popped is not None
        got = events_of(decode_spilled(popped))  # spilled as rows (ADR 0071)
        spool.close()

        assert events == got


class TestPolicy:
    def test_defaults(self) -> None:
        """With no variable set: spill, 4 GiB, 5 s, the default folder."""
        got = read_delivery_policy({})

        assert (WhenFull.SPILL, 4 * 1024**3, 5.0, None) == (
            got.when_full,
            got.spool_bytes,
            got.block_timeout_s,
            got.spool_dir,
        )

    def test_malformed_value_names_the_variable(self) -> None:
        """GOGGLES_WHEN_FULL=sometimes is refused, naming the variable and the choices."""
        try:
            read_delivery_policy({"GOGGLES_WHEN_FULL": "sometimes"})
        except ValueError as exc:
            message = str(exc)
        else:
            message = ""

        assert "GOGGLES_WHEN_FULL" in message and "'spill', 'block', 'drop'" in message

    def test_a_handler_may_only_be_stricter(self) -> None:
        """A handler's when_full tightens the policy; it never loosens it."""
        drop = DeliveryPolicy(when_full=WhenFull.DROP)

        assert WhenFull.DROP == drop.stricter(WhenFull.SPILL).when_full
        assert WhenFull.BLOCK == DeliveryPolicy().stricter(WhenFull.BLOCK).when_full


def test_spool_folder_is_private(tmp_path: Path) -> None:
    """The process folder and the spool's own are 0700."""
    spool = Spool("t", _policy(tmp_path))
    spool.append(b"x")
    assert spool.path is not None
    modes = {oct(os.stat(p).st_mode & 0o777) for p in (spool.path, spool.path.parent)}
    spool.close()

    assert {"0o700"} == modes
