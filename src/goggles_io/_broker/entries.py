"""One stream entry: a batch of rows from one producer, numbered, encoded without pickle.

Fields: ``p`` the producer id (one per forwarder instance), ``s`` its sequence number (1, 2, ...
in XADD order), ``d`` the batch as the transport's msgpack frame (arrays inline). Everything read
back is untrusted: a malformed entry raises :class:`~goggles_io.exceptions.FrameError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from goggles_io._event.codec import Batch, Decoder, Encoder
from goggles_io._event.columns import BatchColumns
from goggles_io._event.rows import Row
from goggles_io.exceptions import FrameError

__all__ = ["decode_entry", "decode_entry_columns", "encode_entry"]

_MAX_PRODUCER = 256


def encode_entry(encoder: Encoder, producer: str, seq: int, rows: list[Row]) -> dict[str, Any]:
    """The XADD fields of one batch; raises TypeError/ValueError when a row cannot be encoded."""
    return {"p": producer, "s": seq, "d": encoder.encode(Batch(seq, rows))}


def decode_entry(decoder: Decoder, fields: Mapping[Any, Any]) -> tuple[str, int, list[Row]]:
    """``(producer, seq, rows)`` of an entry read back; FrameError when it is not one of ours."""
    producer, seq, payload = _header(fields)
    message = decoder.decode(payload)
    if type(message) is not Batch:
        raise FrameError(f"broker entry holds a {type(message).__name__}, not a batch")
    return producer, seq, message.rows


def decode_entry_columns(
    decoder: Decoder, fields: Mapping[Any, Any]
) -> tuple[str, int, BatchColumns]:
    """``(producer, seq, checked columns)`` of an entry read back, no row built (ADR 0086);
    FrameError exactly where :func:`decode_entry` raises one."""
    producer, seq, payload = _header(fields)
    return producer, seq, decoder.decode_columns(payload)


def _header(fields: Mapping[Any, Any]) -> tuple[str, int, bytes]:
    """An entry's producer id, sequence number and payload, checked."""
    raw_p, raw_s, raw_d = fields.get(b"p"), fields.get(b"s"), fields.get(b"d")
    if not isinstance(raw_p, bytes) or not 0 < len(raw_p) <= _MAX_PRODUCER:
        raise FrameError("broker entry has no valid producer id (field p)", value=raw_p)
    if not isinstance(raw_s, bytes) or not raw_s.isdigit() or len(raw_s) > 19:
        raise FrameError("broker entry has no valid sequence number (field s)", value=raw_s)
    if not isinstance(raw_d, bytes):
        raise FrameError("broker entry has no payload (field d)", value=raw_d)
    try:
        producer = raw_p.decode("utf-8")
    except UnicodeDecodeError:
        raise FrameError("broker entry's producer id is not UTF-8", value=raw_p) from None
    return producer, int(raw_s), raw_d
