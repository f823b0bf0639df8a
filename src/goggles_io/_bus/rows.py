"""A logger's scalar rows on the in-process bus: the handler's ``Event`` is built on its lane.

``logger.scalar`` hands the in-process bus what it hands the socket client
(:data:`~goggles_io._event.records.Row`: a tuple of atomic values, which the garbage collector
stops tracking at its first young collection), so the caller's thread builds no ``Event`` and
no payload dict, and a queued scalar is never rescanned or promoted while it waits. Each lane's
worker turns the row into the same ``Event`` the logger used to build, field for field.
"""

from __future__ import annotations

from goggles_io._event.records import SCALAR_ROW_LEN, Event, Kind, Row, row_event

__all__ = ["KINDS", "row_to_event"]

KINDS = {kind.value: kind for kind in Kind}  # a row's kind string -> its Kind, by one dict lookup


def row_to_event(row: Row) -> Event:
    """The :class:`Event` a row stands for (a scalar's row: its name and value as the payload)."""
    if len(row) != SCALAR_ROW_LEN:
        return row_event(row)
    kind, scope, name, level, step, ts, logger, pid, filepath, lineno, extra, when, value = row
    return Event(
        KINDS[kind],
        scope,
        {name: value},
        level,
        step,
        ts,
        logger,
        pid,
        filepath,
        lineno,
        extra or {},
        when,
    )
