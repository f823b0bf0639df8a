"""A consumer's read, handed to its handlers: events built straight from the entries' columns.

Why (ADR 0086): a read's entries arrive as checked columns (:meth:`Decoder.decode_columns`).
When every entry of the read shares one scope, kind and level (one logger's events, the common
case), the read's events are built from the columns with no row between
(``events_of(zip(*columns))``) and go to each matching handler as one list
(:meth:`EventBus.hand_events`). Any other read is made rows and routed row by row
(:meth:`EventBus.put_rows`), as before. Either way each handler is called once for the read:
an entry is recorded and acknowledged only after that call returned (ADR 0079).

The collector is paused while the read's events or rows are built and handled (ADR 0085), and
they are let go before the pause ends, so no collection ever traverses or promotes them.
"""

from __future__ import annotations

from collections.abc import Sequence

from goggles_io._bus.bus import EventBus
from goggles_io._event.columns import BatchColumns
from goggles_io._event.records import Event
from goggles_io._event.rows import Row, events_of, rows_of
from goggles_io._util.collector import collector_paused

__all__ = ["hand_read"]


def hand_read(bus: EventBus, batches: Sequence[BatchColumns]) -> list[int]:
    """Hand the events of ``batches`` (a read's fresh entries, in stream order) to ``bus``'s
    handlers, each handler called once. Returns the indices of the batches whose events could
    not be built (checked columns always make them: a safety net), which were not handed: the
    caller skips those entries as malformed. Each batch's columns are iterated once, here."""
    bad: list[int] = []
    with collector_paused():  # a read's events live together until handled (ADR 0085)
        keys = {batch.uniform for batch in batches if batch.n}
        if len(keys) == 1 and None not in keys:
            scope, kind, level = next(iter(keys))  # type: ignore[misc]
            events: list[Event] = []
            for at, batch in enumerate(batches):
                try:
                    events += events_of(zip(*batch.columns, strict=True))
                except Exception:
                    bad.append(at)
            bus.hand_events(events, scope, kind, level)
            del events  # freed while the collector is still paused
        else:
            rows: list[Row] = []
            for at, batch in enumerate(batches):
                try:
                    rows += rows_of(batch.columns)
                except Exception:
                    bad.append(at)
            if rows:
                bus.put_rows(rows)
            del rows
    return bad
