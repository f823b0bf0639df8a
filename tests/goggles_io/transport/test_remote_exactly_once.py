"""RemoteHandler to a real collector on 127.0.0.1, exactly once across host deaths (ADR 0069).

The host runs the remote sink and is SIGKILLed mid-run. Before this change a redelivered batch
went to the collector again under new ``seq`` numbers (stored twice), and the points queued in
the dead host's handler, which the host had already acknowledged, died with it (missing). Now
each point carries its event's producer and sequence (and its index in the event), the
collector keeps the last one per producer with the points, and the host acknowledges a batch
only once the collector stored its points or the handler's outbox holds them: every point is
stored once, in the order logged.
"""

from __future__ import annotations

import json
import os
import random
import re
import struct
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgpack
import pytest

from goggles_io.server.collector import Collector
from host_kills import kill_host
from support import wait_until

_METRICS = 3


@pytest.fixture
def collector(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Collector]:
    for var in ("TELEMETRY_REMOTE_URL", "TELEMETRY_REMOTE_API_KEY", "TELEMETRY_NO_REMOTE"):
        monkeypatch.delenv(var, raising=False)
    with Collector(db_path=str(tmp_path / "c.sqlite")) as running:
        yield running


def _stored(collector: Collector, run_id: str) -> int:
    return next((r["points"] for r in collector.store.runs() if r["run_id"] == run_id), 0)


def _start(bus: Any, collector: Collector, run_id: str, events: int) -> subprocess.Popen[str]:
    proc = bus.run("remote_producer.py", collector.url, run_id, events, _METRICS)
    assert proc.stdout is not None and proc.stdin is not None
    assert "ready" == proc.stdout.readline().strip(), proc.stderr.read() if proc.stderr else ""
    proc.stdin.write("go\n")
    proc.stdin.flush()
    return proc


def _outbox_points(spool: Path) -> int:
    """Points in the whole records of the spool's remote outboxes (``u32 length | msgpack``):
    what a host has written completely, and so acknowledged to the producer."""
    total = 0
    for path in spool.glob("remote-outbox-*"):
        data, at = path.read_bytes(), 0
        while at + 4 <= len(data):
            (n,) = struct.unpack_from(">I", data, at)
            if at + 4 + n > len(data):
                break
            total += len(msgpack.unpackb(data[at + 4 : at + 4 + n]))
            at += 4 + n
    return total


def _check(collector: Collector, run_id: str, events: int, report: dict[str, Any]) -> None:
    """Every (metric, step) once; each metric's steps in the order logged; the report clean."""
    points = collector.store.points(run_id)
    keys = [(p["name"], p["step"]) for p in points]
    expected = {(f"m{k}", i) for i in range(events) for k in range(_METRICS)}
    by_metric: dict[str, list[int]] = {}
    for name, step in keys:
        by_metric.setdefault(name, []).append(step)
    summary = {
        "points": len(keys),
        "distinct": len(set(keys)),
        "missing": len(expected - set(keys)),
        "first missing": sorted(expected - set(keys))[:5],
        "out of order": sum(s != list(range(events)) for s in by_metric.values()),
        "values wrong": sum(p["value"] != p["step"] + int(p["name"][1:]) / 10 for p in points),
        "report": report,
    }
    print(f"remote exactly once: {json.dumps(summary)}")
    assert (events * _METRICS, events * _METRICS, 0, 0, 0) == (
        summary["points"],
        summary["distinct"],
        summary["missing"],
        summary["out of order"],
        summary["values wrong"],
    ), summary
    delivered, dropped, errors, logged, losses = report["remote"]
    assert (events, 0, 0, events, {}) == (delivered, dropped, errors, logged, losses), summary
    assert ({}, False) == (report["transport"], report["timed_out"]), summary


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_every_point_is_stored_once_in_order_across_host_kills(
    bus: Any, finished: Any, collector: Collector
) -> None:
    """3 host SIGKILLs at seeded moments during 20,000 events of 3 metrics each: the collector
    holds each of the 60,000 points once, each metric's steps in order."""
    seed = int(os.environ.get("GOGGLES_CHAOS_SEED") or random.SystemRandom().randrange(1 << 32))
    print(f"\nremote chaos seed: {seed}")
    rng = random.Random(seed)
    events = 20_000
    marks = sorted(rng.sample(range(events * _METRICS // 20, events * _METRICS * 8 // 10), 3))
    proc = _start(bus, collector, "chaos", events)
    killed: list[int] = []
    for mark in marks:
        wait_until(
            lambda m=mark: _stored(collector, "chaos") >= m or proc.poll() is not None,
            timeout_s=300,
            what=f"{mark} points stored",
        )
        if proc.poll() is not None:
            break  # the run ended first (points were lost): the check below says how many
        time.sleep(rng.uniform(0.0, 0.05))
        killed.append(kill_host(bus, killed))
    stdout, _ = finished(proc, timeout_s=300)
    _check(collector, "chaos", events, json.loads(stdout.strip().splitlines()[-1]))
    assert 3 == len(set(killed))


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_points_a_slow_collector_has_not_stored_survive_in_the_outbox(
    bus: Any, finished: Any, collector: Collector
) -> None:
    """A collector that does not answer: the host acknowledges points once they are in the
    handler's outbox, so the producer no longer holds them; the host is killed while the outbox
    holds points the collector never stored, the collector answers again, and the next host
    sends them first: every point once, in order, and the outbox is gone at the end."""
    collector.ingest.response_delay_s = 600.0  # lowered below: requests waiting then go on
    spool = Path(os.environ["GOGGLES_SPOOL_DIR"])
    events = 3000
    proc = _start(bus, collector, "slow", events)

    # Whole records only: a record the host is still writing is dropped as torn by the next
    # host (its points were not acknowledged, so the producer sends them again, and nothing
    # goes through the outbox); the file's size alone said "points in the outbox" too early.
    wait_until(lambda: _outbox_points(spool) > 0, timeout_s=120, what="points in the outbox")
    held = _outbox_points(spool)  # it only grows until the kill: the collector stores nothing
    assert 0 == _stored(collector, "slow")
    kill_host(bus, [])
    collector.ingest.response_delay_s = 0.05
    stdout, _ = finished(proc, timeout_s=300)
    _check(collector, "slow", events, json.loads(stdout.strip().splitlines()[-1]))
    log = Path(bus.host_log).read_text()
    resent = re.search(r"(\d+) points a dead host took are sent again from", log)
    assert resent is not None and int(resent.group(1)) >= held, (held, log)
    wait_until(lambda: not list(spool.glob("remote-outbox-*")), timeout_s=60, what="outbox gone")
