"""A batch of one-value metrics as columns of names and values (ADR 0051).

The socket client queues each scalar as a row of atomic values (:data:`records.Row`, the metric
name in ``payload`` and the value last). The general batch form (ADR 0013) turned every row
back into a ``{name: value}`` dict and an empty ``extra`` dict before packing: two dicts per
event in the producer's sender thread, most of its CPU and most of its young garbage
collections, on the same GIL as the application's log calls. This form packs the rows' own
columns instead, unchanged: a body is ``[seq, n, kind, scope, name, level, step, timestamp,
logger, pid, filepath, lineno, extra, time, value]``, then ``true`` when the batch is
redelivered. Any column is one bare value when all ``n`` rows share it with one exact type
(str, int, float or nil; never a map, so a bare value is never confused with a column); an
``extra`` of nil is the empty map. The host reads it back as the same :class:`Batch` of
:class:`Event` objects the general form gives.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from operator import countOf
from typing import Any

from goggles_io._event.batch_tail import batch_tail, read_batch_tail
from goggles_io._event.messages import MAX_BATCH_EVENTS, Batch
from goggles_io._event.records import SCALAR_ROW_LEN, Event, Kind
from goggles_io.exceptions import FrameError

__all__ = ["SCALARS_TAG", "scalar_columns_body", "structure_scalar_columns"]

SCALARS_TAG = 5  # the message tag of this form (a Batch is 1)

_NONE = type(None)
_FOLD_TYPES = frozenset({str, int, float, _NONE})
_BODY_LEN = 2 + SCALAR_ROW_LEN
_METRIC = Kind.METRIC.value  # the one kind a scalar row has
_ROW_LENS = {SCALAR_ROW_LEN}
_flatten = itertools.chain.from_iterable


def _folded(col: list[Any], n: int) -> Any:
    """``col``'s one value when every row holds it with the same exact type, else ``col``.

    ``==`` alone would fold 1 with 1.0 and True, and 0.0 with -0.0: floats equal to zero and
    mixed numbers stay columns (a str or nil equals only its own kind here)."""
    first = col[0]
    kind = type(first)
    if kind in _FOLD_TYPES:
        last = col[-1]
        # The common varying column (steps, timestamps) is decided by its last value.
        if (
            (last is first or (type(last) is kind and last == first))
            and col.count(first) == n
            and not (kind is float and first == 0.0)
            and (kind is str or kind is _NONE or countOf(map(type, col), kind) == n)
        ):
            return first
    return col


def scalar_columns_body(
    seq: int, rows: list[Any], redelivered: bool, producer: str = "", first: int = 0
) -> list[Any] | None:
    """The body of this form for ``rows``, or ``None`` unless they are all scalar rows
    (:data:`~goggles_io._event.records.Row`, :data:`SCALAR_ROW_LEN` long; an :class:`Event` has
    no length); the values are packed as the rows hold them.

    The rows are flattened into one list and each column is a strided slice of it: C-level
    passes that leave no object per row alive (``zip(*rows)`` held an iterator per row; the
    young collections they set off promoted them, and a full collection followed in every
    100k-scalar burst)."""
    try:
        if not rows or set(map(len, rows)) != _ROW_LENS:
            return None
    except TypeError:
        return None
    n = len(rows)
    flat = list(_flatten(rows))
    body: list[Any] = [seq, n]
    body += [_folded(flat[i::SCALAR_ROW_LEN], n) for i in range(SCALAR_ROW_LEN)]
    body += batch_tail(redelivered, producer, first)
    return body


def _bad(msg: str, value: Any) -> FrameError:
    return FrameError(msg, value=value)


def _to_int(v: Any) -> int | None:
    return None if v is None else int(v)


def _to_float(v: Any) -> float | None:
    return None if v is None else float(v)


def _to_str(v: Any) -> str | None:
    return None if v is None else str(v)


# Exact types taken as they are, and the conversion of anything else (None: refused).
_Spec = tuple[frozenset[type], Callable[[Any], Any] | None]
_SPECS: dict[str, _Spec] = {
    "scope": (frozenset({str}), str),
    "name": (frozenset({str}), None),
    "level": (frozenset({int, _NONE}), _to_int),
    "step": (frozenset({int, _NONE}), _to_int),
    "timestamp": (frozenset({float}), float),
    "logger": (frozenset({str}), str),
    "pid": (frozenset({int}), int),
    "filepath": (frozenset({str, _NONE}), _to_str),
    "lineno": (frozenset({int, _NONE}), _to_int),
    "time": (frozenset({float, _NONE}), _to_float),
    "value": (frozenset({int, float}), None),
}


def _column(name: str, col: Any, n: int) -> Iterable[Any]:
    """``n`` checked values of column ``name``: its list, or its one bare value repeated."""
    allowed, convert = _SPECS[name]
    if type(col) is list:
        values: list[Any] = col
        if len(values) != n:
            raise _bad(f"scalar column {name!r} has {len(values)!r} values for {n!r} rows", name)
        if not set(map(type, values)) <= allowed:
            if convert is None:
                raise _bad(f"scalar column {name!r} holds a value of the wrong type", name)
            values = [v if type(v) in allowed else convert(v) for v in values]
        return values
    if type(col) not in allowed:
        if convert is None:
            raise _bad(f"scalar column {name!r} holds a value of the wrong type", name)
        col = convert(col)
    return itertools.repeat(col, n)


def _kinds(col: Any, n: int) -> Iterable[Kind]:
    """``n`` metric kinds: a scalar row is a metric, so any other kind is refused."""
    if type(col) is list:
        if len(col) != n:
            raise _bad(f"scalar column 'kind' has {len(col)!r} values for {n!r} rows", col)
        if col.count(_METRIC) != n:
            raise _bad("scalar rows must be of kind 'metric'", col)
    elif col != _METRIC or type(col) is not str:
        raise _bad(f"scalar rows must be of kind 'metric' (got {col!r:.40})", col)
    return itertools.repeat(Kind.METRIC, n)


def _extras(col: Any, n: int) -> list[Any] | None:
    """The ``extra`` column checked: ``None`` when nil (every row's map is empty), else the
    list of ``n`` maps or nils."""
    if col is None:
        return None
    if type(col) is not list or len(col) != n:
        raise _bad(f"scalar column 'extra' must be nil or a list of {n!r} maps or nils", col)
    if not set(map(type, col)) <= {dict, _NONE}:
        raise _bad("scalar column 'extra' holds a value that is not a map", col)
    return col


def structure_scalar_columns(t: Any, _: Any) -> Batch:
    """The :class:`Batch` of events a body of this form stands for; :class:`FrameError` (or
    another exception the decoder turns into one) for anything malformed.

    Every count and column is checked before any event, payload or map is built (ADR 0062):
    at most :data:`MAX_BATCH_EVENTS` rows, every list column exactly ``n`` long, every value of
    its exact type, kind ``metric``."""
    if type(t) is not list or not _BODY_LEN <= len(t) <= _BODY_LEN + 2:
        raise _bad(f"scalar batch must be [seq, n, {SCALAR_ROW_LEN} columns] (got {t!r:.80})", t)
    redelivered, producer, first = read_batch_tail(t, _BODY_LEN)
    t = t[:_BODY_LEN]
    (
        seq,
        n,
        kind,
        scope,
        names,
        level,
        step,
        ts,
        logger,
        pid,
        filepath,
        lineno,
        extra,
        when,
        values,
    ) = t
    if type(seq) is not int or type(n) is not int or n < 0:
        raise _bad(f"batch seq and count must be ints (got {seq!r}, {n!r})", t)
    if n > MAX_BATCH_EVENTS:
        raise _bad(f"scalar batch of {n!r} rows: a batch holds at most {MAX_BATCH_EVENTS}", n)
    kinds = _kinds(kind, n)
    scopes = _column("scope", scope, n)
    names = _column("name", names, n)
    levels = _column("level", level, n)
    steps = _column("step", step, n)
    stamps = _column("timestamp", ts, n)
    loggers = _column("logger", logger, n)
    pids = _column("pid", pid, n)
    paths = _column("filepath", filepath, n)
    lines = _column("lineno", lineno, n)
    extras = _extras(extra, n)
    times = _column("time", when, n)
    values = _column("value", values, n)
    # Everything is checked; now build. Each event gets maps of its own; every column has ``n``
    # values (a bare value is repeated ``n`` times), so ``map`` stops at ``n``.
    payloads = [{k: v} for k, v in zip(names, values, strict=True)]
    own = [{} for _ in range(n)] if extras is None else [{} if e is None else e for e in extras]
    cols: list[Iterable[Any]] = [
        kinds, scopes, payloads, levels, steps, stamps, loggers, pids, paths, lines, own, times,
    ]  # fmt: skip
    if producer:  # each event stamped with its sequence in the producer's stream (ADR 0057)
        cols += [itertools.repeat(producer, n), range(first, first + n)]
    events = list(map(Event, *cols))  # positionally: the host's hot path
    return Batch(seq, events, redelivered, producer, first)
