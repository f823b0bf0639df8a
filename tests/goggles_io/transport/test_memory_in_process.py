"""In-process memory stays within its budget through a slow handler's whole drain (issue 41,
item 7): a real subprocess hosts in a thread of its own (``GOGGLES_DEDICATED_HOST=0``), floods a
5 ms/event handler with 50,000 lines of 4 KB (~200 MB), and its peak resident set is read after
the flood, after the handler took 6,000 of them (the spool read back, the host's lane refilled),
and after ``finish()``.

The process holds the client pipe (``GOGGLES_QUEUE_BYTES``, 16 MiB, what the host has not
acknowledged included), the host's lane (it stops reading producers at half its 16 MiB) and a
frame in flight on each side (a batch of at most 1 MiB): ~28 MiB of events and frames. Before
the fix, 4 MiB batches (their packer buffer, packed bytes, framed copy, the host's receive
buffer and its slices) and the allocator's fragments grew it by 60-120 MiB.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

pytestmark = pytest.mark.slow
Bus = Any  # the ``bus`` fixture of this folder's conftest

_BOUND_MIB = 48


def test_slow_drain_stays_within_the_in_process_budget(
    bus: Bus, finished: Callable[..., Any]
) -> None:
    """Peak RSS growth stays under 48 MiB through the flood, the slow drain and finish; nothing
    is dropped and the handler takes every line."""
    proc = bus.run(
        "memory_drain.py",
        50_000,
        6_000,
        GOGGLES_DEDICATED_HOST="0",
        GOGGLES_HOST_IMPORTS="jsonl_sink,slow_until_sink",
        GOGGLES_SPOOL_DIR=str(bus.root / "spool"),
    )
    out, err = finished(proc, timeout_s=480)
    got = json.loads(out.strip().splitlines()[-1])

    assert got["total_mib"] < _BOUND_MIB, (got, err[-2000:])
    assert 0 == got["dropped"], err[-2000:]
    assert 50_000 == got["taken"], (got, err[-2000:])
