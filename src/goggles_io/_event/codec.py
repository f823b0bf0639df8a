"""The wire codec: a cattrs converter on msgpack, messages as a tagged union, arrays as ext types.

No pickle anywhere: msgpack only yields builtins, and the one extension decoder we install builds
numpy arrays of plain numeric/string dtypes from raw bytes. Object and structured dtypes are
refused, so a hostile frame can at worst raise :class:`FrameError`, never run code.

Encoding by type (see ADR 0009):

* a message is ``[tag, fields...]`` where ``tag`` names one class of :data:`Message`;
* a :class:`Batch` is ``[seq, n, column...]``: one column per :class:`~goggles_io._event.records.Event`
  field, sent as one bare value when all ``n`` events share it (ADR 0013); a client batch of
  scalar rows goes as tag 5, names and values in columns of their own, and is read back as a
  :class:`Batch` (:mod:`~goggles_io._event.scalar_columns`, ADR 0051);
* ``numpy.ndarray`` below the shared-memory threshold is ext 1 (dtype, shape, raw bytes), at or
  above it ext 2 (a :class:`ShmRef`: segment, offset, nbytes, dtype, shape); numpy scalars are
  ext 3. Tuples decode as lists (msgpack has one array type).
"""

from __future__ import annotations

import itertools
import operator
import struct
from collections.abc import Callable
from typing import Any

import msgpack
import numpy as np
from cattrs import UnstructureStrategy
from cattrs.preconf.msgpack import make_converter

from goggles_io._event.batch_tail import batch_tail, read_batch_tail
from goggles_io._event.messages import (
    MAX_BATCH_EVENTS,
    Ack,
    Batch,
    Call,
    Hello,
    Message,
    OutBatch,
    Reply,
)
from goggles_io._event.records import (
    SCALAR_ROW_LEN,
    ArrayPool,
    ArrayReader,
    Event,
    Kind,
    ShmRef,
    event_fields,
)
from goggles_io._event.scalar_columns import (
    SCALARS_TAG,
    scalar_columns_body,
    structure_scalar_columns,
)
from goggles_io.exceptions import FrameError

__all__ = [
    "Ack",
    "Batch",
    "Call",
    "Decoder",
    "Encoder",
    "Hello",
    "Message",
    "OutBatch",
    "Reply",
    "make_wire_converter",
]

_EXT_INLINE = 1
_EXT_SHM = 2
_EXT_SCALAR = 3
_ALLOWED_KINDS = frozenset("biufcSUmM")
_MAX_NDIM = 32
_U16 = struct.Struct(">H")
_KEEP_PACKER_BYTES = 1 << 20
_KINDS = {k.value: k for k in Kind}


_TAGS: dict[type, int] = {Hello: 0, Batch: 1, Ack: 2, Call: 3, Reply: 4}
_CLASSES: dict[int, type] = {v: k for k, v in _TAGS.items()}


def _structure_event(t: Any, _: Any) -> Event:
    kind, scope, payload, level, step, ts, logger, pid, filepath, lineno, extra, when = t
    if not isinstance(extra, dict):
        msg = f"event extra must be a map (got {type(extra).__name__!r})"
        raise FrameError(msg, value=extra)
    return Event(
        kind=_KINDS[kind],
        scope=scope if type(scope) is str else str(scope),
        payload=payload,
        level=None if level is None else int(level),
        step=None if step is None else int(step),
        timestamp=float(ts),
        logger=str(logger),
        pid=int(pid),
        filepath=None if filepath is None else str(filepath),
        lineno=None if lineno is None else int(lineno),
        extra=extra,
        time=None if when is None else float(when),
    )


# -- Batch: columns, not rows (ADR 0013) -------------------------------------------------------
# A batch body is ``[seq, n, kind, scope, payload, level, step, timestamp, logger, pid,
# filepath, lineno, extra, time]``, then ``true`` when the batch is redelivered. Each column is
# a list of ``n`` values, except that the columns in _FOLDABLE are sent as one bare value when
# every event shares it (they are str / int / None, so a bare value is never a list). Events
# from one logger share most of them: half the bytes, and the host builds fewer objects.
_GET = operator.attrgetter
_COLUMNS = (
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
)
_GETTERS = tuple(_GET(name) for name in _COLUMNS)
_PAYLOAD_COLUMN = _COLUMNS.index("payload")
_EXTRA_COLUMN = _COLUMNS.index("extra")
_FOLDABLE = frozenset({"kind", "scope", "level", "logger", "pid", "filepath", "lineno", "time"})
_FOLD_TYPES = (str, int, type(None), Kind)
_NONE = type(None)
# Exact types accepted without conversion, and the conversion applied to anything else.
_CHECKS: dict[str, tuple[frozenset[type], Callable[[Any], Any] | None]] = {
    "scope": (frozenset({str}), str),
    "payload": (frozenset(), None),
    "level": (frozenset({int, _NONE}), lambda v: None if v is None else int(v)),
    "step": (frozenset({int, _NONE}), lambda v: None if v is None else int(v)),
    "timestamp": (frozenset({float}), float),
    "logger": (frozenset({str}), str),
    "pid": (frozenset({int}), int),
    "filepath": (frozenset({str, _NONE}), lambda v: None if v is None else str(v)),
    "lineno": (frozenset({int, _NONE}), lambda v: None if v is None else int(v)),
    "extra": (frozenset({dict}), None),
    "time": (frozenset({float, _NONE}), lambda v: None if v is None else float(v)),
}


