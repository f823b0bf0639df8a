"""Frames the client pipe's batches onto the link; acknowledges each once the host did.

A pipe batch holds rows and handler operations (:class:`Marker`) in the order they were
logged. Runs of rows go as numbered batch frames (:mod:`goggles_io._transport.client.batching`),
each operation as its own ``Call`` frame, all in one write. The host acknowledges event frames
once its handlers took them (``Ack(seq)``, cumulative; ADR 0030) and answers each operation
(``Reply``); the pipe batch is acknowledged when every frame of it was, in order, and only then
are its shared-memory slots given back, except those the Ack pinned: a reader on the host still
holds them (a lent view, ADR 0077), and they come back with the ``Release`` that names them.
After a lost link the pipe sends its kept batches again, marked redelivered; the slots the
encoder made for them stay out of use until the pool closes (a host that is still alive may
still lend them; the batches are encoded again into new ones).
"""

from __future__ import annotations

import os
import secrets
import threading
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from goggles_io._event.messages import REPLAYED, Ack, Call, Release, Reply
from goggles_io._event.records import ShmRef
from goggles_io._event.rows import Row, RowRun, payload_of, run_length
from goggles_io._transport.client.batch_shapes import plain, runs_only, staged_bytes
from goggles_io._transport.client.link import HostLink, LinkLost
from goggles_io._transport.client.loading import load_modules
from goggles_io._transport.client.operations import Marker
from goggles_io._transport.client.pools import ArrayPools
from goggles_io._transport.framing import encode_frame
from goggles_io._util.collector import collector_paused

if TYPE_CHECKING:
    from goggles_io._delivery.pipe import Pipe
    from goggles_io._delivery.policy import DeliveryPolicy
    from goggles_io._event.codec import Encoder
    from goggles_io._transport.client.batching import Batcher

__all__ = ["AGAIN", "SEQ_SHIFT", "Courier", "Item"]

# What the client pipe carries: rows (rows.py), a scalar front's runs of them, handler operations.
Item = Row | RowRun | Marker
# Not sent: the events after ``Call(AGAIN, {"on": True})`` go marked redelivered until one with
# ``on`` false (a dead process's events its host may have handled: ``leftovers.py``).
AGAIN = "again"
# An event's sequence is its pipe batch's number shifted left by this, plus its index in the
# batch (a run of a scalar front counts its rows; a client batch holds at most 1024 items and
# 1 MiB of them, a few thousand rows): the same on every send (ADR 0057).
SEQ_SHIFT = 20

_FRAME_HELD_BYTES = 4 * 1024 * 1024
# Frames of consecutive batches are written together up to this much while more batches wait:
# each write releases the GIL, and the application's thread then keeps it for a whole switch
# interval (5 ms), so one write per small batch starved the sender.
_WRITE_BYTES = 512 * 1024


def _add(into: dict[str, int], counts: dict[str, int]) -> None:
    """Add ``counts`` to ``into``, name by name."""
    for name, n in counts.items():
        into[name] = into.get(name, 0) + n


class PipeOwner(Protocol):
    """What the client that holds the pipe offers to those that put into it on its behalf."""

    socket_path: str
    policy: DeliveryPolicy
    pipe: Pipe[Item]

    def control(self, op: str, args: dict[str, Any]) -> Marker: ...


@attrs.define
class _Sent:
    """One pipe batch on the current connection, until every frame of it is acknowledged."""

    seq: int
    last_frame: int | None  # the last event frame's seq (None: operations only)
    tokens: set[int]  # operations not answered yet
    refs: list[ShmRef]  # slots its frames refer to: given back at its acknowledgement
    created: list[ShmRef]  # of those, the ones the encoder made (given back after a death)
    frames: list[int] = attrs.field(factory=list)  # its event frames' seqs
    taken: dict[str, int] = attrs.field(factory=dict)  # per handler, of its frames acknowledged


