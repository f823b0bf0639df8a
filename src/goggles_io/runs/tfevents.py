"""TensorBoard event files (``events.out.tfevents.*``) read as a run's metrics, every point.

A TensorBoard log directory is a run: its event files, and those up to two folders down (the
sub-writers of ``add_scalars``, whose metrics are named ``<main tag>/<tag>`` as the compat
writer names them, and of ``add_hparams``, named ``<folder>/<tag>``), are read into the same :class:`~goggles_io.runs.lines.Parsed` columns as
``log.jsonl``, so the notebook API and the dashboard show old TensorBoard runs beside new ones.

Each event is decoded by the ``tensorboard`` package (its ``Event`` protocol buffer, its CRC
and its tensor decoding: ``pip install 'split-telemetry[tensorboard]'``); the record framing is
read here from a file opened confined and regular (:mod:`goggles_io._util.safe_read`), from a
byte offset, one bounded record at a time (ADR 0040). Nothing is sampled: TensorBoard's
``EventAccumulator`` keeps 1,000 scalars a tag by default; this keeps every point.
A record whose CRC fails or whose length is over ``MAX_LINE_BYTES`` is counted as skipped; a
torn last record waits for its end.
"""

from __future__ import annotations

import math
import os
import re
import struct
from collections import deque
from collections.abc import Iterable
from pathlib import Path
from typing import Any, BinaryIO

from goggles_io._util.safe_read import MAX_LINE_BYTES, open_inside
from goggles_io.runs.lines import TEXT_CHARS, TFEVENTS_GLOB, Parsed, metric_sources

__all__ = [
    "TFEVENTS_GLOB",
    "is_tfevents",
    "last_step",
    "missing_reader",
    "read_records",
    "run_folder",
    "tf_events",
    "tfevents_files",
]

_STAMP = re.compile(r"^\d{9,11}\.\d+$")  # str(time.time()): add_hparams' sub-run folder
_HEADER = struct.Struct("<QI")  # record length, masked CRC of the length
_FOOTER = 4  # masked CRC of the record
_NAN = math.nan
_EXTRA = "pip install 'split-telemetry[tensorboard]'"


def is_tfevents(path: Path) -> bool:
    """Whether ``path`` is named like a TensorBoard event file."""
    return path.name.startswith("events.out.tfevents.")


def tfevents_files(run_dir: Path) -> list[Path]:
    """The run's event files: its own, then one folder down (sub-writers), sorted by name."""
    return [p for p in metric_sources(run_dir) if is_tfevents(p)]


def missing_reader() -> str | None:
    """Why event files cannot be read here (the ``tensorboard`` package is missing), or ``None``."""
    try:
        import tensorboard.compat.proto.event_pb2  # noqa: F401
    except ImportError:
        return f"TensorBoard event files need the tensorboard package: {_EXTRA}"
    return None


def _crc() -> Any:
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c

    return masked_crc32c


def read_records(
    fh: BinaryIO, offset: int, budget: int, *, limit: int = MAX_LINE_BYTES
) -> tuple[list[bytes], int, int]:
    """Whole records from byte ``offset`` on, about ``budget`` bytes of them.

    Returns the records, the offset after the last whole one (a torn record at the end is
    left for the next call), and how many records were skipped: a CRC that fails or a length
    over ``limit``. A length whose own CRC fails leaves no way to find the next record: the
    rest of the file is skipped (one counted) and the offset moves to its end.
    """
    masked_crc32c = _crc()
    records: list[bytes] = []
    skipped = 0
    used = 0
    size = os.fstat(fh.fileno()).st_size
    fh.seek(offset)
    while used < max(1, budget):
        head = fh.read(_HEADER.size)
        if len(head) < _HEADER.size:
            break  # the end, or a torn header: wait for it
        length, head_crc = _HEADER.unpack(head)
        if masked_crc32c(head[:8]) != head_crc:
            return records, size, skipped + 1  # no way to find the next record
        end = offset + _HEADER.size + length + _FOOTER
        if end > size:
            break  # a torn record: the writer is still writing it
        if length > limit:
            skipped += 1  # never held in memory
            fh.seek(end)
        else:
            body = fh.read(length + _FOOTER)
            if masked_crc32c(body[:length]) == struct.unpack("<I", body[length:])[0]:
                records.append(body[:length])
            else:
                skipped += 1
            used += length
        used += _HEADER.size + _FOOTER
        offset = end
    return records, offset, skipped