def _columns(events: list[Any]) -> Any:
    """The batch's columns: one ``zip`` over scalar rows (the client's queued scalars, see
    ``records.Row``), one ``map`` per field over events; a mix becomes event fields first."""
    types = set(map(type, events))
    if tuple not in types:
        return (list(map(getter, events)) for getter in _GETTERS)
    if types == {tuple} and set(map(len, events)) == {SCALAR_ROW_LEN}:
        cols: list[Any] = list(zip(*events, strict=True))
        values = cols.pop()
        cols[_PAYLOAD_COLUMN] = [{n: v} for n, v in zip(cols[_PAYLOAD_COLUMN], values, strict=True)]
    else:
        cols = list(zip(*map(event_fields, events), strict=True))
    extras = cols[_EXTRA_COLUMN]
    if None in extras:  # a row's empty extra
        cols[_EXTRA_COLUMN] = [{} if e is None else e for e in extras]
    return cols


def _unstructure_batch(b: Batch | OutBatch) -> list[Any]:
    events = b.events
    n = len(events)
    body: list[Any] = [b.seq, n]
    for name, col in zip(_COLUMNS, _columns(events), strict=True):
        if name in _FOLDABLE and n:
            first = col[0]
            # ``==`` folds 1 with True and 1.0: demand one exact type as well.
            if (
                type(first) in _FOLD_TYPES
                and col.count(first) == n
                and list(map(type, col)).count(type(first)) == n
            ):
                body.append(first)
                continue
        body.append(col)
    body += batch_tail(b.redelivered, b.producer, b.first)  # nothing for an ordinary batch
    return body


def _bad(msg: str, value: Any) -> FrameError:
    return FrameError(msg, value=value)


def _column(name: str, col: Any, n: int) -> Any:
    """Return an iterable of ``n`` checked values for column ``name`` (a list or a bare value)."""
    allowed, convert = _CHECKS[name]
    if type(col) is list:
        if len(col) != n:
            raise _bad(f"batch column {name!r} has {len(col)!r} values for {n!r} events", name)
        if allowed and not set(map(type, col)) <= allowed:
            if convert is None:
                raise _bad(f"batch column {name!r} holds a value of the wrong type", name)
            col = [v if type(v) in allowed else convert(v) for v in col]
        return col
    if name not in _FOLDABLE:
        raise _bad(f"batch column {name!r} must be a list (got {type(col).__name__!r})", name)
    if type(col) not in allowed and convert is not None:
        col = convert(col)
    return itertools.repeat(col, n)


def _structure_batch(t: Any, _: Any) -> Batch:
    if type(t) is not list or not 2 + len(_COLUMNS) <= len(t) <= 4 + len(_COLUMNS):
        raise _bad(f"batch must be [seq, n, {len(_COLUMNS)} columns] (got {t!r:.80})", t)
    redelivered, producer, first = read_batch_tail(t, 2 + len(_COLUMNS))
    seq, n, kind, *rest = t[: 2 + len(_COLUMNS)]
    if type(seq) is not int or type(n) is not int or n < 0:
        raise _bad(f"batch seq and count must be ints (got {seq!r}, {n!r})", t)
    if n > MAX_BATCH_EVENTS:  # before anything is built (ADR 0062)
        raise _bad(f"batch of {n!r} events: a batch holds at most {MAX_BATCH_EVENTS}", n)
    if type(kind) is list:
        if len(kind) != n:
            raise _bad(f"batch column 'kind' has {len(kind)!r} values for {n!r} events", kind)
        kinds: Any = [_KINDS[k] for k in kind]
    else:
        kinds = itertools.repeat(_KINDS[kind], n)
    cols = [_column(name, col, n) for name, col in zip(_COLUMNS[1:], rest, strict=True)]
    # Positional construction: the host's hot path, twice as fast as keywords; ``map`` calls
    # Event without a tuple per event. Every list column has ``n`` values (checked above) and
    # ``payload`` always is one, so it stops at ``n``.
    if producer:  # each event stamped with its sequence in the producer's stream (ADR 0057)
        cols += [itertools.repeat(producer, n), range(first, first + n)]
    events = list(map(Event, kinds, *cols))
    return Batch(seq, events, redelivered, producer, first)


