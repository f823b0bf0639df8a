"""The wire codec: messages as msgpack ``[tag, body]``, arrays as extension types; no pickle.

No pickle anywhere: msgpack only yields builtins, and the one extension decoder we install builds
numpy arrays of plain numeric/string dtypes from raw bytes. Object and structured dtypes are
refused, so a hostile frame can at worst raise :class:`FrameError`, never run code.

Encoding by type (see ADR 0009):

* a message is ``[tag, body]`` where ``tag`` names one class of :data:`Message`; ``Hello``,
  ``Ack``, ``Call`` and ``Reply`` bodies are their fields in order (a cattrs converter);
* a :class:`Batch` body is its rows as columns, the one batch form
  (:mod:`~goggles_io._event.columns`, ADR 0071);
* ``numpy.ndarray`` below the shared-memory threshold is ext 1 (dtype, shape, raw bytes), at or
  above it ext 2 (a :class:`ShmRef`: segment, offset, nbytes, dtype, shape); numpy scalars are
  ext 3. Tuples decode as lists (msgpack has one array type).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import msgpack
import numpy as np
from cattrs import UnstructureStrategy
from cattrs.preconf.msgpack import make_converter

from goggles_io._event.columns import BatchColumns, batch_body, read_batch, read_columns
from goggles_io._event.messages import Ack, Batch, Call, Hello, Message, Release, Reply
from goggles_io._event.records import ArrayPool, ArrayReader, Kind, ShmRef
from goggles_io.exceptions import FrameError

__all__ = ["Ack", "Batch", "Call", "Decoder", "Encoder", "Hello", "Message", "Release", "Reply"]

_EXT_INLINE = 1
_EXT_SHM = 2
_EXT_SCALAR = 3
_ALLOWED_KINDS = frozenset("biufcSUmM")
_MAX_NDIM = 32
_U16 = struct.Struct(">H")
_KEEP_PACKER_BYTES = 1 << 20


def _tables() -> tuple[
    dict[type, tuple[int, Callable[[Any], Any]]], dict[int, Callable[[Any], Any]]
]:
    """Each message class's tag and body encoder, and each tag's body decoder: made once."""
    conv = make_converter(unstruct_strat=UnstructureStrategy.AS_TUPLE)
    conv.register_structure_hook(Any, lambda v, _: v)
    classes: tuple[type, ...] = (Hello, Batch, Ack, Call, Reply, Release)
    encoders: dict[type, tuple[int, Callable[[Any], Any]]] = {}
    decoders: dict[int, Callable[[Any], Any]] = {}
    for tag, cls in enumerate(classes):
        if cls is Batch:
            encoders[cls] = (tag, batch_body)
            decoders[tag] = read_batch
        else:
            encoders[cls] = (tag, conv.get_unstructure_hook(cls))
            decoders[tag] = _reader(conv, cls)
    return encoders, decoders


def _reader(conv: Any, cls: type) -> Callable[[Any], Any]:
    """The body decoder of message class ``cls``: its fields in order, checked by cattrs."""

    def read(body: Any) -> Any:
        return conv.structure(body, cls)

    return read


_ENCODERS, _DECODERS = _tables()
_COLUMNS: dict[int, Callable[[Any], Any]] = {_ENCODERS[Batch][0]: read_columns}


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

    def encode(self, message: Message) -> bytes:
        """Return the msgpack bytes of ``message``; raises TypeError for unencodable payloads
        (ValueError for a row of another shape)."""
        tag, body = _ENCODERS[type(message)]
        out: bytes = self._packer.pack([tag, body(message)])
        if len(out) > _KEEP_PACKER_BYTES:
            # The packer keeps its buffer as large as its largest message: start a small one.
            self._packer = msgpack.Packer(default=self._default, use_bin_type=True, autoreset=True)
        return out


class Decoder:
    """Decode messages from untrusted bytes; shared-memory arrays are read via ``shm`` (a copy, or
    a lent read-only view in the host: ADR 0077)."""

    def __init__(self, shm: ArrayReader | None = None) -> None:
        self.shm = shm
        self.shm_refs = 0  # shared-memory references decoded so far (a frame with one is local)

    def _ext_hook(self, code: int, data: bytes) -> Any:
        if code == _EXT_INLINE or code == _EXT_SCALAR:
            return _array_from(data, scalar=code == _EXT_SCALAR)
        if code == _EXT_SHM:
            self.shm_refs += 1
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
        message: Message = self._read(payload, _DECODERS)
        return message

    def decode_columns(self, payload: bytes | memoryview) -> BatchColumns:
        """The checked columns of the :class:`Batch` in ``payload``, no row built (a broker
        consumer builds its events from them: ADR 0086); :class:`FrameError` for anything
        else, exactly as :meth:`decode` would refuse it (another message: not a batch)."""
        found: BatchColumns = self._read(payload, _COLUMNS)
        return found

    def _read(self, payload: bytes | memoryview, readers: dict[int, Callable[[Any], Any]]) -> Any:
        """What ``readers`` makes of the body of the message in ``payload``; every failure a
        :class:`FrameError`."""
        try:
            raw = msgpack.unpackb(payload, ext_hook=self._ext_hook, raw=False)
            if not isinstance(raw, list) or len(raw) != 2 or type(raw[0]) is not int:
                msg = f"message must be [tag, body] (got {type(raw).__name__!r})"
                raise FrameError(msg, value=raw)
            read = readers.get(raw[0])
            if read is None:
                known = raw[0] in _DECODERS
                msg = f"{'not a batch: message' if known else 'unknown message'} tag {raw[0]!r}"
                raise FrameError(msg, value=raw[0])
            return read(raw[1])
        except FrameError:
            raise
        except RecursionError:
            msg = "message nested too deeply"
            raise FrameError(msg) from None
        except Exception as exc:  # any decoding failure of untrusted bytes is a bad frame
            msg = f"undecodable message: {type(exc).__name__}: {exc!s:.200}"
            raise FrameError(msg, value=bytes(payload[:64])) from None
