"""Digests of the text the sink's columns cover, computed while the server starts (ADR 0087).

The dashboard's index takes a chunk of the sink's columns only where the digest of the log's
text is the one the chunk records (ADR 0080): for ``logger.scalar``'s one metric a line that
is ~200 bytes read and digested a point, ~40 ms of the index's 0.24 s for 2M points. The read
(``preadv``, the kernel's copy: most of that time) runs without the GIL, so a thread started
before the server imports its web stack does it on the other core while the server imports
and binds, and goes on beside the index; the index asks here before it reads the text itself.

An answer holds only for the log as it was read: it is kept with the log's state (device,
inode, size, modification and change times) taken before its bytes were read and found the
same after; the index uses it only while ``fstat`` of its own descriptor gives that state,
else it reads the text itself. An append, an edit in place, a cut or a replaced log all
change the state. The chunk records only say which byte ranges to digest: the index checks
the records themselves as before, so nothing here is trusted beyond "these bytes of this
log, in this state, digest to this".
"""

from __future__ import annotations

import json
import os
import stat
import struct
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import attrs

from goggles_io._util.safe_read import read_small, resolves_inside
from goggles_io.handlers._columns import (
    CHUNK,
    DIGESTS,
    HEADER_BYTES,
    MAGIC,
    XXH3,
    column_paths,
    digest,
)
from goggles_io.runs import find_runs
from goggles_io.runs.lines import metric_sources
from goggles_io.server.index_paths import index_folder

__all__ = ["DigestAhead", "LogState", "log_state"]

_WINDOW = 1 << 20  # bytes of text read at once (one GIL release each; hashed while in cache)
_RECORDS = 1024  # chunk records read at once
_MAX_BYTES = 1 << 30  # text digested ahead in all at most (an index kept from an earlier start
# has read it already; ~5M points of one metric a line)
_MAX_ANSWERS = 1 << 20  # answers kept at most (~100 bytes each)
_HEAD = struct.Struct("<8sQQQ")  # the chunks file's header (handlers/_columns.py HEADER)
_RECORD = struct.Struct("<6Q")  # one chunk record (CHUNK)
_MANIFEST = "manifest.json"  # the index's (server/ui/_index.py)
_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC

LogState = tuple[int, int, int, int, int]
"""A log's device, inode, size, modification and change times (ns)."""


def log_state(info: os.stat_result) -> LogState:
    """The state an answer is kept with (see the module's docstring)."""
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


@attrs.define
class _Log:
    state: LogState
    kind: int  # the header's digest
    answers: dict[int, tuple[int, int]] = attrs.field(factory=dict)  # start -> (end, digest)
    passed: int = 0  # the index has gone past this offset: no use digesting before it


