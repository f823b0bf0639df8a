"""Client frames the forwarder may send to Redis as they came, instead of encoding its rows again.

The socket host decodes each client batch into rows (its acknowledgement, routing and every
other handler need them) and, when the frame holds no shared-memory reference (a consumer on
another machine could not read one), tells the forwarder which list of rows the frame's bytes
stand for (:meth:`FrameTable.note`). The forwarder's pipe carries that list as one item, and a
batch holds whole items up to about 1,024 scalars' bytes, so a full client batch is a pipe
batch of its own. When a batch is exactly that list (the same object: not one read back from
the spool), its stream entry is the frame's bytes (:meth:`FrameTable.take`): a :class:`~goggles_io._event.messages.Batch` message, the one form
an entry's ``d`` field holds, so consumers of any version read it as before (ADR 0079). Any
other batch (several frames, part of one, rows read back from the spool, a batch sent again)
is encoded as before. The rows in the frame are the rows the host decoded from it, so a
consumer decoding it gets what it would have got from the encoded rows.

The table holds at most :data:`MAX_FRAMES` frames and :data:`MAX_FRAME_BYTES` bytes (beside
the forwarder's own budget): one whose rows were dropped, spilled or sent otherwise is
forgotten, oldest first, as newer ones come.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

from goggles_io._event.rows import Row

__all__ = ["MAX_FRAMES", "MAX_FRAME_BYTES", "FrameTable"]

MAX_FRAMES = 64  # frames remembered (a client frame holds at most 1,024 rows, ~24 KiB of scalars)
MAX_FRAME_BYTES = 4 << 20  # ... and their bytes (a frame of arrays holds up to 1 MiB, ADR 0063)


class FrameTable:
    """Frames by the list of rows the host decoded from each; the host's connection threads
    note, the pipe's worker takes."""

    def __init__(self, max_frames: int = MAX_FRAMES, max_bytes: int = MAX_FRAME_BYTES) -> None:
        self.max_frames = max_frames
        self.max_bytes = max_bytes
        self.nbytes = 0  # bytes of the frames held
        self.forwarded = 0  # batches sent as their frame's bytes
        self.encoded = 0  # batches encoded (no frame was exactly them)
        self._lock = threading.Lock()
        # id(list) -> (the list, its frame); the list is kept alive here, so its id is not
        # reused while the entry lives.
        self._frames: OrderedDict[int, tuple[list[Row], bytes]] = OrderedDict()

    def note(self, rows: list[Row], frame: bytes | memoryview) -> None:
        """``frame`` is the client message the list ``rows`` was decoded from (copied: the host
        reuses its frame buffer)."""
        if not rows or len(frame) > self.max_bytes:
            return
        entry = (rows, bytes(frame))
        frames = self._frames
        with self._lock:
            old = frames.pop(id(rows), None)
            self.nbytes += len(entry[1]) - (0 if old is None else len(old[1]))
            frames[id(rows)] = entry
            while len(frames) > self.max_frames or self.nbytes > self.max_bytes:
                self.nbytes -= len(frames.popitem(last=False)[1][1])

    def take(self, items: Sequence[object]) -> bytes | None:
        """The frame of a pipe batch that is one noted list and nothing else (forgotten once
        taken), else ``None``."""
        entry = None
        if len(items) == 1:
            with self._lock:
                entry = self._frames.pop(id(items[0]), None)
                if entry is not None:
                    self.nbytes -= len(entry[1])
        if entry is None or entry[0] is not items[0]:
            self.encoded += 1
            return None
        self.forwarded += 1
        return entry[1]
