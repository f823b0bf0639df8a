"""A producer's disk pool: where big arrays go when its shared-memory pool is full (ADR 0025).

The same hand-off as the shared-memory pool (ADR 0011), on disk: the log call copies the array
once, with ``pwrite`` into a segment file in the producer's spool folder (no mapping, so the
pages count in nobody's RSS), and the event carries a :class:`ShmRef` whose segment is the
file's absolute path. The host reads it with ``preadv`` straight into a new array; the slot is
freed when the host acknowledges the batch, like a shared-memory one. The pool's segments
count against the process's spool budget and go with its spool folder.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import stat
import threading
from pathlib import Path

import numpy as np

from goggles_io._delivery.policy import DeliveryPolicy
from goggles_io._delivery.spool_space import (
    create_segment_file,
    remove_own_tree,
    remove_segment_file,
    spool_space,
)
from goggles_io._event.records import ShmRef
from goggles_io._transport.ring import Ring, release_slot
from goggles_io.exceptions import FrameError

__all__ = ["DiskPool", "DiskReader"]

_SEGMENT_BYTES = 64 * 1024 * 1024
_ALIGN = 64
_PATH_RE = re.compile(r"/.*/p\d+-\d*/diskpool-\d+/\d+\.seg\Z")


class _DiskSegment(Ring):
    def __init__(self, path: Path, size: int) -> None:
        super().__init__(size)
        self.path = path
        self.fd = create_segment_file(path)

    def remove(self) -> None:
        remove_segment_file(self.fd, self.path)


class DiskPool:
    """Segments of up to 64 MiB in the spool folder, reserved from the spool budget."""

    def __init__(self, policy: DeliveryPolicy) -> None:
        self.policy = policy
        self.staged = 0  # arrays ever written here
        self._space = spool_space(policy)
        self._dir: Path | None = None
        self._segments: dict[str, _DiskSegment] = {}
        self._counter = itertools.count(1)
        self._lock = threading.Lock()
        self._closed = False
        self.owner_pid = os.getpid()

    def prewarm(self) -> None:
        """Make the first segment and write it through once, in a background thread.

        A write into pages the page cache already holds costs about a memcpy; into new pages,
        2-3 times that (the kernel allocates them). Called with the shared-memory pool's own
        prewarm (the first big array), so only processes that log big arrays pay it.
        """
        if not self.policy.spills:
            return

        def fill() -> None:
            with self._lock:
                if self._closed or self._segments:
                    return
                seg, offset = self._slot(_SEGMENT_BYTES, keep=False)
            if seg is None or offset is None:
                return
            zeros = memoryview(bytes(1 << 20))
            try:
                for at in range(0, seg.size - (1 << 20) + 1, 1 << 20):
                    os.pwrite(seg.fd, zeros, at)
            except OSError:
                pass
            seg.release(offset)
            with self._lock:
                if self._closed:
                    seg.remove()
                    self._space.release(seg.size)
                else:
                    self._segments.setdefault(str(seg.path), seg)

        threading.Thread(target=fill, name="goggles_io:diskpool-prewarm", daemon=True).start()

    def put(self, array: np.ndarray) -> ShmRef | None:
        """Write ``array`` to a free slot and return its reference; ``None`` when there is none."""
        a = np.ascontiguousarray(array)
        nbytes = int(a.nbytes)
        need = max(_ALIGN, (nbytes + _ALIGN - 1) // _ALIGN * _ALIGN)
        with self._lock:
            if self._closed or not self.policy.spills:
                return None
            seg, offset = self._slot(need)
            if seg is None or offset is None:
                return None
        try:
            view = a.reshape(-1).view(np.uint8).data
            done = 0
            while done < nbytes:
                done += os.pwritev(seg.fd, [view[done:]], offset + done)
        except OSError:
            self.release(str(seg.path), offset)
            return None
        self.staged += 1
        return ShmRef(str(seg.path), offset, nbytes, a.dtype.str, tuple(a.shape))

    def _slot(self, need: int, keep: bool = True) -> tuple[_DiskSegment | None, int | None]:
        if keep:
            for seg in self._segments.values():
                offset = seg.allocate(need)
                if offset is not None:
                    return seg, offset
        try:
            if self._dir is None:
                self._dir = self._space.folder() / f"diskpool-{self._space.next_id()}"
                self._dir.mkdir(mode=0o700)
                self._space.opened_one()
            grant = self._space.reserve_segment(need, _SEGMENT_BYTES, self._dir)
            if grant is None:
                return None, None
            seg = _DiskSegment(self._dir / f"{next(self._counter)}.seg", grant)
        except OSError:
            return None, None
        if keep:
            self._segments[str(seg.path)] = seg
        return seg, seg.allocate(need)

    def release(self, segment: str, offset: int) -> None:
        """Free the slot the host has read (or whose event was dropped)."""
        with self._lock:
            seg = release_slot(self._segments, segment, offset)
            if seg is not None and not seg.live and len(self._segments) > 1:
                del self._segments[segment]  # keep one segment; give the others back
                seg.remove()
                self._space.release(seg.size)

    def close(self) -> None:
        """Remove every segment and the pool's folder (only the owner process does)."""
        with self._lock:
            self._closed = True
            segments, self._segments = list(self._segments.values()), {}
            folder, self._dir = self._dir, None
        if os.getpid() != self.owner_pid:
            return
        for seg in segments:
            seg.remove()
            self._space.release(seg.size)
        if folder is not None:
            remove_own_tree(folder)
            self._space.closed_one()


