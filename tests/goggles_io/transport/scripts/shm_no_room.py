"""A producer-side shared-memory pool on a filesystem with room for one segment (ADR 0083).

argv: shm_dir (a 20 MiB tmpfs the test mounted). A pool of three 16 MiB segments takes 40
distinct 1 MiB arrays without any release: the first segment holds 16, the second finds no room
(``posix_fallocate`` says ENOSPC; a sparse file would map, and the first copy into a page past
the filesystem's end would be a SIGBUS), and every later put returns ``None`` at once. Prints
one JSON line: how many were stored, intact when read back, refused segments, files left.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

from goggles_io._transport.shm import ShmPool, ShmReader

shm_dir = sys.argv[1]
pool = ShmPool(segment_bytes=16 << 20, max_segments=3, shm_dir=shm_dir)
reader = ShmReader(shm_dir=shm_dir)
refs = [(i, pool.put(np.full(1 << 20, i, dtype=np.uint8))) for i in range(40)]
stored = [(i, ref) for i, ref in refs if ref is not None]
intact = sum(1 for i, ref in stored if bool((reader.read(ref) == i).all()))
files = sorted(os.listdir(shm_dir))
reader.close()
pool.close()
print(
    json.dumps(
        {"stored": len(stored), "intact": intact, "refused": pool.refused, "files": len(files)}
    ),
    flush=True,
)
