"""A shared-memory segment takes its room before it is mapped (ADR 0083).

A tmpfs file is sparse: ``mmap`` of it always succeeds (``MAP_POPULATE`` gives up silently), and
the first write into a page the filesystem has no room for kills the writer with SIGBUS, inside
a log call. So a segment's blocks are allocated first (``posix_fallocate``: ENOSPC then, an error
the pool turns into a smaller pool), and in ``/dev/shm`` a segment is made only if a quarter of
the filesystem stays free after it: others need it too.
"""

from __future__ import annotations

import errno
import os

__all__ = ["KEEP_FREE", "reserve"]

# The share of /dev/shm's size left free after a segment: a container's 64 MiB /dev/shm still
# holds three 16 MiB segments.
KEEP_FREE = 4


def reserve(fd: int, size: int, keep_free: bool) -> None:
    """Take ``size`` bytes of ``fd``'s filesystem for it now, or raise OSError (ENOSPC);
    ``keep_free``: also refuse when less than a quarter of the filesystem would stay free."""
    st = os.fstatvfs(fd)
    free, total = st.f_bavail * st.f_frsize, st.f_blocks * st.f_frsize
    if keep_free and total and free - size < total // KEEP_FREE:
        msg = f"{free >> 20} MiB free of {total >> 20} MiB, a segment takes {size >> 20} MiB"
        raise OSError(errno.ENOSPC, msg)
    if hasattr(os, "posix_fallocate"):
        os.posix_fallocate(fd, 0, size)
    else:  # pragma: no cover - macOS has no posix_fallocate: the size only
        os.ftruncate(fd, size)
