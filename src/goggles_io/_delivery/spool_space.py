"""Where a process's spools live and how much they may take: one folder, one budget (ADR 0025).

Every spool of a process (and its disk pool) lives under ``<spool dir>/p<pid>-<start time>``
(0700, created on the first spill) and shares one byte budget: ``GOGGLES_SPOOL_BYTES``, and
never more than a quarter of the space that was free. A folder whose owner died is removed by
the next process that makes its own (:func:`sweep_dead_spools`); the last spool of a process to
close removes the folder. Folders are removed by :func:`remove_own_tree`, never ``shutil.rmtree``:
the spool root is shared by every process of the user and may hold anything.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import stat
import tempfile
import threading
from pathlib import Path

from goggles_io._delivery.policy import DeliveryPolicy
from goggles_io._util.liveness import pid_alive, start_time
from goggles_io._util.report import report

__all__ = [
    "SpoolSpace",
    "create_segment_file",
    "default_spool_root",
    "list_spools",
    "remove_own_tree",
    "remove_segment_file",
    "spool_space",
    "sweep_dead_spools",
]

_FREE_FRACTION = 0.25  # a process's spools never take more than this share of the free space
# Opening a folder to look inside: never a symlink (O_NOFOLLOW), never anything but a directory
# (O_DIRECTORY fails before a FIFO or device is opened; O_NONBLOCK in case it did not).
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_MAX_DEPTH = 8  # a spool folder is 2 deep; anything deeper is not ours and is left


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


def remove_own_tree(path: Path | str) -> tuple[bool, int]:
    """Remove the folder ``path`` if it is a real directory of ours: ``(gone, bytes removed)``.

    Only regular files and directories owned by this uid are removed. Everything is looked at
    through ``lstat`` and directory descriptors: a symlink is never followed (its target is
    never touched), a FIFO or device never opened (``shutil.rmtree`` opens the path it is given,
    and a FIFO there blocks it forever). Whatever else is found stays, with its folders.
    """
    parent, name = os.path.split(os.path.abspath(path))
    try:
        parent_fd = os.open(parent, _DIR_FLAGS)
    except OSError:
        return False, 0
    try:
        return _remove_dir(parent_fd, name, 0)
    finally:
        os.close(parent_fd)


def _remove_dir(parent_fd: int, name: str, depth: int) -> tuple[bool, int]:
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except FileNotFoundError:
        return True, 0
    except OSError:  # a symlink (ELOOP), not a directory (ENOTDIR), not ours to read
        return False, 0
    uid = os.getuid()
    gone, size = True, 0
    try:
        if os.fstat(fd).st_uid != uid or depth > _MAX_DEPTH:
            return False, 0
        found = []
        with os.scandir(fd) as entries:
            for e in entries:
                with contextlib.suppress(FileNotFoundError):  # removed meanwhile
                    found.append((e.name, e.stat(follow_symlinks=False)))
        for entry, st in found:
            if st.st_uid != uid:
                gone = False
            elif stat.S_ISDIR(st.st_mode):
                removed, n = _remove_dir(fd, entry, depth + 1)
                gone, size = gone and removed, size + n
            elif stat.S_ISREG(st.st_mode):
                try:
                    os.unlink(entry, dir_fd=fd)
                    size += st.st_size
                except FileNotFoundError:
                    pass
                except OSError:
                    gone = False
            else:
                gone = False  # a FIFO, socket, device or symlink: left where it is
    except OSError:
        gone = False
    finally:
        os.close(fd)
    if gone:
        try:
            os.rmdir(name, dir_fd=parent_fd)
        except FileNotFoundError:
            pass
        except OSError:
            gone = False
    return gone, size


def sweep_dead_spools(root: Path | str) -> list[tuple[str, int]]:
    """Remove the spool folders of processes that are no longer alive; ``(name, bytes)`` each.

    Their events are not lost by this: a producer's spool dies with the producer (it counted
    what it could not send), and a host's is re-sent by the producers that kept it. Only real
    folders of ours are removed (:func:`remove_own_tree`); a FIFO, a symlink or a folder holding
    one is left as it is.
    """
    swept = []
    for name in list_spools(root):
        if _owner_alive(name):
            continue
        gone, size = remove_own_tree(Path(root) / name)
        if gone:
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

    def reserve_segment(self, need: int, size: int, at: Path) -> int | None:
        """Reserve a segment of ``max(size, need)`` bytes in ``at`` (:meth:`reserve`); ``None``,
        with nothing kept, when the grant is smaller than ``need``."""
        grant = self.reserve(max(size, need), at)
        if grant < need:
            self.release(grant)
            return None
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
        remove_own_tree(folder)
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


def create_segment_file(path: Path) -> int:
    """Open a new segment file of a spool or disk pool for read and write: 0600, and never a
    file that is already there (``O_EXCL``: a planted one is refused, not written into)."""
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)


def remove_segment_file(fd: int, path: Path) -> None:
    """Close and unlink a segment file; either step may already be done."""
    with contextlib.suppress(OSError):
        os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(path)