class Courier:
    """The pipe's ``send``: frames on the link, and the bookkeeping of what the host took."""

    def __init__(
        self,
        link: HostLink,
        pools: ArrayPools,
        *,
        on_unencodable: Callable[[Exception], None],
        make_pipe: Callable[[Callable[[int, list[Item], bool], None]], Pipe[Item]],
    ) -> None:
        """``make_pipe(send)`` builds the pipe whose ``send`` the courier is: the courier holds
        it, acknowledges its batches (``ack``), asks whether more follow (``queued``) and which
        link generation a batch was picked for (``sending_gen``: the pipe's count of lost
        links, which is the link's, both counting each loss once)."""
        self.link = link
        self.pools = pools
        # Who numbers the events (ADR 0057): one id per pipe, so per process and per finish.
        self.producer = f"{os.getpid()}-{secrets.token_hex(6)}"
        # Per handler, the events of the batches the current host acknowledged whole; at its
        # death they move to ``taken_before``, which finish() adds to the next host's tally.
        self.taken: dict[str, int] = {}
        self.taken_before: dict[str, int] = {}
        self._frames: dict[int, _Sent] = {}  # frames sent on this link, to their pipe batch
        self._unwritten: list[bytes] = []  # frames of batches sent, not written yet
        self._unwritten_bytes = 0
        self.host_dropped = 0  # of ours, refused by a full handler queue in the host
        self._on_unencodable = on_unencodable
        self._batcher: Batcher | None = None
        self._encoder: Encoder | None = None
        self._sent: deque[_Sent] = deque()
        self._markers: dict[int, Marker] = {}
        self._answered: set[int] = set()
        self._acked_frame = 0
        self._ops: list[Call] = []  # operations sent, replayed on every new host
        self._op_tokens: set[int] = set()
        self._again = False  # between AGAIN markers
        self._again_before: dict[int, bool] = {}  # per pipe batch not acknowledged: _again then
        self._lock = threading.Lock()
        self.pipe = make_pipe(self.send)

    # -- the pipe's worker ------------------------------------------------------------------
    def send(self, seq: int, items: list[Item], redelivered: bool) -> None:
        """Write pipe batch ``seq`` in one go; raises ``OSError`` when the host is gone.

        Only on the link the pipe picked the batch for (``generation``): once that link is
        lost, a batch picked before the pipe heard of it would overtake the batches it sends
        again, so it is refused (:class:`~goggles_io._transport.client.link.LinkLost`) and the pipe
        picks again, in order. Each event goes numbered ``seq << SEQ_SHIFT | its index`` in
        the batch (ADR 0057), the same on every send; events a dead process left for later
        (between ``AGAIN`` markers) go unnumbered: they were numbered by their own producer.
        """
        gen = self.pipe.sending_gen
        with self._lock:  # framed again after a death: in the AGAIN state it was framed in
            self._again = self._again_before.setdefault(seq, self._again)
        encoder, batcher = self._codec()
        data: list[bytes] = []
        sent = _Sent(seq, None, set(), [], [])
        base = seq << SEQ_SHIFT
        with collector_paused():  # ADR 0088: framing's short-lived objects never promoted
            if runs_only(items):  # a front's runs of scalars: columns by slicing
                self._frame_runs(items, redelivered, batcher, sent, data, base)  # type: ignore[arg-type]
            elif plain(items, self.pools.staged_any):  # no operation, no staged array: one run
                again = redelivered or self._again
                first = 0 if self._again else base
                self._frame_events(items, again, batcher, sent, data, first)  # type: ignore[arg-type]
            else:
                self._frame_mixed(items, redelivered, encoder, batcher, sent, data, base)
        with self._lock:
            if gen != self.link.losses:  # lost since the pick: link_lost() cleared what it held
                stale = True
            else:
                stale = False
                self._sent.append(sent)
                for frame in sent.frames:
                    self._frames[frame] = sent
                self._unwritten += data
                self._unwritten_bytes += sum(map(len, data))
                if self._unwritten_bytes < _WRITE_BYTES and self.pipe.queued():
                    return  # written with the next batch's frames, before the pipe sleeps
                data, self._unwritten, self._unwritten_bytes = self._unwritten, [], 0
        if stale:
            self.pools.release(sent.created)
            raise LinkLost("the link was lost after this batch was picked")
        try:
            self.link.send(b"".join(data), gen)
        except LinkLost:
            self._forget(sent)
            raise
        except OSError:
            # Tells the pipe: every kept batch goes again (those written with this one too).
            self.link.disconnect()
            self._forget(sent)
            raise
        self._settle()  # a batch of nothing (all unencodable) is through at once

    def _frame_runs(
        self,
        runs: list[RowRun],
        redelivered: bool,
        batcher: Batcher,
        sent: _Sent,
        data: list[bytes],
        base: int,
    ) -> None:
        """Frame each run as a batch of its own, numbered from its first row's position in the
        pipe batch (``base`` + the rows before it), as :meth:`_frame_mixed` numbers them."""
        again = redelivered or self._again
        at = 0
        for run in runs:
            self._frame_events(run, again, batcher, sent, data, 0 if self._again else base + at)
            at += run_length(run)

    def _frame_mixed(
        self,
        items: list[Item],
        redelivered: bool,
        encoder: Encoder,
        batcher: Batcher,
        sent: _Sent,
        data: list[bytes],
        base: int,
    ) -> None:
        """Frame runs of events between operations, a run ending early at 4 MiB of staged arrays;
        each run numbered from its first event's index in the batch (``base`` + index)."""
        events: list[Row] = []
        held = 0  # bytes of staged arrays the host will read for ``events``
        again = redelivered or self._again
        first = 0  # the number of events[0] (0: unnumbered)
        i = -1  # the position in the batch: an item one, a run its rows (leftovers.py too)
        for item in items:
            i += 1
            if isinstance(item, Marker):
                self._frame_events(events, again, batcher, sent, data, first)
                events, held = [], 0
                if item.call.op == AGAIN:  # ours, not the host's: marks the events after it
                    self._again = bool(item.call.args.get("on"))
                    again = redelivered or self._again
                    item.done.set()
                else:
                    self._frame_call(item, encoder, sent, data)
                continue
            if isinstance(item, RowRun):  # framed on its own, numbered from its position
                self._frame_events(events, again, batcher, sent, data, first)
                events, held = [], 0
                at = 0 if self._again else base + i
                self._frame_events(item, again, batcher, sent, data, at)
                i += run_length(item) - 1
                continue
            if not events:
                first = 0 if self._again else base + i
            events.append(item)
            held += staged_bytes(item)
            if held >= _FRAME_HELD_BYTES:
                # A frame's arrays all live in the host at once: it waits for room per frame.
                self._frame_events(events, again, batcher, sent, data, first)
                events, held = [], 0
        self._frame_events(events, again, batcher, sent, data, first)

    def _codec(self) -> tuple[Encoder, Batcher]:
        load_modules()
        from goggles_io._event.codec import Encoder
        from goggles_io._transport.client.batching import Batcher

        if self._batcher is None or self._encoder is None:
            self._encoder = Encoder(self.pools.threshold, self.pools.shm())
            self._batcher = Batcher(self.pools.release, self._on_unencodable)
            self._batcher.encoder = self._encoder
        return self._encoder, self._batcher

    def _frame_events(
        self,
        events: list[Row],
        redelivered: bool,
        batcher: Batcher,
        sent: _Sent,
        data: list[bytes],
        first: int = 0,
    ) -> None:
        if not events:
            return
        staged: set[int] | None = None  # ids of the arrays staged at their log call
        producer = self.producer if first else ""
        for frame_seq, frame, _, refs in batcher.frames(events, redelivered, producer, first):
            data.append(frame)
            sent.last_frame = frame_seq
            sent.frames.append(frame_seq)
            if refs:
                if staged is None:
                    staged = {id(p) for p in map(payload_of, events) if type(p) is ShmRef}
                sent.refs += refs
                sent.created += [ref for ref in refs if id(ref) not in staged]

    def _frame_call(self, marker: Marker, encoder: Encoder, sent: _Sent, data: list[bytes]) -> None:
        call = marker.call
        with self._lock:
            self._markers[call.token] = marker
            sent.tokens.add(call.token)
            if call.op in REPLAYED and call.token not in self._op_tokens:
                self._op_tokens.add(call.token)
                self._ops.append(call)
        data.append(encode_frame(encoder.encode(call)))

    # -- the link's receiver ----------------------------------------------------------------
    def on_ack(self, ack: Ack) -> None:
        """The host's handlers took every event frame up to ``ack.seq``."""
        if type(ack.dropped) is int and ack.dropped > 0:
            self.host_dropped += ack.dropped
        if ack.pinned:
            self.pools.pin(ack.pinned)  # before the batches they belong to are given back
        with self._lock:
            self._acked_frame = max(self._acked_frame, ack.seq)
            frames = self._frames
            for frame, counts in ack.taken:
                owner = frames.pop(frame, None)
                if owner is not None:
                    _add(owner.taken, counts)
        self._settle()

    def on_reply(self, reply: Reply) -> None:
        """The host ran an operation (or refused it, said once by the link)."""
        with self._lock:
            marker = self._markers.pop(reply.token, None)
            self._answered.add(reply.token)
        if marker is not None:
            marker.result = reply
            marker.done.set()
        self._settle()

    def on_release(self, release: Release) -> None:
        """The last reader on the host of each slot named is done (ADR 0077)."""
        self.pools.unpin(release.slots)

    def _settle(self) -> None:
        """Acknowledge, in order, every pipe batch whose frames were all acknowledged; give
        back their slots but those a host reader still holds."""
        done: list[_Sent] = []
        with self._lock:
            gen = self.link.losses
            sent = self._sent
            while sent:
                head = sent[0]
                if head.last_frame is not None and head.last_frame > self._acked_frame:
                    break
                if not head.tokens <= self._answered:
                    break
                self._answered -= head.tokens
                done.append(sent.popleft())
                _add(self.taken, head.taken)
                self._again_before.pop(head.seq, None)
        if not done:
            return
        # The pipe first (then no lost link makes them due again); lost before, they may go again:
        # their slots stay out of use, as after a death (ADR 0083: else a redelivery read reuse).
        self.pipe.ack(done[-1].seq)
        if self.link.losses != gen:
            return
        for each in done:
            self.pools.give_back(each.refs)

    # -- deaths, forks ----------------------------------------------------------------------
    def link_lost(self) -> None:
        """The host died: what was sent is the pipe's to send again. The slots the encoder made
        for it are not given back: a host that is still alive may have lent them to a handler
        (ADR 0077); the batches are encoded again into new slots."""
        with self._lock:
            self._sent = deque()
            self._unwritten, self._unwritten_bytes = [], 0  # the pipe sends them all again
            self._answered.clear()
            _add(self.taken_before, self.taken)  # the dead host's handlers took these for good
            self.taken = {}  # a batch acknowledged in part goes again: the next host counts it
            self._frames.clear()

    def _forget(self, sent: _Sent) -> None:
        """A write of ``sent`` failed: it goes again. Its encoder's slots stay out of use (the
        host may have read part of it and lent them, ADR 0077)."""
        with self._lock:
            if sent in self._sent:
                self._sent.remove(sent)
            for frame in sent.frames:
                self._frames.pop(frame, None)

    def replay(self) -> list[Call]:
        """The operations to replay on a new host, in the order they were sent."""
        with self._lock:
            return list(self._ops)

    def pending_markers(self) -> list[Marker]:
        """Operations sent and not answered (released when the client closes)."""
        with self._lock:
            return list(self._markers.values())

    def adopt_ops(self, ops: list[Call]) -> None:
        """A forked child's first host gets the parent's operations before its own."""
        with self._lock:
            self._ops = list(ops)
            self._op_tokens = {call.token for call in ops}
