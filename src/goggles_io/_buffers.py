"""Recycled buffers for the private copy of big arrays made at the log call.

A fresh 1 MiB allocation page-faults on every one of its 256 pages (about 600 us), which made
the copy at ``log.image`` ten times slower than the copy itself whenever the sender thread still
held earlier images. Big copies therefore land in buffers that come back here once nothing
references the array any more (``weakref.finalize`` on the memoryview numpy keeps as the base
of every view of the array), so a steady stream of images reuses warm pages. Bounded in bytes.
"""

from __future__ import annotations

import threading
import weakref
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

__all__ = ["MIN_RECYCLED_BYTES", "recycled_copy"]

MIN_RECYCLED_BYTES = 256 * 1024
_MAX_KEPT_BYTES = 64 * 1024 * 1024
_lock = threading.Lock()
_free: dict[int, list[bytearray]] = {}
_kept = [0]


def _give_back(buf: bytearray) -> None:
    n = len(buf)
    with _lock:
        if _kept[0] + n <= _MAX_KEPT_BYTES:
            _free.setdefault(n, []).append(buf)
            _kept[0] += n


def recycled_copy(src: np.ndarray) -> np.ndarray:
    """Return a private C-ordered copy of ``src`` in a reused buffer (``src.nbytes`` > 0)."""
    import numpy as np

    n = src.nbytes
    with _lock:
        bufs = _free.get(n)
        buf = bufs.pop() if bufs else None
        if buf is not None:
            _kept[0] -= n
    if buf is None:
        buf = bytearray(n)
    out = np.frombuffer(buf, dtype=src.dtype).reshape(src.shape)
    root = out
    while isinstance(root, np.ndarray):  # numpy's own memoryview of buf ends every view chain
        root = root.base
    weakref.finalize(root, _give_back, buf).atexit = False  # nothing to return at exit
    np.copyto(out, src, casting="no")
    return out
