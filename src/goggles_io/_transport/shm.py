"""A reusable shared-memory pool for large arrays: few big segments, ring allocation, no leaks.

Segments are plain files in ``/dev/shm`` (or a private per-user directory when there is none)
mapped with :mod:`mmap`; see ADR 0011 for why not :mod:`multiprocessing.shared_memory`. A name
is ``goggles_io-<uid>-<owner pid>-<n>``, so any later start can unlink the segments of an owner
that is no longer alive. The producer copies an array into a slot exactly once; the dedicated host
lends handlers read-only views of it (``lending.py``, ADR 0077), anyone else copies it out.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import mmap
import os
import re
import stat
import tempfile
import threading
from typing import TYPE_CHECKING, Any

import numpy as np

from goggles_io._event.records import ShmRef
from goggles_io._transport.diskpool import DiskReader
from goggles_io._transport.ring import Ring, release_slot
from goggles_io._transport.shm_room import reserve
from goggles_io._util.liveness import pid_alive
from goggles_io._util.report import report
from goggles_io.exceptions import FrameError

if TYPE_CHECKING:
    from goggles_io._transport.lending import Slot, SlotLeases

__all__ = [
    "SEGMENT_PREFIX",
    "ShmPool",
    "ShmReader",
    "get_shm_dir",
    "list_segments",
    "sweep_dead_segments",
]

SEGMENT_PREFIX = "goggles_io-"
_DEFAULT_SEGMENT_BYTES = 16 * 1024 * 1024
_DEFAULT_MAX_SEGMENTS = 6
_ALIGN = 64
_MAKING_WAIT_S = 5.0  # how long a close waits for a segment prewarm is making
_NAME_RE = re.compile(r"goggles_io-(\d+)-(\d+)-(\d+)\Z")


def get_shm_dir() -> str:
    """Return ``/dev/shm`` when usable, else a private per-user directory (0700) under the temp dir."""
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK | os.X_OK):
        return "/dev/shm"
    path = os.path.join(tempfile.gettempdir(), f"goggles_io-shm-{os.getuid()}")
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    st = os.lstat(path)
    if st.st_uid != os.getuid() or not os.path.isdir(path) or os.path.islink(path):
        msg = f"shared-memory directory {path!r} is not a directory owned by uid {os.getuid()}"
        raise PermissionError(msg)
    return path


def list_segments(shm_dir: str | None = None) -> list[str]:
    """Names of this user's goggles_io segments present now (any owner)."""
    shm_dir = shm_dir or get_shm_dir()
    uid = str(os.getuid())
    out = []
    with contextlib.suppress(FileNotFoundError):
        for name in os.listdir(shm_dir):
            m = _NAME_RE.match(name)
            if m and m.group(1) == uid:
                out.append(name)
    return sorted(out)


def sweep_dead_segments(shm_dir: str | None = None) -> list[str]:
    """Unlink this user's segments whose owner pid is dead (liveness, not age); return their names.

    Only regular files of ours (``lstat``): a FIFO, device or symlink named like one is left.
    """
    shm_dir = shm_dir or get_shm_dir()
    swept = []
    for name in list_segments(shm_dir):
        m = _NAME_RE.match(name)
        if m and not pid_alive(int(m.group(2))):
            path = os.path.join(shm_dir, name)
            with contextlib.suppress(FileNotFoundError):
                st = os.lstat(path)
                if stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid():
                    os.unlink(path)
                    swept.append(name)
    return swept


# Segments this process created, by name: an in-process host reads them through the same
# mapping instead of mapping them a second time (which would also count their pages twice).
_OWN_MAPS: dict[str, mmap.mmap] = {}


