"""Left-over events keep their producer's numbers, so a sink skips those it took (issue 41).

A host-side handler hangs; ``finish()`` gives up after 1 s and keeps what the host had not
acknowledged in a left-over folder. Then the handler wakes, in the host, and takes the events
the host had already read: they are in the folder too. Before this change the folder's events
went unnumbered and the deliverer handed them all to the rebuilt sink again: the file held the
woken handler's events twice. Now each record keeps the producer's id and its first event's
sequence (the numbers the batch went with), and a sink that keeps its marks with its data
skips exactly those it holds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from host_kills import kill_host
from support import wait_until

_SCALARS = 6000
_ENV = {
    "GOGGLES_FINISH_STALL": "1",
    "GOGGLES_QUEUE_SIZE": "256",
    "GOGGLES_HOST_IMPORTS": "gated_sequenced_sink",
}


def _steps(path: Path) -> list[int]:
    if not path.exists():
        return []
    # Whole lines only: the sink may be writing its last one while we read.
    return [json.loads(line)["i"] for line in path.read_text().split("\n")[:-1] if line]


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("killed", [False, True], ids=["woken-to-the-end", "killed-midway"])
def test_a_hung_handler_that_wakes_and_the_deliverer_write_each_event_once(
    bus: Any, finished: Any, killed: bool
) -> None:
    """The woken handler writes what its host had read (all of it, or, its host killed midway,
    part); the deliverer then replays the whole folder into the rebuilt sink, which skips
    those by sequence and writes the rest: every step once, in order."""
    path, gate = bus.root / "custom.jsonl", bus.root / "gate"
    spool = Path(os.environ["GOGGLES_SPOOL_DIR"])
    per_event_s = 0.0003 if killed else 0.0
    proc = bus.run("gated_sequenced_producer.py", path, gate, _SCALARS, per_event_s, **_ENV)
    stdout, stderr = finished(proc, timeout_s=120)
    report = json.loads(stdout.strip().splitlines()[-1])
    assert report["timed_out"] and {"kept for later": _SCALARS} == report["transport"], (
        report,
        stderr,
    )
    assert [] == _steps(path)
    gate.write_text("open")  # the hung handler wakes in its host
    if killed:
        wait_until(lambda: len(_steps(path)) >= 4096, timeout_s=120, what="a part written")
        kill_host(bus, [])
    wait_until(lambda: not bus.host_alive(), timeout_s=120, what="the woken host done")
    woken = _steps(path)
    cmd = subprocess.run(
        [sys.executable, "-m", "goggles_io.leftovers"],
        cwd=bus.root,
        env={**bus.env, **_ENV},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    steps = _steps(path)
    summary = {
        "woken handler wrote": len(woken),
        "lines": len(steps),
        "distinct": len(set(steps)),
        "in order": steps == list(range(_SCALARS)),
        "deliverer": cmd.stdout.strip()[-300:],
    }
    print(f"\nleft-overs numbered: {json.dumps(summary)}")
    assert 0 == cmd.returncode, (cmd.stdout, cmd.stderr)
    assert woken, "the woken handler took events the folder also holds"
    assert (len(woken) < _SCALARS) == killed, summary
    assert (_SCALARS, _SCALARS, True) == (
        summary["lines"],
        summary["distinct"],
        summary["in order"],
    ), summary
    assert [] == sorted(spool.glob("leftover-*"))