def _unstructure_event(e: Event) -> tuple[Any, ...]:
    return (e.kind.value, *(getter(e) for getter in _GETTERS[1:]))


def make_wire_converter() -> Any:
    """Build the msgpack converter: attrs messages as tuples, events through fast explicit hooks."""
    conv = make_converter(unstruct_strat=UnstructureStrategy.AS_TUPLE)
    conv.register_unstructure_hook(Event, _unstructure_event)
    conv.register_structure_hook(Event, _structure_event)
    conv.register_structure_hook(Any, lambda v, _: v)
    # Batches carry thousands of events: columns built with C-level map() (ADR 0013).
    conv.register_unstructure_hook(Batch, _unstructure_batch)
    conv.register_structure_hook(Batch, _structure_batch)
    return conv


_CONVERTER = make_wire_converter()
_UNSTRUCTURE: dict[type, Callable[[Any], Any]] = {
    cls: _CONVERTER.get_unstructure_hook(cls) for cls in _TAGS
}
# Sent as a Batch, read back as one (decoding goes by _CLASSES, which it is not in).
_TAGS[OutBatch] = _TAGS[Batch]
_UNSTRUCTURE[OutBatch] = _unstructure_batch
_STRUCTURE: dict[int, Callable[[Any, Any], Any]] = {
    tag: _CONVERTER.get_structure_hook(cls) for tag, cls in _CLASSES.items()
}
# A batch of scalar rows as names and values (ADR 0051), read back as a Batch.
_STRUCTURE[SCALARS_TAG] = structure_scalar_columns
_CLASSES[SCALARS_TAG] = Batch


def _array_bytes(a: np.ndarray) -> bytes:
    header: bytes = msgpack.packb((a.dtype.str, a.shape))
    return _U16.pack(len(header)) + header + a.tobytes()


def _checked_dtype(spec: Any) -> np.dtype[Any]:
    if not isinstance(spec, str) or len(spec) > 16:
        msg = f"array dtype must be a short string (got {spec!r})"
        raise FrameError(msg, value=spec)
    try:
        dtype = np.dtype(spec)
    except (TypeError, ValueError) as exc:
        msg = f"array dtype {spec!r} is not a numpy dtype: {exc}"
        raise FrameError(msg, value=spec) from None
    if dtype.kind not in _ALLOWED_KINDS or dtype.hasobject:
        msg = (
            f"array dtype {spec!r} is not allowed on the wire (object/structured dtypes never are)"
        )
        raise FrameError(msg, value=spec)
    return dtype


def _checked_shape(shape: Any) -> tuple[int, ...]:
    if not isinstance(shape, list) or len(shape) > _MAX_NDIM:
        msg = f"array shape must be a list of at most {_MAX_NDIM} ints (got {shape!r})"
        raise FrameError(msg, value=shape)
    if not all(type(d) is int and 0 <= d < 2**40 for d in shape):
        msg = f"array shape must hold non-negative ints (got {shape!r})"
        raise FrameError(msg, value=shape)
    return tuple(shape)


def _array_from(data: bytes, scalar: bool) -> Any:
    if len(data) < 2:
        msg = f"array extension too short ({len(data)!r} bytes)"
        raise FrameError(msg, value=len(data))
    (hlen,) = _U16.unpack_from(data)
    header = msgpack.unpackb(data[2 : 2 + hlen])
    if not isinstance(header, list) or len(header) != 2:
        msg = f"array header must be [dtype, shape] (got {header!r})"
        raise FrameError(msg, value=header)
    dtype = _checked_dtype(header[0])
    shape = _checked_shape(header[1])
    raw = memoryview(data)[2 + hlen :]
    count = 1
    for d in shape:
        count *= d
    if count * dtype.itemsize != len(raw) or (dtype.itemsize == 0 and len(raw)):
        msg = f"array of dtype {dtype.str!r} and shape {shape!r} does not match {len(raw)!r} bytes"
        raise FrameError(msg, value=len(raw))
    arr = np.frombuffer(raw, dtype=dtype, count=count).reshape(shape)
    return arr[()] if scalar else arr


