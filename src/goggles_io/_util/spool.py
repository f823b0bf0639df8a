"""A bounded on-disk FIFO of byte records: where a full buffer spills (ADR 0025).

Each :class:`Spool` is a folder of segment files (``00000001.seg``...) holding records as
``u32 length | bytes``; a segment is unlinked once read to its end. Every spool of a process lives
under one private folder, ``<spool dir>/p<pid>-<start time>`` (0700, created on the first spill),
and shares one byte budget (:class:`SpoolSpace`): ``GOGGLES_SPOOL_BYTES``, and never more than a
quarter of the space that was free. A spool is memory relief, not a durable log: records are
written with ``os.write`` (no fsync) and the reader's position lives in memory. What must survive
a host's death is kept by its producer (see ``docs/transport.md``). A folder whose owner died is
removed by the next process that spills (:func:`sweep_dead_spools`); a clean finish removes its
own.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import struct
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

from goggles_io._util.delivery import DeliveryPolicy
from goggles_io._util.liveness import pid_alive, start_time
from goggles_io._util.report import report

__all__ = [
    "Blob",
    "Spool",
    "SpoolRecord",
    "SpoolSpace",
    "default_spool_root",
    "list_spools",
    "spool_space",
    "sweep_dead_spools",
]

_HEAD = struct.Struct(">IQ")  # record bytes, blob bytes after it
Blob = bytes | bytearray | memoryview
_SEGMENT_BYTES = 8 * 1024 * 1024
_FREE_FRACTION = 0.25  # a process's spools never take more than this share of the free space


def default_spool_root() -> Path:
    """``$XDG_CACHE_HOME/goggles_io/spool`` (else ``~/.cache/...``; a temp dir without a home).

    A disk-backed cache folder rather than the temp dir, which is RAM (tmpfs) on many systems.
    """
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    if not os.path.isabs(base) or not os.access(os.path.dirname(base) or "/", os.W_OK):
        base = os.path.join(tempfile.gettempdir(), f"goggles_io-{os.getuid()}")
    return Path(base) / "goggles_io" / "spool"


def _owner_alive(name: str) -> bool:
    pid_text, _, start = name[1:].partition("-")
    if not pid_text.isdigit():
        return True  # not one of ours: leave it
    pid = int(pid_text)
    if not pid_alive(pid):
        return False
    found = start_time(pid)
    return found is None or not start or found == start


def list_spools(root: Path | str) -> list[str]:
    """Names of the process folders under ``root`` (any owner)."""
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        return sorted(n for n in os.listdir(root) if n.startswith("p"))
    return []


def _folder_bytes(path: Path) -> int:
    total = 0
    for dirpath, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, name)).st_size
    return total


def sweep_dead_spools(root: Path | str) -> list[tuple[str, int]]:
    """Remove the spool folders of processes that are no longer alive; ``(name, bytes)`` each.

    Their events are not lost by this: a producer's spool dies with the producer (it counted
    what it could not send), and a host's is re-sent by the producers that kept it.
    """
    swept = []
    for name in list_spools(root):
        if _owner_alive(name):
            continue
        path = Path(root) / name
        size = _folder_bytes(path)
        shutil.rmtree(path, ignore_errors=True)
        swept.append((name, size))
    return swept


class SpoolSpace:
    """One process's spool budget and folder, shared by all its spools."""

    def __init__(self, root: Path, limit_bytes: int) -> None:
        self.root = root
        self.limit_bytes = limit_bytes
        self.used = 0
        self.spools = 0
        self._lock = threading.Lock()
        self._folder: Path | None = None
        self._ids = itertools.count(1)
        self._pid = os.getpid()

    def folder(self) -> Path:
        """This process's folder (0700), created now; dead owners' folders are swept first."""
        with self._lock:
            if self._folder is None or self._pid != os.getpid():
                self._pid = os.getpid()
                self.used = 0
                self._folder = self._make_folder()
            return self._folder

    def _make_folder(self) -> Path:
        for _ in range(3):  # another process may remove an empty root between the two calls
            old = os.umask(0o077)
            try:
                self.root.mkdir(parents=True, exist_ok=True)
                for name, size in sweep_dead_spools(self.root):
                    report(f"removed the spool {name} of a process that died ({size} bytes)")
                folder = self.root / f"p{os.getpid()}-{start_time(os.getpid()) or ''}"
                folder.mkdir(mode=0o700, exist_ok=True)
            except FileNotFoundError:
                continue
            finally:
                os.umask(old)
            st = os.lstat(folder)
            if st.st_uid != os.getuid() or (st.st_mode & 0o077):
                msg = f"spool folder {str(folder)!r} is not private to uid {os.getuid()}"
                raise PermissionError(msg)
            return folder
        msg = f"could not create a spool folder under {str(self.root)!r}"
        raise FileNotFoundError(msg)

    def next_id(self) -> int:
        """A fresh number for a spool's own subfolder."""
        return next(self._ids)

    def reserve(self, wanted: int, at: Path) -> int:
        """Reserve up to ``wanted`` bytes for a new segment in ``at``; 0 when there is no room.

        Room is what the budget leaves and what keeps this process under a quarter of the free
        space (measured now, so a disk that others filled is noticed).
        """
        try:
            st = os.statvfs(at)
            free = st.f_bavail * st.f_frsize
        except OSError:
            return 0
        with self._lock:
            room = min(
                self.limit_bytes - self.used, int(_FREE_FRACTION * (free + self.used)) - self.used
            )
            grant = min(wanted, room)
            if grant <= 0:
                return 0
            self.used += grant
            return grant

    def release(self, n: int) -> None:
        """Give back what a removed segment had reserved."""
        with self._lock:
            self.used = max(0, self.used - n)

    def opened_one(self) -> None:
        """A spool (or disk pool) made its subfolder: keep the process folder while it lives."""
        with self._lock:
            self.spools += 1

    def closed_one(self) -> None:
        """A spool closed: remove the process folder (and an empty root) once none is left."""
        with self._lock:
            self.spools -= 1
            if self.spools > 0 or self._folder is None:
                return
            folder, self._folder = self._folder, None
        shutil.rmtree(folder, ignore_errors=True)
        with contextlib.suppress(OSError):
            self.root.rmdir()
            self.root.parent.rmdir()  # .../goggles_io, when nothing else of ours is there


