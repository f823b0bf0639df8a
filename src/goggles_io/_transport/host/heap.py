"""The dedicated host's heap: freed array memory stays for the next array (ADR 0053).

The host copies each array out of shared memory into a new heap array, and frees it once the
handlers are done. glibc's default gives a freed 1 MiB back to the kernel as soon as 2 MiB lie
free at the top of the heap, so the next copy faults in and zeroes 256 fresh pages: ~450 µs
instead of ~50 µs for the copy itself. Here arrays up to 4 MiB come from the heap and up to
64 MiB of free heap is kept, a bound in bytes on what the host holds beyond its live arrays.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import sys

__all__ = ["HEAP_ARRAY_BYTES", "KEEP_FREE_BYTES", "keep_freed_arrays"]

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
HEAP_ARRAY_BYTES = 4 * 1024 * 1024
KEEP_FREE_BYTES = 64 * 1024 * 1024


def keep_freed_arrays() -> bool:
    """Tune glibc's ``malloc`` as above; ``False`` (nothing changed) off glibc."""
    if not sys.platform.startswith("linux"):
        return False
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
        mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
        mallopt.restype = ctypes.c_int
        return bool(
            mallopt(_M_MMAP_THRESHOLD, HEAP_ARRAY_BYTES)
            and mallopt(_M_TRIM_THRESHOLD, KEEP_FREE_BYTES)
        )
    return False
