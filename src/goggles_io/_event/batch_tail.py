"""The optional tail of a batch body: the redelivered mark, then who sent it and from where.

Both batch forms (columns of events, ADR 0013; names and values, ADR 0051) end the same way:
``true`` when the batch is redelivered (ADR 0030), then ``[producer, first]`` when the client
numbered its events (ADR 0057): the producer's id and the first event's sequence in its
stream, the next events following it by one. A body without them is what it was before.
"""

from __future__ import annotations

from typing import Any

from goggles_io.exceptions import FrameError

__all__ = ["MAX_PRODUCER_CHARS", "batch_tail", "read_batch_tail"]

MAX_PRODUCER_CHARS = 128  # a producer id is short; a longer one is a bad frame
_MAX_SEQ = (1 << 63) - 1


def batch_tail(redelivered: bool, producer: str, first: int) -> list[Any]:
    """What follows a batch body's columns."""
    tail: list[Any] = [True] if redelivered else []
    if producer:
        tail.append([producer, first])
    return tail


def read_batch_tail(t: list[Any], core: int) -> tuple[bool, str, int]:
    """``(redelivered, producer, first)`` of body ``t`` whose columns end at index ``core``.

    Raises:
        FrameError: the tail is not one of the forms :func:`batch_tail` writes.
    """
    tail = t[core:]
    redelivered, producer, first = False, "", 0
    if tail and tail[0] is True:
        redelivered = True
        tail = tail[1:]
    if tail:
        origin = tail[0]
        if (
            len(tail) != 1
            or type(origin) is not list
            or len(origin) != 2
            or type(origin[0]) is not str
            or not 0 < len(origin[0]) <= MAX_PRODUCER_CHARS
            or type(origin[1]) is not int
            or not 0 < origin[1] <= _MAX_SEQ
        ):
            msg = f"a batch's tail must be [true] and/or [producer, first] (got {tail!r:.80})"
            raise FrameError(msg, value=tail)
        producer, first = origin
    return redelivered, producer, first