class DigestAhead:
    """Digests the text of the sink's chunk records of every JSONL log under ``roots`` on a
    daemon thread (:meth:`start`), for :meth:`lookup`; :meth:`close` stops it. What the index
    in ``index_root`` already holds (a manifest of the same log) is not read again."""

    def __init__(
        self, roots: Sequence[str | os.PathLike[str]], index_root: Path | None = None
    ) -> None:
        self.roots = [Path(p) for p in roots]
        self.index_root = index_root  # where an index kept from an earlier start may stand
        self.used = 0  # answers the index took (for tests and benchmarks)
        self.digested = 0  # bytes of text read and digested here
        self._logs: dict[tuple[int, int], _Log] = {}
        self._answers = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> DigestAhead:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="telemetry-ui-digest-ahead", daemon=True
            )
            self._thread.start()
        return self

    def close(self) -> None:
        """Stop digesting and forget every answer."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10.0)
        self._logs = {}

    def join(self, timeout_s: float | None = None) -> bool:
        """Wait until every log is digested (tests); whether it is."""
        if self._thread is not None:
            self._thread.join(timeout_s)
            return not self._thread.is_alive()
        return True

    def lookup(self, log: os.stat_result, kind: int, start: int, end: int) -> int | None:
        """The digest ``kind`` of the log's bytes ``[start, end)`` if they were digested here
        and the log (``fstat`` of the index's descriptor) is still as it was then."""
        found = self._logs.get((log.st_dev, log.st_ino))
        if found is None or found.kind != kind or found.state != log_state(log):
            return None
        found.passed = max(found.passed, end)
        got = found.answers.pop(start, None)
        if got is None or got[0] != end:
            return None
        self.used += 1
        return got[1]

    def skip(self, log: os.stat_result, offset: int) -> None:
        """The index of the log ``log`` (``fstat``) stands at ``offset``: nothing before it is
        digested here any more (an index kept from an earlier start)."""
        found = self._logs.get((log.st_dev, log.st_ino))
        if found is not None:
            found.passed = max(found.passed, offset)

    # -- the thread ---------------------------------------------------------------------------
    def _run(self) -> None:
        try:
            for root in self.roots:
                for run in find_runs(root):
                    if not resolves_inside(root, run):
                        continue  # a run folder symlinked in from outside: not served
                    for path in metric_sources(run):
                        if self._stop.is_set() or self.digested >= _MAX_BYTES:
                            return
                        if path.suffix == ".jsonl" and resolves_inside(run, path):
                            self._log(run, path)
        except (OSError, ValueError):
            return  # best effort: the index reads whatever is not answered here

    def _log(self, run: Path, path: Path) -> None:
        chunks = column_paths(path)[2]
        if not resolves_inside(run, chunks):
            return
        fds: list[int] = []
        try:
            for name in (path, chunks):
                fds.append(os.open(name, _FLAGS))
                if not stat.S_ISREG(os.fstat(fds[-1]).st_mode):
                    return  # a FIFO, a device: never read
            info = os.fstat(fds[0])
            head = os.pread(fds[1], HEADER_BYTES, 0)
            if len(head) != _HEAD.size:
                return
            magic, ino, kind, _ = _HEAD.unpack(head)
            if magic != MAGIC or ino != info.st_ino or kind != XXH3 or kind not in DIGESTS:
                return  # the index reads these itself (CRC-32 holds the GIL: not here)
            entry = _Log(log_state(info), kind, passed=self._indexed(run, path, info.st_ino))
            self._logs[(info.st_dev, info.st_ino)] = entry
            self._digest(fds[0], entry, self._ranges(fds[1], info.st_size))
        except OSError:
            return
        finally:
            for fd in fds:
                os.close(fd)

    def _indexed(self, run: Path, path: Path, ino: int) -> int:
        """How far the index kept from an earlier start read this log (0: none, or unsure)."""
        if self.index_root is None:
            return 0
        owner = f"dir:{os.path.abspath(run)}"  # as DirFeeder names its index
        try:
            data = json.loads(read_small(index_folder(self.index_root, "dirs", owner) / _MANIFEST))
            source = data["sources"][path.relative_to(run).as_posix()]
            if data["owner"] == owner and source["inode"] == ino:
                return max(int(source["offset"]), 0)
        except (OSError, ValueError, KeyError, TypeError):
            pass
        return 0

    @staticmethod
    def _ranges(chunks_fd: int, size: int) -> Iterator[tuple[int, int]]:
        """The byte ranges of the chunk records, in order, each after the one before and inside
        the log: whatever a hostile file claims, at most the log's size is read."""
        at, k = 0, 0
        while True:
            data = os.pread(chunks_fd, _RECORDS * CHUNK.itemsize, HEADER_BYTES + k * CHUNK.itemsize)
            whole = len(data) // CHUNK.itemsize * CHUNK.itemsize
            if not whole:
                return
            for start, end, *_ in _RECORD.iter_unpack(data[:whole]):
                if at <= start < end <= size and end - start <= _WINDOW:
                    yield start, end
                    at = end
            k += whole // CHUNK.itemsize

    def _digest(self, fd: int, entry: _Log, ranges: Iterator[tuple[int, int]]) -> None:
        """Digest ``ranges`` a window of text at a time, publishing each window's answers only
        when the log's state after the read is the one before it."""
        buffer = bytearray(_WINDOW)
        view = memoryview(buffer)
        window: list[tuple[int, int]] = []
        for start, end in ranges:
            if window and end - window[0][0] > _WINDOW:
                if not self._window(fd, entry, view, window):
                    return
                window = []
            if start >= entry.passed:  # else the index is already past it
                window.append((start, end))
        if window:
            self._window(fd, entry, view, window)

    def _window(
        self, fd: int, entry: _Log, view: memoryview, window: list[tuple[int, int]]
    ) -> bool:
        """One window's answers; ``False``: stop reading this log."""
        if self._stop.is_set() or self.digested >= _MAX_BYTES or self._answers >= _MAX_ANSWERS:
            return False
        first, last = window[0][0], window[-1][1]
        if last <= entry.passed:
            return True
        got = os.preadv(fd, [view[: last - first]], first)
        self.digested += got
        if got != last - first or log_state(os.fstat(fd)) != entry.state:
            entry.answers.clear()  # the log changed: nothing read here holds
            entry.state = (0, 0, 0, 0, 0)
            return False
        kind = entry.kind  # one-shot digests hold the GIL ~2 us each: fewer switches than
        # digests that release it around 64 KiB (each a hand-over to and from the server)
        found = {s: (e, digest(kind, view[s - first : e - first])) for s, e in window}
        entry.answers.update(found)
        self._answers += len(found)
        return True