class DiskReader:
    """Host side: read arrays out of producers' disk pools, after checking whose files they are."""

    def __init__(self) -> None:
        self._fds: dict[str, int] = {}

    def _fd(self, path: str) -> int:
        fd = self._fds.get(path)
        if fd is not None:
            return fd
        if not _PATH_RE.match(path) or ".." in path.split("/"):
            msg = f"array reference {path!r} is not a goggles_io disk-pool segment"
            raise FrameError(msg, value=path)
        try:  # O_NONBLOCK: a FIFO put there must not hang the connection (it is refused below)
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError as exc:
            msg = f"disk-pool segment {path!r} cannot be opened: {exc}"
            raise FrameError(msg, value=path) from None
        st = os.fstat(fd)
        if st.st_uid != os.getuid() or not stat.S_ISREG(st.st_mode):
            os.close(fd)
            msg = f"disk-pool segment {path!r} is not a regular file owned by uid {os.getuid()}"
            raise FrameError(msg, value=path)
        self._fds[path] = fd
        return fd

    def read(self, ref: ShmRef) -> np.ndarray:
        """A new array with the bytes ``ref`` points at; a bad reference raises FrameError."""
        fd = self._fd(ref.segment)
        # Checked before the array is allocated: its size, from the shape, and the file's end.
        count = 1
        for d in ref.shape:
            count *= d
        if ref.offset < 0 or count * np.dtype(ref.dtype).itemsize != ref.nbytes:
            msg = f"disk-pool reference {ref!r} does not match its shape and dtype"
            raise FrameError(msg, value=ref)
        if ref.offset + ref.nbytes > os.fstat(fd).st_size:
            msg = f"disk-pool reference {ref!r} is beyond the end of its segment"
            raise FrameError(msg, value=ref)
        out = np.empty(ref.shape, dtype=np.dtype(ref.dtype))
        view = out.reshape(-1).view(np.uint8).data
        done = 0
        while done < ref.nbytes:
            got = os.preadv(fd, [view[done:]], ref.offset + done)
            if got <= 0:
                msg = f"disk-pool reference {ref!r} is beyond the end of its segment"
                raise FrameError(msg, value=ref)
            done += got
        return out

    def close(self) -> None:
        """Close every segment file (the producer removes them)."""
        fds, self._fds = self._fds, {}
        for fd in fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)