_SPACES: dict[str, SpoolSpace] = {}
_SPACES_LOCK = threading.Lock()


def spool_space(policy: DeliveryPolicy) -> SpoolSpace:
    """This process's :class:`SpoolSpace` for the policy's spool folder."""
    root = Path(policy.spool_dir) if policy.spool_dir else default_spool_root()
    key = f"{os.getpid()}:{root}"
    with _SPACES_LOCK:
        space = _SPACES.get(key)
        if space is None:
            space = _SPACES[key] = SpoolSpace(root, policy.spool_bytes)
        return space


class SpoolRecord:
    """One record taken from a spool: its bytes, and its blobs still on disk behind it."""

    __slots__ = ("_at", "_fd", "blob_bytes", "data")

    def __init__(self, data: bytes, fd: int, at: int, blob_bytes: int) -> None:
        self.data = data
        self.blob_bytes = blob_bytes
        self._fd = fd
        self._at = at

    def read_blob(self, offset: int, into: memoryview) -> None:
        """Copy ``len(into)`` bytes of the blobs, from ``offset``, straight into ``into``."""
        if offset < 0 or offset + len(into) > self.blob_bytes:
            msg = f"blob range {offset}+{len(into)} outside the record's {self.blob_bytes} bytes"
            raise ValueError(msg)
        done = 0
        while done < len(into):
            got = os.preadv(self._fd, [into[done:]], self._at + offset + done)
            if got <= 0:
                msg = "spool segment ended inside a blob"
                raise OSError(msg)
            done += got


class _Segment:
    __slots__ = ("fd", "path", "read_at", "reserved", "size")

    def __init__(self, path: Path, reserved: int) -> None:
        self.path = path
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        self.reserved = reserved
        self.size = 0
        self.read_at = 0

    def remove(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)
        with contextlib.suppress(OSError):
            os.unlink(self.path)


