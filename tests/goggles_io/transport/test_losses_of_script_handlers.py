"""Losses the run records (issue 41, item 4): what finish could not deliver to a handler that
runs in the user's script is in ``run.kv`` and everywhere users look.

The script's only handler is defined in ``__main__``, so it runs in the script itself (an
in-process lane) and nothing else can ever rebuild it: what it did not take when ``finish()``
gave up cannot be kept for a later process and is lost. The end-of-run line says ``lost N``;
``run.kv`` must say ``lost=N`` too, and ``telemetry runs`` and ``telemetry show`` must show it.
Before, the finish at interpreter exit (which had nothing left to report) rewrote ``lost=0``
after the script's own ``gg.finish()``, and every tool showed a plain ``done``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

_N = 2_000


def _telemetry(*args: str) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "experiment_telemetry", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return out.stdout


@pytest.mark.slow
@pytest.mark.timeout(240)
@pytest.mark.parametrize("transport", ["socket", "inprocess"])
@pytest.mark.parametrize("when", ["inside", "exit"])
def test_a_hung_handler_of_the_script_is_counted_lost_in_the_run(
    bus: Any, finished: Any, transport: str, when: str
) -> None:
    """``lost=2000`` in ``run.kv``, ``done (lost 2000)`` in ``telemetry runs`` and ``show``, and
    ``lost 2000 events`` in the end-of-run line, whether finish ran inside the run or at exit."""
    runs, gate = bus.root / "runs", bus.root / "gate"
    env = {"GOGGLES_FINISH_STALL": "1", "GOGGLES_TRANSPORT": transport}
    proc = bus.run("hung_local_run.py", runs, gate, _N, when, **env)
    try:
        stdout, stderr = finished(proc, timeout_s=180)
    finally:
        gate.write_text("open")  # the hung handler's thread may go
    report = json.loads(stdout.strip().splitlines()[-1])
    if when == "inside":
        assert _N == report["missing"], (report, stderr)
    assert f"lost {_N} events" in stderr, stderr
    run_dir = Path(report["run_dir"])
    kv = dict(
        line.split("=", 1) for line in (run_dir / "run.kv").read_text().splitlines() if "=" in line
    )
    assert ("done", str(_N)) == (kv.get("status"), kv.get("lost")), kv
    listed = _telemetry("runs", str(runs))
    assert f"done (lost {_N})" in listed, listed
    shown = _telemetry("show", str(run_dir))
    assert f"status=done (lost {_N})" in shown and f"lost: {_N}" in shown, shown


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_kept_events_are_lost_to_a_handler_of_the_script(bus: Any, finished: Any) -> None:
    """Finish gives up on a hung host-side sink: what it could not deliver is kept for later
    for the host's handlers, and what of it never reached the script's own handler is lost to
    that handler, which no later process can rebuild: the report counts it for that handler
    (each of the 20,000 events handled by it or counted), and ``run.kv`` has it."""
    runs, gate = bus.root / "runs", bus.root / "gate"
    env = {"GOGGLES_FINISH_STALL": "1", "GOGGLES_QUEUE_SIZE": "256"}
    env["GOGGLES_HOST_IMPORTS"] = "gated_sink"
    proc = bus.run("mixed_run.py", runs, gate, 20_000, **env)
    try:
        stdout, stderr = finished(proc, timeout_s=180)
    finally:
        gate.write_text("open")
    report = json.loads(stdout.strip().splitlines()[-1])
    print(report)
    delivered, dropped, not_in_time, logged = report["local"]
    assert report["transport"]["kept for later"] > 0, report
    assert delivered == report["seen"] and 0 < not_in_time == dropped, report
    assert 20_000 == delivered + not_in_time == logged, "each event: handled, or counted lost"
    assert f"local: {delivered} delivered, {dropped} dropped" in stderr, stderr
    kv = (Path(report["run_dir"]) / "run.kv").read_text()
    assert f"lost={report['missing']}" in kv and report["missing"] >= not_in_time, kv