class _Segment(Ring):
    """One mapped file with a ring allocator; its blocks are reserved and its pages pre-faulted."""

    def __init__(self, path: str, size: int) -> None:
        super().__init__(size)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            reserve(fd, size, keep_free=path.startswith("/dev/shm/"))
            # Pre-fault the pages once here, so copying an image in never pays page faults.
            populate = getattr(mmap, "MAP_POPULATE", 0)
            self.map = mmap.mmap(fd, size, flags=mmap.MAP_SHARED | populate)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(path)
            raise
        finally:
            os.close(fd)
        self.path = path
        self.name = os.path.basename(path)
        _OWN_MAPS[self.name] = self.map

    def close(self, unlink: bool) -> None:
        _OWN_MAPS.pop(self.name, None)
        with contextlib.suppress(BufferError, ValueError):
            self.map.close()
        if unlink:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)


class ShmPool:
    """Producer-side pool: a few large segments created lazily, reused for every big array.

    ``put`` copies the array into a free slot (the one producer-side copy) or returns ``None``
    when every segment is full, so the caller drops and counts instead of blocking. An array
    larger than a segment gets a one-off segment that is unlinked when it is released.
    """

    def __init__(
        self,
        segment_bytes: int = _DEFAULT_SEGMENT_BYTES,
        max_segments: int = _DEFAULT_MAX_SEGMENTS,
        shm_dir: str | None = None,
    ) -> None:
        self.dir = shm_dir or get_shm_dir()
        self.segment_bytes = segment_bytes
        self.max_segments = max_segments
        self.owner_pid = os.getpid()
        self._lock = threading.Lock()
        self._segments: dict[str, _Segment] = {}
        self._oneoff: set[str] = set()
        self._counter = itertools.count()
        self._closed = False
        self._held: dict[tuple[str, int], int] = {}  # bytes of each slot in use
        self.held_bytes = 0  # in all, read without the lock (a hint: more than half in use?)
        self.refused = 0  # segments the filesystem had no room for (the pool stays smaller)
        self._making = 0  # segments prewarm is making now (outside the lock)
        self._made = threading.Condition(self._lock)  # notified as prewarm finishes one
        self._refusal: OSError | None = None  # the first, told once (_tell)
        self._told = False

    @classmethod
    def with_budget(cls, nbytes: int) -> ShmPool:
        """A pool of at most ``nbytes`` in regular segments (16 MiB each, or one smaller)."""
        segment = min(_DEFAULT_SEGMENT_BYTES, nbytes)
        return cls(segment_bytes=segment, max_segments=max(1, nbytes // segment))

    def prewarm(self) -> None:
        """Create (and pre-fault) the regular segments not made yet, in a background thread.

        Called on the first staged array, so image users never pay a segment's creation inside
        a log call later, and scalar-only processes never allocate the pool at all.
        """

        def fill() -> None:
            while True:
                with self._lock:
                    regular = len(self._segments) - len(self._oneoff)
                    if self._closed or regular >= self.max_segments:
                        return
                    name = f"{SEGMENT_PREFIX}{os.getuid()}-{self.owner_pid}-{next(self._counter)}"
                    self._making += 1
                try:
                    seg = _Segment(os.path.join(self.dir, name), self.segment_bytes)
                except OSError as exc:
                    with self._lock:
                        self._making -= 1
                        self._made.notify_all()
                        self._refuse(exc)
                    return
                with self._lock:
                    full = len(self._segments) - len(self._oneoff) >= self.max_segments
                    keep = not (self._closed or full)
                    if keep:
                        self._segments[seg.name] = seg
                    else:  # under the lock: a close waits for it (no file left at exit)
                        seg.close(unlink=True)
                    self._making -= 1
                    self._made.notify_all()
                    self._tell()
                if not keep:
                    return

        threading.Thread(target=fill, name="goggles_io:shm-prewarm", daemon=True).start()

    def _new_segment(self, size: int) -> _Segment | None:
        """A new segment (under the lock), or ``None`` when the filesystem has no room for it."""
        name = f"{SEGMENT_PREFIX}{os.getuid()}-{self.owner_pid}-{next(self._counter)}"
        try:
            seg = _Segment(os.path.join(self.dir, name), size)
        except OSError as exc:
            self._refuse(exc, oneoff=size > self.segment_bytes)
            return None
        self._segments[seg.name] = seg
        return seg

    def _refuse(self, exc: OSError, oneoff: bool = False) -> None:
        """No room for a segment: count it, say so once, and (a regular one) stop growing, so
        the next arrays go to the disk pool without another try (under the lock)."""
        self.refused += 1
        if not oneoff:  # the segments made and those being made (by prewarm) stay
            self.max_segments = len(self._segments) - len(self._oneoff) + self._making
        self._refusal = self._refusal or exc
        self._tell()

    def _tell(self) -> None:
        """Say once, when no segment is being made any more, how many the pool kept."""
        if self._refusal is not None and not self._making and not self._told:
            self._told = True
            report(
                f"shared memory: no room for a segment in {self.dir} ({self._refusal}); the "
                f"pool keeps {len(self._segments) - len(self._oneoff)} of "
                f"{self.segment_bytes >> 20} MiB, arrays past it go to the disk pool"
            )

    def put(self, array: np.ndarray) -> ShmRef | None:
        """Copy ``array`` into shared memory and return its reference, or ``None`` when full."""
        nbytes = int(array.nbytes)
        need = max(_ALIGN, (nbytes + _ALIGN - 1) // _ALIGN * _ALIGN)
        with self._lock:
            if self._closed:
                return None
            seg = None
            offset = None
            if need > self.segment_bytes:
                seg = self._new_segment(need)
                if seg is None:
                    return None
                self._oneoff.add(seg.name)
                offset = seg.allocate(need)
            else:
                for cand in self._segments.values():
                    if cand.name in self._oneoff:
                        continue
                    offset = cand.allocate(need)
                    if offset is not None:
                        seg = cand
                        break
                if seg is None:
                    regular = len(self._segments) - len(self._oneoff)
                    if regular >= self.max_segments:
                        return None
                    seg = self._new_segment(self.segment_bytes)
                    if seg is None:
                        return None
                    offset = seg.allocate(need)
            assert seg is not None and offset is not None
            mm = seg.map
            self._held[(seg.name, offset)] = need
            self.held_bytes += need
        dest = np.ndarray(array.shape, dtype=array.dtype, buffer=mm, offset=offset)
        np.copyto(dest, array, casting="no")
        return ShmRef(seg.name, offset, nbytes, array.dtype.str, tuple(array.shape))

    def release(self, segment: str, offset: int) -> None:
        """Free the slot the host has copied out (or whose event was dropped)."""
        with self._lock:
            self.held_bytes -= self._held.pop((segment, offset), 0)
            seg = release_slot(self._segments, segment, offset)
            if seg is not None and segment in self._oneoff and not seg.live:
                self._oneoff.discard(segment)
                del self._segments[segment]
                seg.close(unlink=True)

    @property
    def filling(self) -> bool:
        """Whether more than half of the regular segments' bytes are in use (read unlocked)."""
        return self.held_bytes * 2 > self.segment_bytes * self.max_segments

    @property
    def segment_names(self) -> list[str]:
        """Names of the segments this pool holds now."""
        with self._lock:
            return sorted(self._segments)

    def close(self) -> None:
        """Unmap and unlink every segment; only the owner process unlinks (a forked child does not)."""
        with self._lock:
            self._closed = True
            # A segment prewarm is making now is unlinked by it once made: wait for that (a
            # moment: one file's blocks), else a process that exits right after leaves the file.
            self._made.wait_for(lambda: not self._making, timeout=_MAKING_WAIT_S)
            owner = os.getpid() == self.owner_pid
            for seg in self._segments.values():
                seg.close(unlink=owner)
            self._segments.clear()
            self._oneoff.clear()
            self._held.clear()
            self.held_bytes = 0


class ShmReader:
    """Host-side view of the segments one client uses: validates references, copies arrays out
    or, given ``lend`` (the dedicated host's :class:`~goggles_io._transport.lending.SlotLeases`),
    lends read-only views of them; ``lent`` lists the slots lent since the caller emptied it."""

    def __init__(self, shm_dir: str | None = None, lend: SlotLeases | None = None) -> None:
        self.dir = shm_dir or get_shm_dir()
        self._maps: dict[str, mmap.mmap] = {}
        self._uid = str(os.getuid())
        self._disks = DiskReader()
        self._lend = lend
        self._bases: dict[str, tuple[Any, int]] = {}  # per segment lent from: its bytes, address
        self.lent: list[Slot] = []

    def _map(self, name: str) -> mmap.mmap:
        mm = self._maps.get(name) or _OWN_MAPS.get(name)
        if mm is not None:
            return mm
        m = _NAME_RE.match(name) if isinstance(name, str) else None
        if m is None or m.group(1) != self._uid:
            msg = (
                f"shared-memory segment name {name!r} is not one of this user's goggles_io segments"
            )
            raise FrameError(msg, value=name)
        path = os.path.join(self.dir, name)
        try:  # O_NONBLOCK: a FIFO by that name must not hang the connection (refused below)
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError as exc:
            msg = f"shared-memory segment {name!r} cannot be opened: {exc}"
            raise FrameError(msg, value=name) from None
        try:
            st = os.fstat(fd)
            if st.st_uid != os.getuid() or st.st_size == 0 or not stat.S_ISREG(st.st_mode):
                msg = (
                    f"shared-memory segment {name!r} is not a regular file owned by uid "
                    f"{self._uid}, or is empty"
                )
                raise FrameError(msg, value=name)
            mm = mmap.mmap(fd, st.st_size, access=mmap.ACCESS_READ)
        finally:
            os.close(fd)
        self._maps[name] = mm
        return mm

    def read(self, ref: ShmRef) -> np.ndarray:
        """Return an owned copy of the array ``ref`` points at (a lent read-only view when
        lending); bad references raise FrameError.

        A segment named by an absolute path is a producer's disk pool (its spool folder): the
        array is read from it with ``preadv``, straight into the new array.
        """
        if isinstance(ref.segment, str) and ref.segment.startswith("/"):
            return self._disks.read(ref)
        mm = self._map(ref.segment)
        dtype = np.dtype(ref.dtype)
        count = math.prod(ref.shape)  # Python ints: a hostile shape cannot overflow it
        if (
            ref.offset < 0
            or ref.nbytes != count * dtype.itemsize
            or ref.offset + ref.nbytes > len(mm)
        ):
            msg = f"shared-memory reference {ref!r} is out of bounds for segment size {len(mm)!r}"
            raise FrameError(msg, value=ref)
        if self._lend is not None:
            base = self._bases.get(ref.segment)
            if base is None:
                whole = np.frombuffer(mm, dtype=np.uint8)
                base = self._bases[ref.segment] = (whole, whole.ctypes.data)
            slot = (ref.segment, ref.offset)
            self.lent.append(slot)
            return self._lend.lend(slot, base[0], base[1] + ref.offset, dtype, tuple(ref.shape))
        flat = np.frombuffer(mm, dtype=dtype, count=count, offset=ref.offset)
        array: np.ndarray = flat.reshape(ref.shape).copy()
        return array

    def forget(self, name: str) -> None:
        """Unmap a segment whose one-off slot was released."""
        mm = self._maps.pop(name, None)
        self._bases.pop(name, None)  # lent views keep it (and so the mapping) alive
        if mm is not None:
            with contextlib.suppress(BufferError):  # a view still lent: unmapped when it dies
                mm.close()

    def close(self) -> None:
        """Unmap everything; the producer owns unlinking."""
        for name in list(self._maps):
            self.forget(name)
        self._disks.close()
