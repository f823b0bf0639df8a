"""Array references a peer sends are checked before the host opens, blocks or allocates
(issue 41, item 6; ADR 0062): a FIFO where a segment should be, a size beyond the file, a shape
whose size overflows 64 bits."""

from __future__ import annotations

import os
import threading
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from goggles_io._event.records import ShmRef
from goggles_io._transport.diskpool import DiskReader
from goggles_io._transport.shm import ShmPool, ShmReader, get_shm_dir
from goggles_io.exceptions import FrameError


def _refused_without_blocking(read: object, ref: ShmRef) -> str:
    """Run ``read(ref)`` in a thread: it must raise FrameError, and at once (not block)."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            read(ref)  # type: ignore[operator]
        except BaseException as exc:  # recorded for the assertion below
            outcome.append(exc)
        else:
            outcome.append(None)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(20)
    assert not thread.is_alive(), "the reader blocked on the reference"
    [exc] = outcome
    assert isinstance(exc, FrameError), exc
    return str(exc)


class TestNeverBlocksOnAFifo:
    def test_shared_memory_name_that_is_a_fifo(self) -> None:
        """A FIFO named like one of our segments: refused, and opening it does not block."""
        path = Path(get_shm_dir()) / f"goggles_io-{os.getuid()}-999999999-7"
        os.mkfifo(path, 0o600)
        try:
            text = _refused_without_blocking(ShmReader().read, ShmRef(path.name, 0, 8, "<f8", (1,)))
        finally:
            path.unlink()

        assert "regular file" in text

    def test_disk_pool_segment_that_is_a_fifo(self, tmp_path: Path) -> None:
        folder = tmp_path / "p123-456" / "diskpool-1"
        folder.mkdir(parents=True)
        fifo = folder / "0.seg"
        os.mkfifo(fifo, 0o600)
        reader = DiskReader()
        try:
            text = _refused_without_blocking(reader.read, ShmRef(str(fifo), 0, 8, "<f8", (1,)))
        finally:
            reader.close()

        assert "regular file" in text


class TestSizeBeforeAllocation:
    def test_disk_pool_reference_beyond_the_file_allocates_nothing(self, tmp_path: Path) -> None:
        """A 1 GiB array claimed from a 4 KiB segment file is refused before numpy allocates."""
        folder = tmp_path / "p123-456" / "diskpool-1"
        folder.mkdir(parents=True)
        seg = folder / "0.seg"
        seg.write_bytes(bytes(4096))
        reader = DiskReader()
        tracemalloc.start()
        try:
            with pytest.raises(FrameError, match="beyond the end"):
                reader.read(ShmRef(str(seg), 0, 1 << 30, "|u1", (1 << 30,)))
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
            reader.close()

        assert peak < 1 << 20, peak

    def test_shape_whose_size_overflows_64_bits_is_refused(self) -> None:
        """2**32 x 2**32 elements wrap to 0 in int64: counted with Python ints, it is refused."""
        pool = ShmPool.with_budget(1 << 20)
        try:
            ref = pool.put(np.zeros(4))
            assert ref is not None
            bad = ShmRef(ref.segment, ref.offset, 0, "|u1", (1 << 32, 1 << 32))
            with pytest.raises(FrameError, match="out of bounds"):
                ShmReader().read(bad)
        finally:
            pool.close()