def last_step(run_dir: Path, tail: int = 64) -> int | None:
    """The largest step among the last ``tail`` records of each of the run's event files, or
    ``None`` (no event file, no reader, nothing with a step). Record bodies are skipped
    unread up to the last ``tail``: ``telemetry runs`` stays quick on a big log."""
    if missing_reader():
        return None
    from tensorboard.compat.proto.event_pb2 import Event

    found: int | None = None
    for path in tfevents_files(run_dir):
        try:
            with open_inside(run_dir, path) as fh:
                size = os.fstat(fh.fileno()).st_size
                spots: deque[tuple[int, int]] = deque(maxlen=tail)
                offset = 0
                while offset + _HEADER.size <= size:
                    fh.seek(offset)
                    length, _ = _HEADER.unpack(fh.read(_HEADER.size))
                    end = offset + _HEADER.size + length + _FOOTER
                    if end > size:
                        break  # a torn record: still being written
                    if length <= MAX_LINE_BYTES:
                        spots.append((offset + _HEADER.size, length))
                    offset = end
                for start, length in spots:
                    fh.seek(start)
                    try:
                        event = Event.FromString(fh.read(length))
                    except Exception:  # a DecodeError: damaged, counted by the metrics reader
                        continue
                    if event.HasField("summary") and (found is None or event.step > found):
                        found = int(event.step)
        except OSError:
            continue
    return found


def tf_events(records: Iterable[bytes], folder: str = "", into: Parsed | None = None) -> Parsed:
    """Decode event records into metric columns: every scalar, at its step and wall time.

    Scalars are TensorBoard 1's ``simple_value`` (torch's and tensorboardX's ``add_scalar``)
    and scalar tensors of the ``scalars`` plugin (``tensorboard.summary.Writer``, TF 2).
    ``folder`` (a sub-writer's folder, relative to the run) names the metrics with it. Text blocks (``add_text``) become text items of ``out.media``; other kinds (images,
    histograms) are left to TensorBoard; a record that does not decode is skipped.
    """
    from google.protobuf.message import DecodeError
    from tensorboard.compat.proto.event_pb2 import Event

    out = Parsed() if into is None else into
    for raw in records:
        try:
            event = Event.FromString(raw)
        except DecodeError:
            out.skipped += 1
            continue
        if not event.HasField("summary"):
            continue
        step = float(event.step)
        when = event.wall_time
        for value in event.summary.value:
            kind = value.WhichOneof("value")
            if kind == "simple_value":
                number = float(value.simple_value)
            elif kind == "tensor" and _plugin(value) == "scalars":
                decoded = _scalar_tensor(value.tensor)
                if decoded is None:
                    out.skipped += 1
                    continue
                number = decoded
            elif kind == "tensor" and _plugin(value) == "text":
                out.media.extend(_text(value, folder, int(event.step), when))
                continue
            else:
                continue
            out.column(_name(folder, value.tag)).add(step, when, _NAN, number)
    return out


def run_folder(folder: str) -> str:
    """``folder`` without the ``time.time()`` folders ``add_hparams`` writes into (torch and
    tensorboardX name its sub-run ``<logdir>/1796423484.0649006``): its metrics and
    hyperparameters are the run's own, named as the run names them."""
    return "/".join(part for part in folder.split("/") if not _STAMP.match(part))


def _name(folder: str, tag: str) -> str:
    """A sub-writer's metric name: ``add_scalars("loss", {"train": ..})`` writes the tag
    ``loss`` into ``loss/train/`` (tensorboardX) or ``loss_train/`` (torch): ``loss/train``;
    ``add_hparams``' own folder adds nothing (:func:`run_folder`)."""
    folder = run_folder(folder)
    if not folder:
        return tag
    if folder.startswith(f"{tag}/"):
        return folder
    if folder.startswith(tag.replace("/", "_") + "_"):
        return f"{tag}/{folder[len(tag) + 1 :]}"
    return f"{folder}/{tag}"


def _text(value: Any, folder: str, step: int, when: float) -> list[dict[str, Any]]:
    """``add_text``'s block as the same text item a ``log.jsonl`` text line gives."""
    texts = [t.decode("utf-8", errors="replace") for t in value.tensor.string_val[:1]]
    return [
        {"kind": "text", "name": _name(folder, value.tag).removesuffix("/text_summary"),
         "step": step, "text": text[:TEXT_CHARS], "truncated": len(text) > TEXT_CHARS,
         "time": when}
        for text in texts
    ]  # fmt: skip


def _plugin(value: Any) -> str:
    return str(value.metadata.plugin_data.plugin_name)


def _scalar_tensor(tensor: Any) -> float | None:
    from tensorboard.util.tensor_util import make_ndarray

    try:
        arr = make_ndarray(tensor)
    except (TypeError, ValueError):
        return None
    return float(arr.reshape(-1)[0]) if arr.size == 1 else None
