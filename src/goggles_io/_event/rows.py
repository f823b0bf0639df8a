"""The one shape of an event in flight: a row, and the only ways into and out of it (ADR 0071).

While an event waits or travels (a pipe, a spool, a frame, a left-over folder, a stream entry,
a lane) it is a :data:`Row`: a flat tuple of the 15 slots below, atomic values wherever the event
allows (so the garbage collector stops tracking it at its first young collection and never
rescans or promotes it while it waits for an acknowledgement). An :class:`~.records.Event` is
built from rows by :func:`events_of` alone, where a handler or a live subscriber is about to read
it; an event given to the bus becomes a row by :func:`row_of` alone. Only this module indexes a
row: the others use the getters and the functions here.

=========  ===================================================================================
slot       holds
=========  ===================================================================================
kind       the :class:`~.records.Kind`'s string value (``"metric"``)
scope      ``str``
payload    the event's payload, or, when ``value`` is set, a one-value metric's name
level      ``int`` for ``LOG``, else ``None``
step       ``int`` or ``None``
timestamp  ``float``: when it was logged
logger     ``str``
pid        ``int``
filepath   ``str`` or ``None``
lineno     ``int`` or ``None``
extra      a ``dict``, or ``None`` for an empty one
time       ``float`` or ``None`` (robo-goggles' caller-given time)
value      ``None``, or a one-value metric's number: the payload is then ``{payload: value}``
producer   who numbered it (ADR 0057), ``""`` for not numbered
seq        its sequence in that producer's stream, ``0`` for not numbered
=========  ===================================================================================

A log call builds its row in this order itself (``_api/data.py``, ``_api/loggers.py``: a tuple
display, the hot path); ``tests/goggles_io/event/test_rows.py`` holds them to :func:`row_of`.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import attrs

from goggles_io._event.records import Event, Kind

__all__ = [
    "EVENT_OVERHEAD_BYTES",
    "KINDS",
    "METRIC_ENTRY_BYTES",
    "SLOTS",
    "SLOT_NAMES",
    "Row",
    "RowRun",
    "columns_of",
    "count_rows",
    "events_of",
    "is_row",
    "kind_of",
    "level_of",
    "logger_of",
    "metric_names",
    "nbytes",
    "payload_of",
    "pid_of",
    "row_of",
    "rows_nbytes",
    "rows_of",
    "run_length",
    "run_rows",
    "scope_of",
    "step_of",
    "timestamp_of",
    "with_payload",
]

Row = tuple[Any, ...]
"""An event in flight: the 15 slots of :data:`SLOT_NAMES`, in that order."""

SLOT_NAMES = (
    "kind",
    "scope",
    "payload",
    "level",
    "step",
    "timestamp",
    "logger",
    "pid",
    "filepath",
    "lineno",
    "extra",
    "time",
    "value",
    "producer",
    "seq",
)
SLOTS = len(SLOT_NAMES)
_PAYLOAD, _VALUE = SLOT_NAMES.index("payload"), SLOT_NAMES.index("value")

KINDS: dict[str, Kind] = {kind.value: kind for kind in Kind}
"""A row's kind to its :class:`Kind`, one dict lookup."""

_new = object.__new__
# The fields events_of sets, in Event's order: every one of them (checked here, at import).
_EVENT_FIELDS = ("kind", "scope", "payload", "level", "step", "timestamp", "logger", "pid",
                 "filepath", "lineno", "extra", "time", "producer", "seq")  # fmt: skip
if tuple(field.name for field in attrs.fields(Event)) != _EVENT_FIELDS:
    raise ImportError("rows.events_of sets Event's fields by name: update _EVENT_FIELDS with it")

EVENT_OVERHEAD_BYTES = 320  # an event in memory (its object or row, its extra) and a timestamp
METRIC_ENTRY_BYTES = 64  # one name -> number entry of a metric

# The slots others read, as C-level getters (routing, counting, staged arrays).
kind_of: Callable[[Row], str] = operator.itemgetter(0)
scope_of: Callable[[Row], str] = operator.itemgetter(1)
payload_of: Callable[[Row], Any] = operator.itemgetter(_PAYLOAD)
"""The payload slot: where an array staged at the log call is (a one-value metric's holds its
name, never an array)."""
level_of: Callable[[Row], int | None] = operator.itemgetter(3)
step_of: Callable[[Row], int | None] = operator.itemgetter(4)
timestamp_of: Callable[[Row], float] = operator.itemgetter(5)
logger_of: Callable[[Row], str] = operator.itemgetter(6)
pid_of: Callable[[Row], int] = operator.itemgetter(7)
_value_of: Callable[[Row], Any] = operator.itemgetter(_VALUE)

is_row: Callable[[object], bool] = tuple.__instancecheck__
"""Whether an item of a pipe is a row (one C call; ``True`` counts one, so ``units=is_row``
counts the rows of a list and nothing for the control items beside them)."""


class RowRun(list[Any]):
    """Rows laid end to end: the :data:`SLOTS` values of each row, one row after another.

    The socket client's scalar front (ADR 0088) gathers one-value metric rows this way: a log
    call adds its row's values to one list (the row tuple it built dies at once), so no object
    per event waits for the garbage collector to scan, and the sender takes a column with one
    slice. Anything that needs the rows themselves asks :func:`run_rows`.
    """

    __slots__ = ()


def run_length(run: RowRun) -> int:
    """How many rows ``run`` holds."""
    return len(run) // SLOTS


def run_rows(run: RowRun) -> list[Row]:
    """``run``'s rows as tuples, in order (the slow paths: an unencodable value, a split)."""
    return list(zip(*(run[i::SLOTS] for i in range(SLOTS)), strict=True))


