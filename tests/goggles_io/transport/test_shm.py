"""The shared-memory pool: reuse, release, owner-only unlink, sweeping by owner liveness."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from goggles_io._event.records import ShmRef
from goggles_io._transport.shm import ShmPool, ShmReader, list_segments, sweep_dead_segments
from goggles_io.exceptions import FrameError


@pytest.fixture
def pool():
    p = ShmPool(segment_bytes=1 << 20, max_segments=2)
    yield p
    p.close()


class TestShmPool:
    def test_many_arrays_reuse_one_segment(self, pool: ShmPool) -> None:
        """Put-and-release of 100 arrays uses one segment, not one per array."""
        reader = ShmReader()
        for i in range(100):
            ref = pool.put(np.full((256, 256), i, dtype=np.uint8))
            assert ref is not None
            assert i == int(reader.read(ref)[0, 0])
            pool.release(ref.segment, ref.offset)
        reader.close()

        assert 1 == len(pool.segment_names)

    def test_full_pool_returns_none(self, pool: ShmPool) -> None:
        """When every segment is full, put returns None (the caller drops and counts)."""
        refs = [pool.put(np.zeros(600_000, dtype=np.uint8)) for _ in range(3)]

        assert refs[2] is None
        assert all(r is not None for r in refs[:2])

    def test_close_unlinks_every_segment(self) -> None:
        """close() leaves nothing of this pool in the shm directory."""
        p = ShmPool(segment_bytes=1 << 20)
        p.put(np.zeros(10, dtype=np.float32))
        names = p.segment_names
        p.close()

        assert names
        assert not set(names) & set(list_segments())

    def test_oversized_array_gets_a_one_off_segment_freed_on_release(self, pool: ShmPool) -> None:
        """An array larger than a segment uses a one-off segment, unlinked when released."""
        ref = pool.put(np.zeros(3 << 20, dtype=np.uint8))
        assert ref is not None
        pool.release(ref.segment, ref.offset)

        assert ref.segment not in list_segments()


class TestSweep:
    def test_segments_of_a_dead_owner_are_swept(self) -> None:
        """A segment whose owner pid is dead is unlinked by sweep_dead_segments."""
        code = (
            "import numpy as np; from goggles_io._transport.shm import ShmPool; "
            "p = ShmPool(segment_bytes=1 << 16); p.put(np.zeros(4)); print(p.segment_names[0])"
        )
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        name = out.stdout.strip()  # the child exited without close(): its segment leaked
        assert name in list_segments()
        swept = sweep_dead_segments()

        assert name in swept
        assert name not in list_segments()

    def test_live_owner_segments_are_kept(self, pool: ShmPool) -> None:
        """Our own (live) segments survive a sweep."""
        pool.put(np.zeros(4))
        sweep_dead_segments()

        assert set(pool.segment_names) <= set(list_segments())


class TestShmReader:
    def test_foreign_segment_name_is_a_frame_error(self) -> None:
        """A reference outside our naming scheme (e.g. a path) raises FrameError."""
        with pytest.raises(FrameError, match="segment name"):
            ShmReader().read(ShmRef("../../etc/passwd", 0, 8, "<f8", (1,)))

    def test_out_of_bounds_reference_is_a_frame_error(self, pool: ShmPool) -> None:
        """A reference past the end of its segment raises FrameError."""
        ref = pool.put(np.zeros(4))
        assert ref is not None
        bad = ShmRef(ref.segment, (1 << 20) - 8, 64, "<f8", (8,))
        with pytest.raises(FrameError, match="out of bounds"):
            ShmReader().read(bad)

    def test_segment_names_carry_owner_pid(self, pool: ShmPool) -> None:
        """Segment names embed the owner's pid so liveness decides sweeping."""
        pool.put(np.zeros(4))

        assert str(os.getpid()) == pool.segment_names[0].split("-")[2]
