"""What ``finish()`` could not deliver: kept on disk, and handed to a deliverer later (ADR 0060).

When ``finish()`` gives up (a handler took nothing for ``GOGGLES_FINISH_STALL`` seconds, or
Ctrl-C), the client writes what its pipe still holds, in order, into a folder of its own under
the spool root, ``leftover-<pid>-<start time>/`` (0700; the spool sweep only ever removes
``p<pid>-...`` folders): the handler operations sent so far (``ops.msgpack``: each handler's
spec, its recorded config and run), the events (as rows) and the operations among them
(``events.bin``; staged arrays are read out of the shared memory and disk pools first, since
those go at exit), and ``manifest.json`` written last. Each record of events keeps its
producer's id and its first event's sequence (ADR 0057): a batch the hung host was sent keeps
the numbers it went with, and what was never sent is numbered after it, so a sink that took some
of them (a hung handler that woke) skips them when the folder is delivered. The tally counts
them ``kept for later``, not lost. Those
the host had not routed yet would also have reached the handlers this process runs itself
(in-process lanes, fed by the host): nothing else can rebuild those, so for them these events
are counted lost (:class:`~goggles_io._transport.client.placement.KeptCounter`).

The next :class:`~goggles_io._transport.client.socket_client.SocketClient` to start on the machine looks at
the spool root (names and ``lstat`` only, nothing opened) and, when a dead process left
folders, starts ``python -m goggles_io.leftovers`` in a session of its own: that deliverer
replays each folder into the handlers of the run that logged it, never into this process's
(:mod:`~goggles_io._transport.host.leftover_delivery`). This process's own events never wait for it.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import stat
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from goggles_io._delivery.spool_space import remove_own_tree, spool_space
from goggles_io._event.messages import REPLAYED, Call
from goggles_io._event.records import ShmRef
from goggles_io._event.rows import Row, RowRun, payload_of, run_length, run_rows, with_payload
from goggles_io._transport.client.courier import SEQ_SHIFT, Item, PipeOwner
from goggles_io._transport.client.operations import Marker
from goggles_io._transport.client.spawn import spawn_detached
from goggles_io._transport.leftover_folder import (
    EVENTS,
    FORMAT,
    HEAD,
    OP,
    PREFIX,
    SENT,
    leftover_names,
    owner_alive,
)
from goggles_io._util.liveness import start_time
from goggles_io._util.report import report

if TYPE_CHECKING:
    from goggles_io._delivery.waiting import Keep
    from goggles_io._transport.client.placement import KeptCounter

__all__ = ["COMMAND", "Leftovers", "spawn_deliverer"]

COMMAND = "python -m goggles_io.leftovers"


# -- writing: the process that gave up ------------------------------------------------------
class _Writer:
    """Writes one left-over folder; arrays of the producer's pools are read out first."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.events = 0
        self._fh = open(folder / "events.bin", "xb")  # closed by finish() or abandon()
        self._encoder: Any = None
        self._reader: Any = None

    def op(self, call: Call) -> None:
        import msgpack

        self._record(OP, msgpack.packb([call.op, call.args], use_bin_type=True), [])

    def rows(self, rows: list[Row], sent: bool, producer: str, first: int) -> None:
        """Write ``rows``, numbered from ``first`` in ``producer``'s stream."""
        from goggles_io._event.spilled import SpillEncoder

        if self._encoder is None:
            self._encoder = SpillEncoder()
        rows = [self._inline(row) for row in rows]
        try:
            record, blobs = self._encoder.encode(rows, producer, first)
        except (TypeError, ValueError, OverflowError):
            for i, row in enumerate(rows):  # the codec refuses one of them: keep the others
                with contextlib.suppress(TypeError, ValueError, OverflowError):
                    self.one_row(row, sent, producer, first + i)
            return
        self._record(SENT if sent else EVENTS, record, blobs)
        self.events += len(rows)

    def one_row(self, row: Row, sent: bool, producer: str, seq: int) -> None:
        record, blobs = self._encoder.encode([row], producer, seq)
        self._record(SENT if sent else EVENTS, record, blobs)
        self.events += 1

    def _inline(self, row: Row) -> Row:
        """The row with its staged arrays copied out of the pools (they go at exit)."""
        payload = payload_of(row)
        copied = self._copy_out(payload)
        return row if copied is payload else with_payload(row, copied)

    def _copy_out(self, value: Any) -> Any:
        if type(value) is ShmRef:
            if self._reader is None:
                from goggles_io._transport.shm import ShmReader

                self._reader = ShmReader()
            return self._reader.read(value)
        if type(value) is dict:
            out = {k: self._copy_out(v) for k, v in value.items()}
            return value if all(out[k] is v for k, v in value.items()) else out
        if type(value) in (list, tuple):
            items = [self._copy_out(v) for v in value]
            changed = any(a is not b for a, b in zip(items, value, strict=True))
            return type(value)(items) if changed else value
        return value

    def _record(self, kind: int, record: bytes, blobs: Any) -> None:
        self._fh.write(HEAD.pack(kind, len(record), sum(len(b) for b in blobs)))
        self._fh.write(record)
        for blob in blobs:
            self._fh.write(blob)

    def finish(self, prefix: list[Call], socket_path: str) -> None:
        import msgpack

        self._fh.flush()
        os.fsync(self._fh.fileno())
        self._fh.close()
        if self._reader is not None:
            self._reader.close()
        ops = [[call.op, call.args] for call in prefix]
        (self.folder / "ops.msgpack").write_bytes(msgpack.packb(ops, use_bin_type=True))
        manifest = {
            "format": FORMAT,
            "pid": os.getpid(),
            "events": self.events,
            "socket": socket_path,
            "written": time.time(),
            "deliveries": 0,
        }
        _write_manifest(self.folder, manifest)

    def abandon(self) -> None:
        with contextlib.suppress(OSError):
            self._fh.close()
        remove_own_tree(self.folder)


