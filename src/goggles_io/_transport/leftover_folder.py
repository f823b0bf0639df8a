"""One left-over folder on disk: its format, and reading it as untrusted input (ADR 0061).

A folder ``leftover-<pid>-<start time>/`` holds ``manifest.json`` (written last: the folder is
complete), ``ops.msgpack`` (the handler operations issued before its events) and
``events.bin``: records ``u8 kind | u32 record bytes | u64 blob bytes``, then the record (an
operation, or a spool record of events), then its arrays' bytes.

The spool root is shared by every process of the user and may hold anything, so a folder is
read as untrusted input. Everything is looked at through descriptors: the root's, then the
folder's (``O_DIRECTORY | O_NOFOLLOW``). Each name is ``lstat``-ed before it is opened: the
folder must be a directory of our uid, each file a regular file of our uid with one link, opened
``O_NOFOLLOW | O_NONBLOCK`` and checked again on its descriptor, so a FIFO is never opened and a
symlink never followed. Another uid's folder is :class:`Refused` and left untouched. Every
length is checked against the file's size before anything is read or allocated, and an array's
bytes against its record's blobs before the array is made.

A deliverer **claims** a folder by taking an exclusive ``flock`` on the folder's descriptor
(the kernel lets go when the deliverer dies, however it dies), then renaming it to a name of its
own, ``leftover-<pid>-<start>-from-<n>``: two deliverers at once never both get it, and one
that died leaves a name whose owner is dead, for the next to claim.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from goggles_io._delivery.spool_space import remove_own_tree
from goggles_io._util.liveness import pid_alive, proc_stat

__all__ = [
    "EVENTS",
    "FORMAT",
    "HEAD",
    "OP",
    "PREFIX",
    "SENT",
    "UNREADABLE",
    "Folder",
    "Refused",
    "Unreadable",
    "claim",
    "leftover_names",
    "owner_alive",
]

PREFIX = "leftover-"
UNREADABLE = "unreadable-"
FORMAT = 2  # 2: its records hold rows (ADR 0071); a folder of format 1 is an older version's
HEAD = struct.Struct(">BIQ")  # kind, record bytes, blob bytes
OP, EVENTS, SENT = 0, 1, 2  # record kinds: an operation, events, events a host may have had
_FILES = ("manifest.json", "ops.msgpack", "events.bin")
_MANIFEST_MAX = 1 << 20
_OPS_MAX = 64 << 20
# A record is one batch of the client's pipe (1,024 events / 4 MiB, arrays beside it) or one
# event as big as a frame (64 MiB): anything longer is damage, refused before it is read.
_RECORD_MAX = 80 << 20
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class Unreadable(Exception):
    """A folder of ours that cannot be delivered as it is (renamed ``unreadable-...``, kept)."""


class Refused(Exception):
    """A folder that is not ours to deliver (another uid's, a symlink): left untouched."""


def leftover_names(root: Path) -> list[str]:
    """Names of the left-over folders under ``root`` (any owner, alive or not)."""
    with contextlib.suppress(OSError):
        return sorted(n for n in os.listdir(root) if n.startswith(PREFIX))
    return []


def owner_alive(name: str) -> bool:
    """Whether the process named in ``leftover-<pid>-<start>...`` still runs (unknown: yes)."""
    parts = name[len(PREFIX) :].split("-")
    if len(parts) < 2 or not parts[0].isdigit():
        return True  # not one of ours: leave it
    pid = int(parts[0])
    if not pid_alive(pid):
        return False
    stat = proc_stat(pid)
    if stat is None:
        return True
    exited, started = stat
    return not exited and started == parts[1]


def _kind(mode: int) -> str:
    for test, word in (
        (stat.S_ISLNK, "a symlink"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a folder"),
    ):
        if test(mode):
            return word
    return "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file"


def _inspect(root_fd: int, name: str) -> os.stat_result:
    """The folder's ``lstat``; raises :class:`Refused` unless it is a directory of our uid."""
    st = os.lstat(name, dir_fd=root_fd)
    uid = os.getuid()
    if st.st_uid != uid:
        msg = f"it belongs to uid {st.st_uid}, not to uid {uid}: not ours to deliver or remove"
        raise Refused(msg)
    if not stat.S_ISDIR(st.st_mode):
        raise Refused(f"it is {_kind(st.st_mode)}, not a folder: never followed nor opened")
    return st


def _check_files(fd: int) -> None:
    """Each file of the folder is looked at before anything is opened: another uid's is
    :class:`Refused`; anything but a regular file (a FIFO, a symlink) is :class:`Unreadable`."""
    uid = os.getuid()
    for name in _FILES:
        try:
            st = os.lstat(name, dir_fd=fd)
        except FileNotFoundError:
            raise Unreadable(f"it has no {name} (its writer died while writing it?)") from None
        if st.st_uid != uid:
            msg = f"its {name} belongs to uid {st.st_uid}, not to uid {uid}: not ours to deliver"
            raise Refused(msg)
        if not stat.S_ISREG(st.st_mode):
            raise Unreadable(f"its {name} is {_kind(st.st_mode)}, not a regular file")
        if st.st_nlink != 1:
            raise Unreadable(f"its {name} has {st.st_nlink} links, not one")


def claim(root_fd: int, name: str, me: str) -> Folder | None:
    """Claim the folder ``name``: lock it, check it, rename it ``me``; ``None`` when another
    process holds it (or it went meanwhile). Raises :class:`Refused` for what is not ours and
    :class:`Unreadable` for a folder of ours with something other than regular files in it."""
    st = _inspect(root_fd, name)
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=root_fd)
    except FileNotFoundError:
        return None
    except OSError as exc:  # swapped for a symlink (ELOOP) or a file (ENOTDIR) meanwhile
        raise Refused(f"it could not be opened as a folder ({exc.strerror})") from None
    try:
        found = os.fstat(fd)
        if (found.st_dev, found.st_ino) != (st.st_dev, st.st_ino):
            os.close(fd)
            return None  # replaced between the look and the open
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None  # another deliverer has it
        folder = Folder(root_fd, name, fd)
        try:
            _check_files(fd)
        except Unreadable:
            folder.leave_unreadable()
            raise
        folder.rename(me)
        return folder
    except Unreadable:
        raise
    except Exception:
        with contextlib.suppress(OSError):
            os.close(fd)
        raise


class Folder:
    """A claimed folder (our ``flock`` held on its descriptor until :meth:`release`)."""

    def __init__(self, root_fd: int, name: str, fd: int) -> None:
        self.root_fd = root_fd
        self.name = name
        self.original = name
        self.fd = fd

    def rename(self, name: str) -> None:
        """Rename the folder within the root (an atomic claim; ``unreadable-...`` to leave it)."""
        os.rename(self.name, name, src_dir_fd=self.root_fd, dst_dir_fd=self.root_fd)
        self.name = name

    def leave_unreadable(self) -> None:
        """Rename it ``unreadable-<its first name>`` (never tried again, never removed); let go."""
        with contextlib.suppress(OSError):
            self.rename(UNREADABLE + self.original)
        self.release()

    def release(self) -> None:
        """Let go of the folder (the lock goes with the descriptor); idempotent."""
        fd, self.fd = self.fd, -1
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)

    def remove(self, root: Path) -> bool:
        """Remove the folder (ours, regular files only), then let go; whether it is gone."""
        gone, _ = remove_own_tree(root / self.name)
        self.release()
        return gone

    # -- reading ----------------------------------------------------------------------------
    def _open(self, name: str) -> int:
        """``name`` opened for reading, checked again on its descriptor (a regular file)."""
        try:
            fd = os.open(name, _FILE_FLAGS, dir_fd=self.fd)
        except OSError as exc:
            raise Unreadable(f"its {name} cannot be opened ({exc.strerror})") from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped after _check_files looked
            os.close(fd)
            raise Unreadable(f"its {name} is not a regular file")
        return fd

    def _read_small(self, name: str, limit: int) -> bytes:
        fd = self._open(name)
        try:
            size = os.fstat(fd).st_size
            if size > limit:
                raise Unreadable(f"its {name} holds {size} bytes, more than {limit}")
            data = os.pread(fd, size, 0)
        finally:
            os.close(fd)
        return data

    def manifest(self) -> dict[str, Any]:
        """``manifest.json``: raises :class:`Unreadable` unless it is a manifest of our format."""
        try:
            found = json.loads(self._read_small("manifest.json", _MANIFEST_MAX))
        except ValueError as exc:
            raise Unreadable(f"its manifest.json is not JSON ({exc})") from None
        if type(found) is not dict or found.get("format") != FORMAT:
            raise Unreadable("it is not a left-over folder of this version")
        if type(found.get("events")) is not int or type(found.get("deliveries", 0)) is not int:
            raise Unreadable("its manifest.json has no event count")
        return found

    def ops(self) -> list[Any]:
        """``ops.msgpack``: the operations before the events (checked by the deliverer)."""
        import msgpack

        try:
            found = msgpack.unpackb(self._read_small("ops.msgpack", _OPS_MAX), raw=False)
        except (ValueError, msgpack.UnpackException) as exc:
            raise Unreadable(f"its ops.msgpack cannot be read ({exc})") from None
        if type(found) is not list:
            raise Unreadable("its ops.msgpack is not a list of operations")
        return found

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        """Replace ``manifest.json`` atomically, through the folder's descriptor."""
        tmp = "manifest.json.tmp"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=self.fd)  # whatever sits there: unlink never follows it
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(tmp, flags, 0o600, dir_fd=self.fd)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(manifest, fh, allow_nan=False)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, "manifest.json", src_dir_fd=self.fd, dst_dir_fd=self.fd)

    def records(self) -> Iterator[tuple[int, Any]]:
        """``(kind, operation or events)`` in order; raises :class:`Unreadable` for damage."""
        import msgpack

        from goggles_io._event.codec import Batch, Decoder

        fd = self._open("events.bin")
        try:
            size, at = os.fstat(fd).st_size, 0
            while at < size:
                if size - at < HEAD.size:
                    raise Unreadable(f"its events.bin ends inside a record head at byte {at}")
                kind, n, blob_bytes = HEAD.unpack(os.pread(fd, HEAD.size, at))
                end = at + HEAD.size + n + blob_bytes
                if kind not in (OP, EVENTS, SENT) or n > _RECORD_MAX or end > size:
                    raise Unreadable(f"its events.bin has a damaged record at byte {at}")
                data = os.pread(fd, n, at + HEAD.size)
                if len(data) != n:
                    raise Unreadable(f"its events.bin changed while read (byte {at})")
                try:
                    if kind == OP:
                        yield kind, msgpack.unpackb(data, raw=False)
                    else:
                        blobs = _Blobs(fd, at + HEAD.size + n, blob_bytes)
                        message = Decoder(blobs).decode(data)
                        if type(message) is not Batch:
                            raise ValueError(f"a {type(message).__name__}, not events")
                        yield kind, message.rows
                except (OSError, ValueError, TypeError, msgpack.UnpackException) as exc:
                    msg = f"its record at byte {at} is damaged: {type(exc).__name__}: {exc}"
                    raise Unreadable(msg) from None
                at = end
        finally:
            os.close(fd)


class _Blobs:
    """A record's arrays, read from the bytes behind it: each one's size is checked against
    the record's blobs before the array is made, and none may name a shared-memory segment
    (a folder's arrays were all copied out of the pools when it was written)."""

    def __init__(self, fd: int, at: int, size: int) -> None:
        self.fd, self.at, self.size = fd, at, size

    def read(self, ref: Any) -> Any:
        import numpy as np

        from goggles_io.exceptions import FrameError

        if ref.segment:
            raise FrameError(f"an array refers to shared memory {ref.segment!r}", value=ref)
        dtype = np.dtype(ref.dtype)
        count = 1
        for n in ref.shape:
            count *= n
        nbytes = count * dtype.itemsize
        if nbytes != ref.nbytes or ref.offset < 0 or ref.offset + nbytes > self.size:
            raise FrameError(f"an array outside its record's {self.size} bytes", value=ref)
        out = np.empty(ref.shape, dtype=dtype)
        view = out.reshape(-1).view(np.uint8).data
        done = 0
        while done < nbytes:
            got = os.preadv(self.fd, [view[done:]], self.at + ref.offset + done)
            if got <= 0:
                raise FrameError("events.bin ended inside an array", value=ref)
            done += got
        return out