class Encoder:
    """Encode messages for one connection; big arrays go to ``pool`` when one is given."""

    def __init__(self, shm_threshold: int = 1 << 62, pool: ArrayPool | None = None) -> None:
        self.shm_threshold = shm_threshold
        self.pool = pool
        self.refs: list[ShmRef] = []  # slots used by the message being encoded
        self.created: list[ShmRef] = []  # of those, the ones this encoder put in the pool
        self.shm_full = 0
        self._packer = msgpack.Packer(default=self._default, use_bin_type=True, autoreset=True)

    def _default(self, obj: Any) -> Any:
        if isinstance(obj, np.ndarray):
            if obj.dtype.kind not in _ALLOWED_KINDS:
                msg = f"numpy arrays of dtype {obj.dtype.str!r} cannot cross a process boundary"
                raise TypeError(msg)
            if self.pool is not None and obj.nbytes >= self.shm_threshold:
                ref = self.pool.put(obj)
                if ref is not None:
                    self.refs.append(ref)
                    self.created.append(ref)
                    return self._ref(ref)
                self.shm_full += 1
            return msgpack.ExtType(_EXT_INLINE, _array_bytes(obj))
        if isinstance(obj, ShmRef):
            self.refs.append(obj)
            return self._ref(obj)
        if isinstance(obj, np.generic):
            if obj.dtype.kind not in _ALLOWED_KINDS:
                msg = f"numpy scalars of dtype {obj.dtype.str!r} cannot cross a process boundary"
                raise TypeError(msg)
            return msgpack.ExtType(_EXT_SCALAR, _array_bytes(np.asarray(obj)))
        if isinstance(obj, Kind):
            return obj.value
        if isinstance(obj, (set, frozenset)):
            return sorted(obj, key=repr)
        msg = f"value of type {type(obj).__name__!r} cannot be sent to the host: {obj!r:.80}"
        raise TypeError(msg)

    @staticmethod
    def _ref(ref: ShmRef) -> msgpack.ExtType:
        body = msgpack.packb([ref.segment, ref.offset, ref.nbytes, ref.dtype, list(ref.shape)])
        return msgpack.ExtType(_EXT_SHM, body)

    def encode(self, message: Message | OutBatch) -> bytes:
        """Return the msgpack bytes of ``message``; raises TypeError for unencodable payloads."""
        cls = type(message)
        body = None
        if cls is OutBatch:  # the client's batch: scalar rows go as names and values
            b: OutBatch = message  # type: ignore[assignment]
            body = scalar_columns_body(b.seq, b.events, b.redelivered, b.producer, b.first)
        if body is not None:
            out: bytes = self._packer.pack([SCALARS_TAG, body])
        else:
            out = self._packer.pack([_TAGS[cls], _UNSTRUCTURE[cls](message)])
        if len(out) > _KEEP_PACKER_BYTES:
            # The packer keeps its buffer as large as its largest message: start a small one.
            self._packer = msgpack.Packer(default=self._default, use_bin_type=True, autoreset=True)
        return out


class Decoder:
    """Decode messages from untrusted bytes; shared-memory arrays are copied out via ``shm``."""

    def __init__(self, shm: ArrayReader | None = None) -> None:
        self.shm = shm

    def _ext_hook(self, code: int, data: bytes) -> Any:
        if code == _EXT_INLINE or code == _EXT_SCALAR:
            return _array_from(data, scalar=code == _EXT_SCALAR)
        if code == _EXT_SHM:
            if self.shm is None:
                msg = "shared-memory array reference received where none is accepted"
                raise FrameError(msg, value=code)
            f = msgpack.unpackb(data)
            if not isinstance(f, list) or len(f) != 5:
                msg = f"shared-memory reference must have 5 fields (got {f!r})"
                raise FrameError(msg, value=f)
            dtype = _checked_dtype(f[3])
            shape = _checked_shape(f[4])
            if type(f[1]) is not int or type(f[2]) is not int:
                msg = f"shared-memory offset and size must be ints (got {f[1]!r}, {f[2]!r})"
                raise FrameError(msg, value=f)
            return self.shm.read(ShmRef(f[0], f[1], f[2], dtype.str, shape))
        msg = f"unknown msgpack extension type {code!r}"
        raise FrameError(msg, value=code)

    def decode(self, payload: bytes | memoryview) -> Message:
        """Return the message in ``payload`` or raise :class:`FrameError`; never anything else.

        Every count is checked before the events it claims are built (ADR 0062); what msgpack
        itself builds is bounded by the payload's length (a container or value takes a byte at
        least)."""
        try:
            raw = msgpack.unpackb(payload, ext_hook=self._ext_hook, raw=False)
            if not isinstance(raw, list) or len(raw) != 2 or type(raw[0]) is not int:
                msg = f"message must be [tag, body] (got {type(raw).__name__!r})"
                raise FrameError(msg, value=raw)
            hook = _STRUCTURE.get(raw[0])
            if hook is None:
                msg = f"unknown message tag {raw[0]!r}"
                raise FrameError(msg, value=raw[0])
            message: Message = hook(raw[1], _CLASSES[raw[0]])
            return message
        except FrameError:
            raise
        except RecursionError:
            msg = "message nested too deeply"
            raise FrameError(msg) from None
        except Exception as exc:  # any decoding failure of untrusted bytes is a bad frame
            msg = f"undecodable message: {type(exc).__name__}: {exc!s:.200}"
            raise FrameError(msg, value=bytes(payload[:64])) from None
