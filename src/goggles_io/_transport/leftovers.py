"""What ``finish()`` could not deliver, kept on disk for the next process on the machine.

When ``finish()`` gives up (a handler took nothing for ``GOGGLES_FINISH_STALL`` seconds, or
Ctrl-C), the client writes what its pipe still holds, in order, into a folder of its own under
the spool root, ``leftover-<pid>-<start time>/`` (0700; the spool sweep only ever removes
``p<pid>-...`` folders): the handler operations sent so far (``ops.msgpack``), the events and
the operations among them (``events.bin``: ``u8 kind | u32 record | u64 blobs`` then the
record, then big arrays straight from their buffers; staged arrays are read out of the shared
memory and disk pools first, since those go at exit), and ``manifest.json`` written last. The
tally counts them ``kept for later``, not lost.

The next :class:`~goggles_io._transport.client.SocketClient` to start on the machine (its first
``attach`` or log call, or ``python -m goggles_io.leftovers``) claims every such folder whose
owner is dead (an atomic rename to a name of its own), checks it whole, then puts its
operations and events into its own pipe before anything of its own, and removes the folder
once the host acknowledged them all. Events the dead process had sent to a host that had not
acknowledged them may have been handled there: they go marked redelivered (ADR 0030), as does
everything of a folder whose delivery was begun before. A folder that cannot be read is
reported in one line and renamed ``unreadable-...``, never retried, never removed.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from goggles_io._delivery.spool import SpoolRecord
from goggles_io._delivery.spool_space import remove_own_tree, spool_space
from goggles_io._event.messages import Call
from goggles_io._event.records import Event, ShmRef, approx_nbytes, row_event
from goggles_io._transport.courier import AGAIN, REPLAYED, Item, PipeOwner
from goggles_io._transport.operations import Marker
from goggles_io._util.liveness import pid_alive, start_time
from goggles_io._util.report import report

if TYPE_CHECKING:
    from goggles_io._delivery.waiting import Keep

__all__ = ["PREFIX", "Leftovers", "leftover_folders"]

PREFIX = "leftover-"
_FORMAT = 1
_HEAD = struct.Struct(">BIQ")  # kind, record bytes, blob bytes
_OP, _EVENTS, _SENT = 0, 1, 2  # record kinds: an operation, events, events a host may have had
_COMMAND = "python -m goggles_io.leftovers"


def leftover_folders(root: Path) -> list[str]:
    """Names of the left-over folders under ``root`` (any owner, alive or not)."""
    with contextlib.suppress(OSError):
        return sorted(n for n in os.listdir(root) if n.startswith(PREFIX))
    return []


def _owner_alive(name: str) -> bool:
    parts = name[len(PREFIX) :].split("-")
    if len(parts) < 2 or not parts[0].isdigit():
        return True  # not one of ours: leave it
    pid = int(parts[0])
    if not pid_alive(pid):
        return False
    found = start_time(pid)
    return found is None or found == parts[1]


class _Unreadable(Exception):
    """A left-over folder that cannot be delivered as it is."""


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

        self._record(_OP, msgpack.packb([call.op, call.args], use_bin_type=True), [])

    def events_of(self, events: list[Event], sent: bool) -> None:
        from goggles_io._event.spilled import SpillEncoder

        if self._encoder is None:
            self._encoder = SpillEncoder()
        events = [self._inline(e) for e in events]
        try:
            record, blobs = self._encoder.encode(events)
        except (TypeError, ValueError, OverflowError):
            for event in events:  # the codec refuses one of them: keep the others
                with contextlib.suppress(TypeError, ValueError, OverflowError):
                    self.events_of_one(event, sent)
            return
        self._record(_SENT if sent else _EVENTS, record, blobs)
        self.events += len(events)

    def events_of_one(self, event: Event, sent: bool) -> None:
        record, blobs = self._encoder.encode([event])
        self._record(_SENT if sent else _EVENTS, record, blobs)
        self.events += 1

    def _inline(self, event: Event) -> Event:
        """The event with its staged arrays copied out of the pools (they go at exit)."""
        payload = self._copy_out(event.payload)
        return event if payload is event.payload else attrs.evolve(event, payload=payload)

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
        self._fh.write(_HEAD.pack(kind, len(record), sum(len(b) for b in blobs)))
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
            "format": _FORMAT,
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
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(manifest, fh, allow_nan=False)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, folder / "manifest.json")


# -- reading: the next process --------------------------------------------------------------
def _read_folder(folder: Path) -> tuple[dict[str, Any], list[Any]]:
    """The manifest and the operations before the events; raises :class:`_Unreadable`."""
    import msgpack

    try:
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        ops = msgpack.unpackb((folder / "ops.msgpack").read_bytes(), raw=False)
    except (OSError, ValueError, msgpack.UnpackException) as exc:
        raise _Unreadable(f"{type(exc).__name__}: {exc}") from None
    if type(manifest) is not dict or manifest.get("format") != _FORMAT or type(ops) is not list:
        raise _Unreadable("not a left-over folder of this version")
    for op in ops:
        _check_op(op)
    return manifest, ops


def _check_op(op: Any) -> tuple[str, dict[str, Any]]:
    if type(op) is not list or len(op) != 2 or op[0] not in REPLAYED or type(op[1]) is not dict:
        raise _Unreadable(f"an operation that cannot be replayed: {op!r:.100}")
    return op[0], op[1]


def _records(folder: Path) -> Iterator[tuple[int, Any]]:
    """``(kind, operation or events)`` in order; raises :class:`_Unreadable` for damage."""
    import msgpack

    from goggles_io._event.spilled import decode_spilled

    try:
        fd = os.open(folder / "events.bin", os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        raise _Unreadable(f"events.bin: {exc}") from None
    try:
        size, at = os.fstat(fd).st_size, 0
        while at < size:
            head = os.pread(fd, _HEAD.size, at)
            if len(head) < _HEAD.size:
                raise _Unreadable(f"events.bin ends inside a record head at byte {at}")
            kind, n, blob_bytes = _HEAD.unpack(head)
            data = os.pread(fd, n, at + _HEAD.size)
            end = at + _HEAD.size + n + blob_bytes
            if kind not in (_OP, _EVENTS, _SENT) or len(data) < n or end > size:
                raise _Unreadable(f"events.bin has a damaged record at byte {at}")
            try:
                if kind == _OP:
                    yield kind, _check_op(msgpack.unpackb(data, raw=False))
                else:
                    record = SpoolRecord(data, fd, at + _HEAD.size + n, blob_bytes)
                    yield kind, decode_spilled(record)
            except (OSError, ValueError, TypeError, msgpack.UnpackException) as exc:
                raise _Unreadable(f"record at byte {at}: {type(exc).__name__}: {exc}") from None
            at = end
    finally:
        os.close(fd)


@attrs.define
class _Claimed:
    """A folder this process is delivering: removed once ``target`` units were acknowledged."""

    folder: Path
    target: int


class Leftovers:
    """One client's side of left-over events: writes its own, delivers dead processes'."""

    def __init__(self, client: PipeOwner) -> None:
        self.client = client
        self.root = spool_space(client.policy).root
        self.written: Path | None = None  # the folder this process kept its events in
        self.kept = 0
        self.delivered_folders = 0  # folders delivered in full (acknowledged)
        self.found = 0  # events put from left-over folders
        self.folders = 0  # left-over folders found (and readable) at the last start
        self._claimed: list[_Claimed] = []
        self._units = 0  # units of this pipe put from left-over folders
        self._ids = itertools.count(1)

    # -- the process that gives up ----------------------------------------------------------
    def closing(self, keep: bool, issued: list[Call]) -> Keep[Item] | None:
        """The pipe closes: what stores its leftovers when ``keep`` (finish gave up)."""
        self.written, self.kept = None, 0
        if keep:
            return lambda chunks: self._keep(chunks, issued)
        self._claimed = []  # not all acknowledged: the folders stay ours, for a later process
        return None

    def _keep(self, chunks: Iterator[tuple[list[Item], bool]], issued: list[Call]) -> bool:
        """Write what the pipe has left (``Pipe.close(keep=...)``); whether all of it was."""
        writer: _Writer | None = None
        try:
            folder = self._new_folder()
            writer = _Writer(folder)
            inline: set[int] = set()
            again = False  # between AGAIN markers of a delivery of leftovers that gave up
            for items, sent in chunks:
                run: list[Event] = []
                for item in items:
                    if not isinstance(item, Marker):
                        run.append(row_event(item) if isinstance(item, tuple) else item)
                        continue
                    if run:
                        writer.events_of(run, sent or again)
                    run = []
                    if item.call.op == AGAIN:
                        again = bool(item.call.args.get("on"))
                    elif item.call.op in REPLAYED:
                        inline.add(item.call.token)
                        writer.op(item.call)
                if run:
                    writer.events_of(run, sent or again)
            prefix = [call for call in issued if call.token not in inline]
            writer.finish(prefix, self.client.socket_path)
        except Exception as exc:  # a full disk, an array that cannot be read: counted as lost
            if writer is not None:
                writer.abandon()
            report(f"pid {os.getpid()}: could not keep what is left for later: {exc}")
            return False
        self.written, self.kept = writer.folder, writer.events
        for claimed in self._claimed:  # what was left of them is in our folder now
            remove_own_tree(claimed.folder)
        self._claimed = []
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
            f"on this machine delivers them first (or run `{_COMMAND}`)"
        )

    # -- the next process -------------------------------------------------------------------
    def deliver(self) -> int:
        """Put every dead process's left-over events into our pipe, before anything of ours
        (called as the client starts, on a fresh pipe); the folders found. Never raises."""
        self._units = 0
        found = self.folders = 0
        try:
            names = [n for n in leftover_folders(self.root) if not _owner_alive(n)]
            for name in names:
                found += self._deliver_one(name)
        except Exception as exc:  # never the producer's problem
            report(f"pid {os.getpid()}: could not deliver left-over events: {exc!r}")
        self.folders = found
        return found

    def _deliver_one(self, name: str) -> int:
        folder = self._claim(name)
        if folder is None:
            return 0
        try:
            manifest, ops = _read_folder(folder)
            events = sum(len(v) for kind, v in _records(folder) if kind != _OP)
            if events != manifest.get("events"):  # all of it readable before any is sent
                raise _Unreadable(f"{events} events, the manifest says {manifest.get('events')}")
        except _Unreadable as exc:
            bad = self.root / f"unreadable-{name}"
            with contextlib.suppress(OSError):
                os.rename(folder, bad)
            report(f"left-over events in {bad} cannot be delivered ({exc}); left as they are")
            return 0
        self._put(folder, manifest, ops)
        return 1

    def _claim(self, name: str) -> Path | None:
        mine = f"{PREFIX}{os.getpid()}-{start_time(os.getpid()) or 0}-from-{next(self._ids)}"
        try:
            os.rename(self.root / name, self.root / mine)
        except OSError:
            return None  # another process took it first
        return self.root / mine

    def _put(self, folder: Path, manifest: dict[str, Any], ops: list[Any]) -> None:
        client = self.client
        again = bool(manifest.get("deliveries"))  # begun before: any of it may have arrived
        with contextlib.suppress(OSError, ValueError, TypeError):
            _write_manifest(folder, {**manifest, "deliveries": int(manifest["deliveries"]) + 1})
        for op, args in ops:
            client.control(op, args)
        put = 0
        marking = False
        for kind, value in _records(folder):
            if kind == _OP:
                client.control(*value)
                continue
            if (kind == _SENT or again) != marking:
                marking = not marking
                client.control(AGAIN, {"on": marking})
            for event in value:
                put += client.pipe.put(event, approx_nbytes(event))  # a drop is counted there
        if marking:
            client.control(AGAIN, {"on": False})
        self._units += put  # the first units of this pipe: nothing of ours is before them
        self._claimed.append(_Claimed(folder, self._units))
        self.found += put
        report(f"delivering {put} left-over events of pid {manifest.get('pid')} from {folder}")

    def on_ack(self) -> None:
        """The pipe acknowledged more: remove the folders all of whose events arrived."""
        claimed = self._claimed
        while claimed and self.client.pipe.delivered >= claimed[0].target:
            remove_own_tree(claimed.pop(0).folder)
            self.delivered_folders += 1
