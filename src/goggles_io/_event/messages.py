"""The messages of the host protocol, as attrs classes: what travels, not how it is encoded.

Apart from :mod:`goggles_io._event.codec` (msgpack, numpy, the cattrs converter) so that a
process can queue control messages (``attach``, ``flush``...) without paying for the codec's
imports: the socket client's ``attach`` returns before any of them is loaded (ADR 0025).
"""

from __future__ import annotations

from typing import Any, Union

import attrs

from goggles_io._event.rows import Row

__all__ = [
    "MAX_BATCH_EVENTS",
    "REPLAYED",
    "Ack",
    "Batch",
    "Call",
    "Hello",
    "Message",
    "Release",
    "Reply",
]

# The most events one batch message may claim; a decoder refuses a larger count before it builds
# anything (ADR 0062). What this package sends holds far fewer: a client batch 1,024, a broker
# entry 1,024, a lane's spool record ~4,300 (1 MiB at >= 320 bytes an event, and one list more).
MAX_BATCH_EVENTS = 8192
# The operations (``Call.op``) a new host replays, in order, to rebuild a client's handlers
# (after a host death, in a forked child, from a left-over folder).
REPLAYED = ("attach", "replace", "detach", "call")


@attrs.frozen
class Hello:
    """First message on a connection: who the client is."""

    pid: int
    protocol: int = 1


@attrs.frozen
class Batch:
    """A numbered batch of rows (:mod:`~goggles_io._event.rows`); the host acknowledges it once
    its handlers took every one.

    ``redelivered``: the client sent it before to a host that died without acknowledging it, so
    a handler may have handled part of it already (ADR 0030). ``producer`` and ``first``, when
    set, number the rows as they are sent: the producer's id and the first row's sequence in its
    stream, the next rows following it by one (ADR 0057); the rows read back hold them in their
    own slots. ``""``: the rows' own slots are sent.
    """

    seq: int
    rows: list[Row]
    redelivered: bool = False
    producer: str = ""
    first: int = 0


@attrs.frozen
class Ack:
    """Host -> client: every batch up to ``seq`` is delivered; ``dropped`` were refused by the bus.

    ``taken``: per batch acknowledged now (its ``seq``), the events of it each handler took, by
    handler name, so that a client whose host dies still counts what the dead host's handlers
    took (ADR 0057).
    """

    seq: int
    dropped: int = 0
    taken: list[tuple[int, dict[str, int]]] = attrs.field(factory=list)
    # Shared-memory slots (segment, offset) of these batches that a reader on the host still
    # holds: the client keeps each until a Release names it (ADR 0077).
    pinned: list[tuple[str, int]] = attrs.field(factory=list)


@attrs.frozen
class Call:
    """Client -> host: a bus operation (attach, detach, configure, flush, ...) to run there."""

    token: int
    op: str
    args: dict[str, Any]


@attrs.frozen
class Reply:
    """Host -> client: the outcome of the :class:`Call` with the same token."""

    token: int
    ok: bool
    result: Any = None


@attrs.frozen
class Release:
    """Host -> client: the last reader of each slot an :class:`Ack` pinned is done with it.

    Apart from the acknowledgement (ADR 0077): the host lends handlers read-only views of the
    producer's shared memory, and one that keeps an array holds its slot past the ack.
    """

    slots: list[tuple[str, int]]


for _cls in (Hello, Batch, Ack, Call, Reply, Release):
    attrs.resolve_types(_cls, globals(), locals())

Message = Union[Hello, Batch, Ack, Call, Reply, Release]  # noqa: UP007 (a runtime object on 3.10)
