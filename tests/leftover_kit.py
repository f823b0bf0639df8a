"""Left-over folders written byte for byte as ``finish()`` writes them (format 1), for the tests
that hand the deliverer crowded or hostile spool roots without first hanging a host.

A folder holds ``manifest.json`` (written last), ``ops.msgpack`` (the handler operations before
the events: here one ``attach`` of the scripts' ``RecordingSink``) and ``events.bin`` (records
``u8 kind | u32 record bytes | u64 blob bytes``, then a spool record of events, then its arrays).
Its name carries this test process's pid with a start time that is not ours: a dead owner.
"""

from __future__ import annotations

import itertools
import json
import os
import struct
import time
from pathlib import Path
from typing import Any

import msgpack
import numpy as np

from goggles_io import Event, Kind
from goggles_io._event.rows import row_of
from goggles_io._event.spilled import SpillEncoder
from goggles_io._transport.leftover_folder import FORMAT

__all__ = ["dead_owner_name", "events", "recording_spec", "write_folder"]

_HEAD = struct.Struct(">BIQ")
_EVENTS = 1
_names = itertools.count(1)


def dead_owner_name() -> str:
    """A left-over folder name whose owner is gone (our pid, another start time)."""
    return f"leftover-{os.getpid()}-1-{next(_names)}"


def recording_spec(
    path: Path | str, name: str = "recording", event_s: float = 0.0
) -> dict[str, Any]:
    """The spec of the scripts' ``RecordingSink`` writing ``path`` (one JSON line per event)."""
    data = {"name": name, "level": 0, "path": str(path), "image_s": 0.0, "event_s": event_s}
    return {"cls": "recording_sink:RecordingSink", "data": data}


def events(first: int, n: int, *, images_every: int = 0) -> list[Event]:
    """``n`` scalars with steps ``first...``; with ``images_every``, a small image (step = the
    scalar's) after every that many."""
    out: list[Event] = []
    for i in range(first, first + n):
        out.append(Event(Kind.METRIC, "global", {"x": float(i)}, step=i, logger="kit", pid=1))
        if images_every and i % images_every == images_every - 1:
            pixels = np.full((64, 64, 3), i % 251, dtype=np.uint8)
            out.append(Event(Kind.IMAGE, "global", pixels, step=i, logger="kit", pid=1))
    return out


def write_folder(
    root: Path,
    spec: dict[str, Any],
    logged: list[Event],
    *,
    name: str | None = None,
    chunk: int = 500,
) -> Path:
    """A complete left-over folder under ``root`` (0700): ``spec`` attached on ``global``, then
    ``logged`` in records of ``chunk`` events."""
    root.mkdir(parents=True, exist_ok=True)
    folder = root / (name or dead_owner_name())
    folder.mkdir(mode=0o700)
    encoder = SpillEncoder()
    with open(folder / "events.bin", "wb") as fh:
        for at in range(0, len(logged), chunk):
            record, blobs = encoder.encode([row_of(e) for e in logged[at : at + chunk]])
            fh.write(_HEAD.pack(_EVENTS, len(record), sum(len(b) for b in blobs)))
            fh.write(record)
            for blob in blobs:
                fh.write(blob)
    ops = [["attach", {"spec": spec, "scopes": ["global"]}]]
    (folder / "ops.msgpack").write_bytes(msgpack.packb(ops, use_bin_type=True))
    manifest = {
        "format": FORMAT,
        "pid": os.getpid(),
        "events": len(logged),
        "socket": "",
        "written": time.time(),
        "deliveries": 0,
    }
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder
