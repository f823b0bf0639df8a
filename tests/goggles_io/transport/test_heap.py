"""The dedicated host's heap keeps freed array memory (ADR 0053)."""

from __future__ import annotations

import json
import platform
import subprocess
import sys

import pytest

_PROBE = r"""
import json, resource, sys
import numpy as np
from goggles_io._transport.host.heap import keep_freed_arrays

ok = keep_freed_arrays() if sys.argv[1] == "kept" else False
live = []
for i in range(40):  # warm up: the heap grows to its peak once
    live.append(np.ones(1 << 20, np.uint8))
    if len(live) > (i * 7) % 24:
        live.clear()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for i in range(400):  # as the host: copies out, up to 24 alive, freed in bursts
    live.append(np.ones(1 << 20, np.uint8))
    if len(live) > (i * 7) % 24:
        live.clear()
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
print(json.dumps({"ok": ok, "faults_per_array": faults / 400}))
"""


def _probe(mode: str) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, mode], capture_output=True, text=True, timeout=120
    )
    assert 0 == done.returncode, done.stderr
    got: dict[str, float] = json.loads(done.stdout)
    return got


@pytest.mark.skipif(
    sys.platform != "linux" or platform.libc_ver()[0] != "glibc", reason="glibc's mallopt"
)
def test_freed_arrays_are_reused_instead_of_faulted_in_again() -> None:
    """With the host's setting a 1 MiB array reuses freed heap (~no page faults); without it,
    glibc hands freed memory back and the next array faults in fresh pages."""
    kept, default = _probe("kept"), _probe("default")

    assert kept["ok"] is True
    assert kept["faults_per_array"] < 8, kept
    assert default["faults_per_array"] > 4 * kept["faults_per_array"], (kept, default)