class Spool:
    """A FIFO of byte records on disk, created lazily on the first :meth:`append`.

    Thread-safe: producers append, one consumer pops. ``append`` returns ``False`` when the
    budget or the disk has no room (``failure`` says which); the caller then blocks or drops.
    """

    def __init__(self, label: str, policy: DeliveryPolicy) -> None:
        self.label = label
        self.policy = policy
        self.failure = ""
        self.records = 0  # records waiting
        self.nbytes = 0  # their bytes
        self._space = spool_space(policy)
        self._dir: Path | None = None
        self._segments: list[_Segment] = []
        self._counter = itertools.count(1)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self.records

    def append(self, record: bytes | bytearray | memoryview, blobs: Sequence[Blob] = ()) -> bool:
        """Write ``record`` (and ``blobs`` after it, straight from their buffers) after the
        others; ``False`` (nothing written) when there is no room."""
        blob_bytes = sum(len(b) for b in blobs)
        need = _HEAD.size + len(record) + blob_bytes
        with self._lock:
            seg = self._segments[-1] if self._segments else None
            if seg is None or seg.size + need > seg.reserved:
                seg = self._new_segment(need)
                if seg is None:
                    return False
            head = _HEAD.pack(len(record), blob_bytes)
            try:
                _write_all(seg.fd, [head, record, *blobs])
            except OSError as exc:
                with contextlib.suppress(OSError):
                    os.ftruncate(seg.fd, seg.size)  # never a torn record
                self.failure = f"disk full or failing ({exc.strerror or exc})"
                return False
            seg.size += need
            self.records += 1
            self.nbytes += len(record) + blob_bytes
            return True

    def _new_segment(self, need: int) -> _Segment | None:
        if not self.policy.spills:
            self.failure = "spilling is off"
            return None
        try:
            if self._dir is None:
                folder = self._space.folder()
                self._dir = folder / f"{self.label}-{self._space.next_id()}"
                self._dir.mkdir(mode=0o700)
                self._space.opened_one()
            wanted = max(_SEGMENT_BYTES, need)
            grant = self._space.reserve(wanted, self._dir)
            if grant < need:
                self._space.release(grant)
                self.failure = (
                    f"spool budget full ({self._space.used} of {self._space.limit_bytes} bytes, "
                    f"at most a quarter of the free space)"
                )
                return None
            path = self._dir / f"{next(self._counter):08d}.seg"
            seg = _Segment(path, grant)
        except OSError as exc:
            self.failure = f"spool folder unusable ({exc})"
            return None
        self._segments.append(seg)
        return seg

    def pop(self) -> bytes | None:
        """The oldest record (without its blobs), or ``None`` when the spool is empty."""
        found = self.pop_record()
        return None if found is None else found.data

    def pop_record(self) -> SpoolRecord | None:
        """The oldest record with a way to read its blobs (valid until the next pop)."""
        with self._lock:
            while self._segments:
                seg = self._segments[0]
                if seg.read_at < seg.size:
                    n, blob_bytes = _HEAD.unpack(os.pread(seg.fd, _HEAD.size, seg.read_at))
                    data = _read_all(seg.fd, n, seg.read_at + _HEAD.size)
                    blobs_at = seg.read_at + _HEAD.size + n
                    seg.read_at = blobs_at + blob_bytes
                    self.records -= 1
                    self.nbytes -= n + blob_bytes
                    return SpoolRecord(data, seg.fd, blobs_at, blob_bytes)
                if len(self._segments) == 1:
                    # The only segment, read to its end: start it over instead of a new file.
                    os.ftruncate(seg.fd, 0)
                    seg.size = seg.read_at = 0
                    return None
                self._segments.pop(0)
                seg.remove()
                self._space.release(seg.reserved)
            return None

    def clear(self) -> int:
        """Forget every record (counted by the caller as not delivered); return how many."""
        with self._lock:
            n = self.records
            for seg in self._segments:
                seg.remove()
                self._space.release(seg.reserved)
            self._segments = []
            self.records = self.nbytes = 0
            return n

    def close(self) -> int:
        """Remove the spool's files and folder; return the records that were still waiting."""
        n = self.clear()
        with self._lock:
            folder, self._dir = self._dir, None
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
            self._space.closed_one()
        return n

    @property
    def path(self) -> Path | None:
        """The spool's folder, once something was spilled."""
        return self._dir


def _write_all(fd: int, parts: list[Blob]) -> None:
    """Write every part in order with as few calls as the kernel allows (``writev``)."""
    views = [memoryview(p).cast("B") for p in parts if len(p)]
    while views:
        written = os.writev(fd, views)
        if written <= 0:
            raise OSError(28, "short write")
        while views and written >= len(views[0]):
            written -= len(views[0])
            views.pop(0)
        if views and written:
            views[0] = views[0][written:]


def _read_all(fd: int, n: int, offset: int) -> bytes:
    data = os.pread(fd, n, offset)
    if len(data) == n:
        return data
    parts = [data]
    got = len(data)
    while got < n:
        more = os.pread(fd, n - got, offset + got)
        if not more:
            msg = f"spool segment ended inside a record ({got} of {n} bytes)"
            raise OSError(msg)
        parts.append(more)
        got += len(more)
    return b"".join(parts)