def count_rows(items: list[Any]) -> int:
    """How many rows a pipe's ``items`` hold (one C pass; a :class:`RowRun` its rows, a
    control item none): a pipe's ``units``."""
    n = sum(map(is_row, items))
    if n != len(items):
        n += sum(len(item) // SLOTS for item in items if type(item) is RowRun)
    return n


def row_of(event: Event) -> Row:
    """``event`` as a row (its payload as it is; an empty ``extra`` as ``None``)."""
    kind = event.kind
    extra = event.extra
    if extra.__class__ is not dict:
        extra = dict(extra)
    return (
        kind.value if kind.__class__ is Kind else Kind(kind).value,
        event.scope,
        event.payload,
        event.level,
        event.step,
        event.timestamp,
        event.logger,
        event.pid,
        event.filepath,
        event.lineno,
        extra or None,
        event.time,
        None,
        event.producer,
        event.seq,
    )


def with_payload(row: Row, payload: Any) -> Row:
    """``row`` with ``payload`` in its payload slot (an array copied out of a pool)."""
    return (*row[:_PAYLOAD], payload, *row[_PAYLOAD + 1 :])


def metric_names(row: Row) -> tuple[str, ...] | None:
    """A metric's names (a one-value metric's one), or ``None`` for another payload."""
    payload = row[_PAYLOAD]
    if row[_VALUE] is not None:
        return (payload,)
    return tuple(payload) if payload.__class__ is dict else None


def events_of(rows: Iterable[Row]) -> list[Event]:
    """The :class:`Event` of each row, in order: each its own payload map (a one-value metric's)
    and ``extra`` map (an empty one's); a row's non-empty ``extra`` and its payload are shared.

    ``rows`` may be ``zip(*columns)`` (a broker consumer's read, ADR 0086): ``zip`` reuses its
    tuple once the loop below has unpacked it, so no row is kept, or even allocated, per event.

    Each event is made by ``object.__new__`` and its slots set here: what attrs' ``__init__``
    does for these fields (no defaults, validators or converters apply), without the call into
    it from C (0.18 against 0.25 us an event; ADR 0076). :data:`_EVENT_FIELDS` is checked against
    the class at import, so a field added to :class:`Event` cannot be left unset.

    Raises:
        Exception: a row of another shape or an unknown kind (``ValueError``, ``KeyError``...);
            the caller may build the rest one at a time.
    """
    kinds = KINDS
    new = _new
    cls = Event
    out: list[Event] = []
    append = out.append
    for (kind, scope, payload, level, step, ts, logger, pid,
         path, line, extra, when, value, producer, seq) in rows:  # fmt: skip
        event = new(cls)
        event.kind = kinds[kind]
        event.scope = scope
        event.payload = payload if value is None else {payload: value}
        event.level = level
        event.step = step
        event.timestamp = ts
        event.logger = logger
        event.pid = pid
        event.filepath = path
        event.lineno = line
        event.extra = extra or {}
        event.time = when
        event.producer = producer
        event.seq = seq
        append(event)
    return out


def nbytes(row: Row) -> int:
    """What ``row`` holds in memory, roughly, for byte budgets: cheap, never below its arrays.

    Arrays and bytes count their length, text its length, a metric 64 bytes a value.
    """
    if row[_VALUE] is not None:
        return EVENT_OVERHEAD_BYTES + METRIC_ENTRY_BYTES
    payload = row[_PAYLOAD]
    kind = payload.__class__
    if kind is dict:
        return EVENT_OVERHEAD_BYTES + METRIC_ENTRY_BYTES * len(payload)
    if kind is str or kind is bytes:
        return EVENT_OVERHEAD_BYTES + len(payload)
    if getattr(payload, "shm_resident", False):
        return EVENT_OVERHEAD_BYTES + 64  # the array lives in shared memory, in the pool's budget
    size = getattr(payload, "nbytes", None)
    if type(size) is int:
        return EVENT_OVERHEAD_BYTES + size
    return EVENT_OVERHEAD_BYTES + 256


def rows_nbytes(rows: Sequence[Row]) -> int:
    """``sum(map(nbytes, rows))``, without a Python call per row when every row is a one-value
    metric (the host's hot case: a client batch of scalars)."""
    if None not in map(_value_of, rows):
        return (EVENT_OVERHEAD_BYTES + METRIC_ENTRY_BYTES) * len(rows)
    return sum(map(nbytes, rows))


def columns_of(rows: Sequence[Row]) -> list[Sequence[Any]]:
    """The rows' slots as :data:`SLOTS` columns (tuples; lists of a :class:`RowRun`), one per
    slot, in slot order.

    One C pass (``zip``): measured 0.05 against 0.12 us a row for flattening the rows and
    slicing the flat list (the iterators it holds while it runs are one per row of a batch of
    at most 1024).

    Raises:
        ValueError: a row of another shape.
    """
    if type(rows) is RowRun:  # laid end to end: a column is one slice
        return [rows[i::SLOTS] for i in range(SLOTS)]
    if not rows:
        return [() for _ in range(SLOTS)]
    columns: list[Sequence[Any]] = list(zip(*rows, strict=True))
    if len(columns) != SLOTS:
        raise ValueError(f"a row has {SLOTS} slots")
    return columns


def rows_of(columns: Sequence[Iterable[Any]]) -> list[Row]:
    """The rows whose slots are ``columns`` (:data:`SLOTS` iterables of one length, in slot
    order: lists, or a value repeated)."""
    return list(zip(*columns, strict=True))
