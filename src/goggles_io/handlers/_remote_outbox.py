"""A remote sink's outbox: points the host counted as taken before the collector stored them.

In the socket host a ``RemoteHandler``'s take counts (its batch is acknowledged to the
producer) only once the collector stored its points, or once they are here (ADR 0069): a file
in the spool root named after the collector, the run and the handler, so the handler a later
host rebuilds from the same spec finds it and sends it first. The collector skips what it
already holds by each point's producer and sequence, so the outbox may overlap what was stored.

A file of length-prefixed msgpack records (``u32 length | [[producer, pseq, part, name, value,
step, time], ...]``); a torn last record (the host died mid-write) is ignored. The file is read
as untrusted (a regular file of our uid, opened without following a link or waiting on a
FIFO, every length checked against the file's size) and held with an exclusive ``flock`` while
in use: a second live handler of the same run writes a file of its own. It goes once the
collector stored everything in it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import stat
import struct
from pathlib import Path
from typing import Any

from goggles_io._util.report import report

__all__ = ["OUTBOX_PREFIX", "Outbox", "outbox_path"]

OUTBOX_PREFIX = "remote-outbox-"
_HEAD = struct.Struct(">I")
_RECORD_MAX = 64 << 20
_SAFE = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
# [producer, pseq, part, name, value, step, time]: what the successor re-sends for one point.
SavedPoint = list[Any]


def outbox_path(root: Path, url: str, run_id: str, name: str) -> Path:
    """Where the outbox of handler ``name`` sending run ``run_id`` to ``url`` lives."""
    key = hashlib.sha256(f"{url}\0{run_id}\0{name}".encode()).hexdigest()[:24]
    return Path(root) / f"{OUTBOX_PREFIX}{key}.msgpack"


class Outbox:
    """One handler's outbox file (made on the first write).

    Args:
        path: the file (:func:`outbox_path`).
        owner: who writes it, for messages.
        limit_bytes: the most it may hold; a write past it is refused (the points then wait
            for the collector, and the host does not acknowledge them yet).
    """

    def __init__(self, path: Path, owner: str, limit_bytes: int) -> None:
        self.path = Path(path)
        self.owner = owner
        self.limit_bytes = limit_bytes
        self.size = 0
        self._fd: int | None = None
        self._said: set[str] = set()

    def recover(self) -> list[SavedPoint]:
        """The points a dead handler of this run left here (the file is kept, and held: they
        are still only here). Another live handler's file, or one that is not ours, is left
        alone and this handler writes a file of its own."""
        try:
            fd = os.open(self.path, os.O_RDWR | _SAFE)
        except FileNotFoundError:
            return []
        except OSError as exc:
            self._elsewhere(f"cannot open {self.path} ({exc.strerror or exc})")
            return []
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_nlink != 1:
            os.close(fd)
            self._elsewhere(f"{self.path} is not an outbox of ours")
            return []
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            self._elsewhere(f"{self.path} is in use by another live handler of this run")
            return []
        points, end = _read(fd, info.st_size)
        if end < info.st_size:
            os.ftruncate(fd, end)  # a record the dead host was writing: its points come again
        self._fd, self.size = fd, end
        return points

    def _elsewhere(self, why: str) -> None:
        report(f"{self.owner}: {why}; using an outbox of this process's own")
        self.path = self.path.with_name(f"{self.path.stem}-{os.getpid()}{self.path.suffix}")

    def append(self, points: list[SavedPoint]) -> bool:
        """Write ``points`` as one record; ``False`` (said once) when it cannot be written."""
        import msgpack

        if not points:
            return True
        body = msgpack.packb(points, use_bin_type=True)
        record = _HEAD.pack(len(body)) + body
        if self.size + len(record) > self.limit_bytes or len(body) > _RECORD_MAX:
            self._once("full", f"its outbox {self.path} is full ({self.limit_bytes} bytes)")
            return False
        try:
            fd = self._open()
            try:
                _write_all(fd, record)
            except OSError:
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, self.size)  # no torn record for later ones to follow
                raise
        except OSError as exc:
            self._once("write", f"cannot write its outbox {self.path} ({exc.strerror or exc})")
            return False
        self.size += len(record)
        return True

    def _open(self) -> int:
        if self._fd is not None:
            return self._fd
        old = os.umask(0o077)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND | _SAFE, 0o600)
        finally:
            os.umask(old)
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
            os.close(fd)
            raise OSError(21, "not a regular file of ours")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise
        self.size = info.st_size
        self._fd = fd
        return fd

    def _once(self, key: str, what: str) -> None:
        if key not in self._said:
            self._said.add(key)
            report(
                f"{self.owner}: {what}; its points wait for the collector before the host "
                "acknowledges them"
            )

    @property
    def holds(self) -> bool:
        """Whether anything was written (or recovered) and not cleared."""
        return self.size > 0

    def clear(self) -> None:
        """The collector stored everything in it: remove the file."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            if os.fstat(fd).st_ino == os.lstat(self.path).st_ino:
                os.unlink(self.path)
        os.close(fd)
        self.size = 0

    def close(self) -> None:
        """Let go of the file (it stays for the handler that comes next)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


def _read(fd: int, size: int) -> tuple[list[SavedPoint], int]:
    """The points of the whole records in the file, and where the last whole one ends."""
    import msgpack

    points: list[SavedPoint] = []
    at = 0
    while at + _HEAD.size <= size:
        (n,) = _HEAD.unpack(os.pread(fd, _HEAD.size, at))
        if n > _RECORD_MAX or at + _HEAD.size + n > size:
            break
        data = os.pread(fd, n, at + _HEAD.size)
        try:
            found = msgpack.unpackb(data, raw=False)
        except (ValueError, msgpack.UnpackException):
            break
        if not isinstance(found, list) or not all(map(_saved_point, found)):
            break
        points += found
        at += _HEAD.size + n
    return points, at


def _saved_point(point: Any) -> bool:
    if type(point) is not list or len(point) != 7:
        return False
    producer, pseq, part, name, value, step, when = point
    return (
        type(producer) is str
        and type(pseq) is int
        and type(part) is int
        and type(name) is str
        and (value is None or type(value) is float)
        and (step is None or type(step) is int)
        and type(when) is float
    )


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:
            raise OSError(28, "short write")
        view = view[written:]