def _write_manifest(folder: Path, manifest: dict[str, Any]) -> None:
    tmp = folder / "manifest.json.tmp"
    with open(tmp, "x", encoding="utf-8") as fh:
        json.dump(manifest, fh, allow_nan=False)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, folder / "manifest.json")


class Leftovers:
    """One client's side of left-over events: keeps its own, starts a deliverer for the dead's."""

    def __init__(
        self,
        client: PipeOwner,
        *,
        producer: Callable[[], str],
        kept_counter: Callable[[], KeptCounter] | None = None,
        host_log: str | None = None,
    ) -> None:
        """``producer()``: the id the client's events are numbered under now (ADR 0057)."""
        self.client = client
        self._producer = producer
        self.host_log = host_log
        self.root = spool_space(client.policy).root
        self.written: Path | None = None  # the folder this process kept its events in
        self.kept = 0
        # Of the kept events, how many each in-process handler would have had (lost to it).
        self.kept_from_local: dict[str, int] = {}
        self._kept_counter = kept_counter
        self.deliverer: subprocess.Popen[bytes] | None = None
        self._looked = False

    # -- the process that gives up ----------------------------------------------------------
    def closing(self, keep: bool, issued: list[Call]) -> Keep[Item] | None:
        """The pipe closes: what stores its leftovers when ``keep`` (finish gave up)."""
        self.written, self.kept, self.kept_from_local = None, 0, {}
        return (lambda chunks: self._keep(chunks, issued)) if keep else None

    def _keep(self, chunks: Iterator[tuple[list[Item], bool, int]], issued: list[Call]) -> bool:
        """Write what the pipe has left (``Pipe.close(keep=...)``); whether all of it was.

        Events are numbered as the courier numbers them on the wire (the item at index ``i``
        of pipe batch ``seq``: ``seq << SEQ_SHIFT | i``); items never batched as if they were
        the batches after the last one (no sink has them; the numbers only need to follow)."""
        writer: _Writer | None = None
        counter = None if self._kept_counter is None else self._kept_counter()
        producer = self._producer()
        try:
            folder = self._new_folder()
            writer = _Writer(folder)
            inline: set[int] = set()
            last = 0
            for items, sent, seq in chunks:
                if not seq:
                    seq = last + 1
                last = max(last, seq)
                base = seq << SEQ_SHIFT
                run: list[Row] = []
                first = base
                i = -1  # the position in the batch: an item one, a front's run its rows
                for item in items:
                    i += 1
                    if isinstance(item, RowRun):
                        if not run:
                            first = base + i
                        run += run_rows(item)
                        i += run_length(item) - 1
                        continue
                    if not isinstance(item, Marker):
                        if not run:
                            first = base + i
                        run.append(item)
                        continue
                    _write_run(writer, run, sent, counter, producer, first)
                    run = []
                    if item.call.op in REPLAYED:
                        inline.add(item.call.token)
                        writer.op(item.call)
                _write_run(writer, run, sent, counter, producer, first)
            prefix = [call for call in issued if call.token not in inline]
            writer.finish(prefix, self.client.socket_path)
        except Exception as exc:  # a full disk, an array that cannot be read: counted as lost
            if writer is not None:
                writer.abandon()
            report(f"pid {os.getpid()}: could not keep what is left for later: {exc}")
            return False
        self.written, self.kept = writer.folder, writer.events
        self.kept_from_local = {} if counter is None else counter.result()
        return True

    def _new_folder(self) -> Path:
        old = os.umask(0o077)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            base = f"{PREFIX}{os.getpid()}-{start_time(os.getpid()) or 0}"
            for n in itertools.count(1):
                folder = self.root / (base if n == 1 else f"{base}-{n}")
                with contextlib.suppress(FileExistsError):
                    folder.mkdir(mode=0o700)
                    return folder
        finally:
            os.umask(old)
        raise AssertionError("unreachable")

    def note(self) -> str:
        """The end-of-run words for what was kept (empty when nothing was)."""
        if self.written is None:
            return ""
        return (
            f"{self.kept} events kept for later in {self.written}: the next process that logs "
            f"on this machine has them delivered into this run's handlers (or run `{COMMAND}`)"
        )

    # -- the next process -------------------------------------------------------------------
    def deliver(self) -> None:
        """Start a deliverer when dead processes left folders (once per process; looks at
        names and ``lstat`` only, so nothing in the spool can make this wait). Never raises."""
        if self._looked:
            return
        self._looked = True
        try:
            mine, foreign = _waiting(self.root)
            if foreign:
                report(
                    f"pid {os.getpid()}: left-over events under {self.root} of another user "
                    f"({', '.join(foreign)}): not ours, never delivered nor removed"
                )
            if mine:
                self.deliverer = spawn_deliverer(self.host_log)
                report(
                    f"pid {os.getpid()}: {len(mine)} left-over folders of earlier runs under "
                    f"{self.root}: pid {self.deliverer.pid} delivers them into their own "
                    "runs' handlers"
                )
        except Exception as exc:  # never the producer's problem
            report(f"pid {os.getpid()}: could not start delivering left-over events: {exc!r}")


def _write_run(
    writer: _Writer,
    run: list[Row],
    sent: bool,
    counter: KeptCounter | None,
    producer: str,
    first: int,
) -> None:
    if run:
        if counter is not None:
            counter.add(run)
        writer.rows(run, sent, producer, first)


def _waiting(root: Path) -> tuple[list[str], list[str]]:
    """Left-over folders of dead processes: ours, and (uid) another user's."""
    uid = os.getuid()
    mine, foreign = [], []
    for name in leftover_names(root):
        if owner_alive(name):
            continue
        try:
            st = os.lstat(root / name)
        except OSError:
            continue
        if st.st_uid != uid:
            foreign.append(f"{name} (uid {st.st_uid})")
        elif stat.S_ISDIR(st.st_mode):
            mine.append(name)
    return mine, foreign


def spawn_deliverer(host_log: str | None) -> subprocess.Popen[bytes]:
    """``python -m goggles_io.leftovers`` in a session of its own (as the host is spawned): its
    lines go to ``GOGGLES_HOST_LOG`` when set, else to our stderr."""
    return spawn_detached(["goggles_io.leftovers", "--quiet"], host_log)
