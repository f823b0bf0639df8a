"""The one batch form: a batch of rows as columns, checked against one type table (ADR 0071).

A :class:`~.messages.Batch` body is ``[seq, n, kind, scope, payload, level, step, timestamp,
logger, pid, filepath, lineno, extra, time, value, producer, seq]``: one column per slot of a
row (:mod:`~goggles_io._event.rows`), then ``true`` when the batch is redelivered (ADR 0030).

* A column is a list of ``n`` values, or one bare value that all ``n`` rows hold with one exact
  type (str, int, float or nil; never a list, so the two cannot be confused). ``==`` alone is
  not enough: 1, 1.0 and True, and 0.0 and -0.0, stay columns. ``extra`` is nil when every
  row's is empty; each event later gets a map of its own.
* The ``seq`` column's bare value ``s`` stands for ``s, s+1, ...`` (a producer's batch, ADR
  0057); a bare 0 for rows nobody numbered.

The decoder trusts nothing (the host reads what any process of its user writes): it checks the
count against :data:`~.messages.MAX_BATCH_EVENTS` first, then every column's length and every
value's exact type (:data:`TYPES`, converting only what the table says), then that a row with a
``value`` is a metric named by a string, and only then builds the rows (ADR 0062).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from operator import countOf
from typing import Any

import attrs

from goggles_io._event.messages import MAX_BATCH_EVENTS, Batch
from goggles_io._event.rows import (
    KINDS,
    SLOT_NAMES,
    SLOTS,
    Row,
    RowRun,
    columns_of,
    rows_of,
    run_length,
)
from goggles_io.exceptions import FrameError

__all__ = [
    "MAX_PRODUCER_CHARS",
    "TYPES",
    "BatchColumns",
    "batch_body",
    "read_batch",
    "read_columns",
]

MAX_PRODUCER_CHARS = 128  # a producer id is short; a longer one is a bad frame
_MAX_SEQ = (1 << 63) - 1
_NONE = type(None)
_FOLD_TYPES = frozenset({str, int, float, _NONE})
_BODY = 2 + SLOTS
_KIND, _PAYLOAD, _EXTRA = SLOT_NAMES.index("kind"), SLOT_NAMES.index("payload"), 10
_SCOPE, _LEVEL = SLOT_NAMES.index("scope"), SLOT_NAMES.index("level")
_VALUE, _PRODUCER, _SEQ = SLOT_NAMES.index("value"), SLOTS - 2, SLOTS - 1
_METRIC = "metric"


def _to_int(v: Any) -> int | None:
    return None if v is None else int(v)


def _to_float(v: Any) -> float | None:
    return None if v is None else float(v)


def _to_str(v: Any) -> str | None:
    return None if v is None else str(v)


_Spec = tuple[frozenset[type] | None, Callable[[Any], Any] | None]
TYPES: dict[str, _Spec] = {
    "kind": (frozenset({str}), None),  # and one of Kind's values
    "scope": (frozenset({str}), str),
    "payload": (None, None),  # anything msgpack gives (a ``value`` row's: a str)
    "level": (frozenset({int, _NONE}), _to_int),
    "step": (frozenset({int, _NONE}), _to_int),
    "timestamp": (frozenset({float}), float),
    "logger": (frozenset({str}), str),
    "pid": (frozenset({int}), int),
    "filepath": (frozenset({str, _NONE}), _to_str),
    "lineno": (frozenset({int, _NONE}), _to_int),
    "extra": (frozenset({dict, _NONE}), None),
    "time": (frozenset({float, _NONE}), _to_float),
    "value": (frozenset({int, float, _NONE}), None),
    "producer": (frozenset({str}), None),  # at most MAX_PRODUCER_CHARS
    "seq": (frozenset({int}), None),  # 0 .. 2**63 - 1
}
"""Per slot: the exact types taken as they are (``None``: any), and the conversion of any other
value (``None``: refused). Conversions are the ones a user's own :class:`Event` may need (a
numpy int for a step); what a log call builds is always of the exact types."""


# -- encoding ---------------------------------------------------------------------------------
def _folded(col: Sequence[Any], n: int, *, exact: bool = False) -> Any:
    """``col``'s one value when every row holds it with the same exact type, else ``col``.

    ``==`` alone would fold 1 with 1.0 and True, and 0.0 with -0.0: floats equal to zero and
    mixed numbers stay columns, after a pass over the types. Text and nil need no such pass
    (unless ``exact``): what equals a str is a str (a subclass travels as the same msgpack
    str) and what equals None is None, so one ``count`` decides; a value whose ``==`` is not a
    truth value (an array) raises there and the column travels as it is. The payload column,
    where arrays live, is ``exact``: its types are compared before its values."""
    first = col[0]
    kind = type(first)
    if kind in _FOLD_TYPES:
        last = col[-1]
        # The common varying column (steps, timestamps) is decided by its last value.
        if type(last) is not kind or not (last is first or last == first):
            return col
        if not exact and (kind is str or kind is _NONE):
            try:
                return first if col.count(first) == n else col
            except Exception:  # an element whose ``==`` is no truth value
                return col
        if (
            countOf(map(type, col), kind) == n
            and col.count(first) == n
            and not (kind is float and first == 0.0)
        ):
            return first
    return col


def _seq_folded(col: Sequence[Any], n: int) -> Any:
    """The ``seq`` column: bare when the rows follow one another from a first above 0, or are
    all 0 (not numbered)."""
    first = col[0]
    if type(first) is not int or countOf(map(type, col), int) != n:
        return col
    if first == 0 and col.count(0) == n:
        return 0
    if first > 0 and col[-1] == first + n - 1 and list(col) == list(range(first, first + n)):
        return first
    return col


def batch_body(batch: Batch) -> list[Any]:
    """The body of ``batch``; its ``producer`` and ``first``, when set, number the rows (the
    producer's own numbering at send time, ADR 0057) in place of the rows' own slots.

    Raises:
        ValueError: a row of another shape.
    """
    rows = batch.rows
    n = run_length(rows) if type(rows) is RowRun else len(rows)
    body: list[Any] = [batch.seq, n]
    if not n:
        body += [[] for _ in range(SLOTS)]
    else:
        cols = columns_of(rows)
        body += [_folded(col, n, exact=at == _PAYLOAD) for at, col in enumerate(cols[:_PRODUCER])]
        if batch.producer:
            body += [batch.producer, batch.first]
        else:
            body += [_folded(cols[_PRODUCER], n), _seq_folded(cols[_SEQ], n)]
    if batch.redelivered:
        body.append(True)
    return body


# -- decoding ---------------------------------------------------------------------------------
def _bad(msg: str, value: Any) -> FrameError:
    return FrameError(msg, value=value)


def _column(name: str, col: Any, n: int) -> Iterable[Any]:
    """``n`` checked values of column ``name``: its list, or its one bare value repeated."""
    allowed, convert = TYPES[name]
    if type(col) is list:
        values: list[Any] = col
        if len(values) != n:
            raise _bad(f"batch column {name!r} has {len(values)!r} values for {n!r} events", name)
        if allowed is not None and not set(map(type, values)) <= allowed:
            if convert is None:
                raise _bad(f"batch column {name!r} holds a value of the wrong type", name)
            values = [v if type(v) in allowed else convert(v) for v in values]
        return values
    if type(col) not in _FOLD_TYPES:
        raise _bad(f"batch column {name!r} must be a list or one plain value", name)
    if allowed is not None and type(col) not in allowed:
        if convert is None:
            raise _bad(f"batch column {name!r} holds a value of the wrong type", name)
        col = convert(col)
    return itertools.repeat(col, n)


def _kinds(col: Any, n: int) -> Iterable[str]:
    kinds = _column("kind", col, n)
    if type(col) is list:
        if not set(col) <= KINDS.keys():
            raise _bad(f"batch column 'kind' holds an unknown kind (got {col!r:.60})", col)
    elif col not in KINDS:
        raise _bad(f"unknown event kind {col!r:.40}", col)
    return kinds


def _producers(col: Any, n: int) -> Iterable[str]:
    producers = _column("producer", col, n)
    longest = len(col) if type(col) is str else max(map(len, col), default=0)
    if longest > MAX_PRODUCER_CHARS:
        raise _bad(f"a producer id holds at most {MAX_PRODUCER_CHARS} characters", longest)
    return producers


def _seqs(col: Any, n: int) -> Iterable[int]:
    if type(col) is int:
        if not 0 <= col <= _MAX_SEQ - n:
            raise _bad(f"batch sequence {col!r} out of range", col)
        return itertools.repeat(0, n) if col == 0 else range(col, col + n)
    seqs = _column("seq", col, n)
    if n and (min(col) < 0 or max(col) > _MAX_SEQ):
        raise _bad("batch column 'seq' holds a sequence out of range", col)
    return seqs


def _extras(col: Any, n: int) -> Iterable[Any]:
    if col is None:
        return itertools.repeat(None, n)
    if type(col) is not list:
        raise _bad(f"batch column 'extra' must be nil or a list of {n!r} maps or nils", col)
    return _column("extra", col, n)


def _scalars_named(kinds: Any, payloads: Any, values: Any, n: int) -> None:
    """A row with a ``value`` is a one-value metric named by a string (ADR 0062: numbers for an
    ``image``'s payload were acknowledged, then a sink raised). Reads the columns as sent."""
    if values is None or not n:
        return
    if type(values) is list:
        nones = values.count(None)
        if nones == n:
            return
        if nones:  # a batch mixing one-value metrics and other events: row by row
            kind_at = kinds if type(kinds) is list else itertools.repeat(kinds, n)
            name_at = payloads if type(payloads) is list else itertools.repeat(payloads, n)
            if any(
                v is not None and (k != _METRIC or type(p) is not str)
                for k, p, v in zip(kind_at, name_at, values, strict=False)
            ):
                raise _bad("a row with a value must be a metric named by a string", values)
            return
    metrics = kinds.count(_METRIC) == n if type(kinds) is list else kinds == _METRIC
    named = (
        countOf(map(type, payloads), str) == n if type(payloads) is list else type(payloads) is str
    )
    if not (metrics and named):
        raise _bad("rows with a value must be metrics named by strings", values)


@attrs.frozen
class BatchColumns:
    """A batch body's checked columns, before any row is built (ADR 0086).

    ``columns``: :data:`~.rows.SLOTS` iterables of ``n`` values each, in slot order, each to be
    iterated once (a bare value is an ``itertools.repeat``): :func:`~.rows.rows_of` makes them
    rows, ``events_of(zip(*columns))`` events straight away. ``uniform``: ``(scope, kind,
    level)`` when every row shares them, each sent as one bare value of its exact type (a
    batch from one logger, the common case), else ``None``.
    """

    seq: int
    n: int
    columns: list[Iterable[Any]]
    redelivered: bool = False
    uniform: tuple[str, str, int | None] | None = None


def read_columns(t: Any) -> BatchColumns:
    """The checked columns of a batch body; :class:`FrameError` (or another exception the
    decoder turns into one) for anything malformed. Every count and column is checked here:
    the rows or events built from the columns need no check more."""
    if type(t) is not list or not _BODY <= len(t) <= _BODY + 1:
        raise _bad(f"batch must be [seq, n, {SLOTS} columns] (got {t!r:.80})", t)
    redelivered = False
    if len(t) > _BODY:
        if t[_BODY] is not True:
            raise _bad(f"a batch's tail must be true (got {t[_BODY]!r:.40})", t[_BODY])
        redelivered = True
    seq, n = t[0], t[1]
    if type(seq) is not int or type(n) is not int or n < 0:
        raise _bad(f"batch seq and count must be ints (got {seq!r}, {n!r})", t)
    if n > MAX_BATCH_EVENTS:  # before anything is built (ADR 0062)
        raise _bad(f"batch of {n!r} rows: a batch holds at most {MAX_BATCH_EVENTS}", n)
    raw = t[2:_BODY]
    _scalars_named(raw[_KIND], raw[_PAYLOAD], raw[_VALUE], n)
    cols: list[Iterable[Any]] = []
    for at, (name, col) in enumerate(zip(SLOT_NAMES, raw, strict=True)):
        if at == _KIND:
            cols.append(_kinds(col, n))
        elif at == _EXTRA:
            cols.append(_extras(col, n))
        elif at == _PRODUCER:
            cols.append(_producers(col, n))
        elif at == _SEQ:
            cols.append(_seqs(col, n))
        else:
            cols.append(_column(name, col, n))
    scope, kind, level = raw[_SCOPE], raw[_KIND], raw[_LEVEL]
    uniform = None
    if type(scope) is str and type(kind) is str and (level is None or type(level) is int):
        uniform = (scope, kind, level)
    return BatchColumns(seq, n, cols, redelivered, uniform)


def read_batch(t: Any) -> Batch:
    """The :class:`Batch` a body stands for; :class:`FrameError` (or another exception the
    decoder turns into one) for anything malformed. Every count and column is checked before
    any row is built."""
    found = read_columns(t)
    rows: list[Row] = rows_of(found.columns) if found.n else []
    return Batch(found.seq, rows, found.redelivered)
