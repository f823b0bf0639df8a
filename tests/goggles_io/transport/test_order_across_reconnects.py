"""Order holds across a host's death: nothing new goes out ahead of what is sent again.

The client's receiver notices a dead host at once (EOF), while its sender may be framing the
next batch. Before ADR 0057 that batch could go to the next host ahead of the batches the dead
host had not acknowledged (the pipe read its link generation after letting go of its lock, and
the link connected anew for whoever wrote first). ``scripts/slow_to_hear.py`` widens that window
to 3 s: its client tells its pipe of the death 3 s late, and the test logs more meanwhile.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from host_kills import alive as _alive
from support import expect_line, send_line, wait_until

_FIRST, _THEN = 2_000, 1_000


def _records(path: Path) -> list[dict[str, Any]]:
    with contextlib.suppress(FileNotFoundError):
        text = path.read_text()
        return [json.loads(line) for line in text.splitlines()[: text.count("\n")]]
    return []


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_batches_sent_again_go_before_anything_new(bus: Any, finished: Any) -> None:
    """A host SIGKILLed with ~1,800 events unacknowledged, new events logged while the client
    is still to hear of it: the next host gets the unacknowledged ones first, in order, then
    the new ones; every event arrives."""
    path = bus.root / "order.jsonl"
    proc = bus.run("slow_to_hear.py", path, 3.0, GOGGLES_HOST_IMPORTS="order_sink")
    expect_line(proc, "ready")
    send_line(proc, f"log {_FIRST}")
    expect_line(proc, "logged")
    wait_until(lambda: len(_records(path)) >= 200, timeout_s=60, what="200 events handled")
    pid = wait_until(lambda: bus.host_alive() and bus.host_pid(), what="the host's pid")
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not _alive(pid), timeout_s=30, what="the host gone")
    send_line(proc, f"log {_THEN}")  # while the client is still to hear of the death
    expect_line(proc, "logged")
    send_line(proc, "finish")
    stdout, stderr = finished(proc, timeout_s=240)
    report = json.loads(stdout.strip().splitlines()[-1])

    records = _records(path)
    hosts: dict[int, list[int]] = {}
    for rec in records:
        hosts.setdefault(rec["host"], []).append(rec["i"])
    later = [steps for host, steps in hosts.items() if host != pid]
    disorder = [
        (steps[k], steps[k + 1])
        for steps in later
        for k in range(len(steps) - 1)
        if steps[k + 1] <= steps[k]
    ]
    missing = sorted(set(range(_FIRST + _THEN)) - {rec["i"] for rec in records})
    summary = {
        "handled by the killed host": len(hosts.get(pid, [])),
        "then": [(steps[0], steps[-1], len(steps)) for steps in later],
        "out of order": disorder[:10],
        "missing": missing[:10],
        "report": report,
    }
    print(f"order across a reconnect: {summary}")

    assert later, summary
    assert ([], []) == (disorder[:10], missing[:10]), (summary, stderr[-3000:])
