"""Acknowledged end to end (issue 29, "Must show"): what the chaos scenarios must deliver.

Three scenarios a user hit with default settings, each with a real dedicated host:

* the host SIGKILLed twice mid-burst while a 20 ms-per-image handler works: every scalar and
  image reaches the handler, a second sighting only ever as a marked redelivery, images intact,
  and the producer's FinishReport counts nothing lost;
* a sink costing ~60 µs of CPU per event, 200,000 scalars, then ``gg.finish()``: it waits while
  delivery makes progress, so all 200,000 are handled (the test prints how long finish took);
* 1,000,000 scalars in a tight loop into a ``LocalStorageHandler`` while two CPU hogs run: all
  of them in ``log.jsonl``, and ``run.kv`` and the FinishReport say nothing was lost.

Host-side handlers live in ``scripts/`` and reach the host through ``GOGGLES_HOST_IMPORTS``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from goggles_io.runs import read_kv
from host_kills import alive as _alive
from support import expect_line, send_line, wait_until

SCRIPTS = Path(__file__).parent / "scripts"
_SCALARS = 100_000  # the host-kill burst: scalars (step = index) ...
_IMAGES = 100  # ... and 1 MiB images, one after every 1,000 scalars
_BUSY_EVENTS = 200_000
_STEPS, _PER_STEP = 100_000, 10  # the tight loop: 1,000,000 scalars
_NONZERO_LOSS = re.compile(r"\b[1-9]\d* (?:dropped|lost|not delivered|uncounted)")


def _recording_sink() -> Any:
    """The scripts' ``recording_sink`` module: the test checks images with its checksum."""
    spec = importlib.util.spec_from_file_location("recording_sink", SCRIPTS / "recording_sink.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _LineCounter:
    """Counts the complete lines of a growing file, reading only what was appended."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0
        self._lines = 0

    def __call__(self) -> int:
        with contextlib.suppress(FileNotFoundError), open(self.path, "rb") as fh:
            fh.seek(self._offset)
            chunk = fh.read()
            end = chunk.rfind(b"\n") + 1
            self._lines += chunk.count(b"\n", 0, end)
            self._offset += end
        return self._lines


def _last_json(stdout: str) -> dict[str, Any]:
    return json.loads(stdout.strip().splitlines()[-1])


def _kill_host(bus: Any, not_pid: int | None = None) -> int:
    """SIGKILL the host now serving the bus (one other than ``not_pid``); wait until it is gone."""
    pid = wait_until(
        lambda: (p := bus.host_pid()) not in (None, not_pid) and bus.host_alive() and p,
        timeout_s=60,
        what="a live host to kill",
    )
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not _alive(pid), timeout_s=30, what=f"host {pid} gone")
    return int(pid)


def _clean_report(report: dict[str, Any], stderr: str) -> None:
    """Nothing lost, dropped or abandoned, in the FinishReport nor in the end-of-run line."""
    assert {} == report["transport"], (report, stderr)
    assert (0, 0, False) == (report["dropped"], report["lost"], report["timed_out"]), (
        report,
        stderr,
    )
    assert report["handler"] is not None and 0 == report["handler"][1], (report, stderr)
    assert not _NONZERO_LOSS.search(stderr), stderr


@contextlib.contextmanager
def _cpu_hogs(n: int) -> Iterator[list[subprocess.Popen[bytes]]]:
    """``n`` busy-loop processes: the loaded machine of a shared CI runner."""
    hogs: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(n):
            hogs.append(subprocess.Popen([sys.executable, "-c", "while True: pass"]))
        yield hogs
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait(timeout=30)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_host_killed_twice_mid_burst_loses_nothing(bus: Any, finished: Any) -> None:
    """Two host SIGKILLs while a 20 ms-per-image handler works through 100,000 scalars and
    100 x 1 MiB images: every event handled, duplicates only as marked redeliveries, images
    intact, 0 lost and 0 uncounted in the producer's FinishReport."""
    path = bus.root / "handled.jsonl"
    proc = bus.run(
        "acked_producer.py", path, _SCALARS, _IMAGES, GOGGLES_HOST_IMPORTS="recording_sink"
    )
    expect_line(proc, "ready")
    lines = _LineCounter(path)
    send_line(proc, "log")  # the first half of the burst
    wait_until(lambda: lines() >= 20_000, timeout_s=120, what="the first host handled 20,000")
    first = _kill_host(bus)
    expect_line(proc, "logged")
    after_first = lines()
    send_line(proc, "log")  # the second half: the producer elects a new host
    wait_until(
        lambda: lines() >= after_first + 10_000,
        timeout_s=120,
        what=f"the next host handled 10,000 more than the {after_first} before the first kill",
    )
    second = _kill_host(bus, not_pid=first)
    expect_line(proc, "logged")
    after_second = lines()
    send_line(proc, "finish")
    stdout, stderr = finished(proc, timeout_s=240)
    report = _last_json(stdout)

    sink = _recording_sink()
    seen: dict[tuple[str, int], list[bool]] = defaultdict(list)
    bad_images: list[int] = []
    for raw in path.read_text().splitlines():
        rec = json.loads(raw)
        seen[rec["k"], rec["i"]].append(rec["re"])
        if rec["k"] == "image" and rec["crc"] != sink.image_checksum(sink.make_image(rec["i"])):
            bad_images.append(rec["i"])
    missing_scalars = sorted(set(range(_SCALARS)) - {i for k, i in seen if k == "metric"})
    missing_images = sorted(set(range(_IMAGES)) - {i for k, i in seen if k == "image"})
    unmarked_twice = sorted(key for key, marks in seen.items() if not all(marks[1:]))
    redelivered = sum(1 for marks in seen.values() for mark in marks if mark)
    summary = {
        "killed": [first, second],
        "lines at the kills": [after_first, after_second],
        "missing scalars": len(missing_scalars),
        "missing images": len(missing_images),
        "handled twice, unmarked": len(unmarked_twice),
        "redelivered": redelivered,
        "bad images": len(bad_images),
        "report": report,
    }
    print(f"host killed twice: {summary}")

    assert first != second
    assert ([], []) == (missing_scalars[:20], missing_images), (summary, stderr)
    assert [] == unmarked_twice[:20], summary
    assert [] == bad_images, summary
    _clean_report(report, stderr)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_finish_waits_for_a_slow_sink(bus: Any, finished: Any) -> None:
    """A 60 µs-per-event host-side sink and 200,000 scalars, then ``gg.finish()`` with default
    settings: finish waits while the sink makes progress, so all 200,000 are handled."""
    bus.env.pop("GOGGLES_SHUTDOWN_TIMEOUT", None)  # default settings
    tally_path = bus.root / "busy.json"
    proc = bus.run("busy_producer.py", tally_path, _BUSY_EVENTS, GOGGLES_HOST_IMPORTS="busy_sink")
    stdout, stderr = finished(proc, timeout_s=240)
    report = _last_json(stdout)
    wait_until(lambda: not bus.host_alive(), timeout_s=120, what="the host gone")
    tally = {"handled": 0, "distinct": 0, "closed": False}  # the sink never got 5,000 events
    if tally_path.exists():
        tally = json.loads(tally_path.read_text())
    print(
        f"60 us sink: finish took {report['finish_s']} s after a {report['loop_s']} s loop; "
        f"handled {tally}; report {report}"
    )

    assert (_BUSY_EVENTS, _BUSY_EVENTS, True) == (
        tally["handled"],
        tally["distinct"],
        tally["closed"],
    ), (
        tally,
        report,
        stderr,
    )
    assert _BUSY_EVENTS == report["handler"][0], (report, stderr)
    _clean_report(report, stderr)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_tight_loop_with_cpu_hogs_writes_every_point(bus: Any, finished: Any) -> None:
    """10 scalars per step for 100,000 steps into a LocalStorageHandler with two CPU hogs
    running: exactly 1,000,000 metric points in ``log.jsonl``; run.kv and the FinishReport
    say nothing was lost."""
    bus.env.pop("GOGGLES_SHUTDOWN_TIMEOUT", None)  # default settings
    with _cpu_hogs(2):
        proc = bus.run("tight_loop.py", bus.root / "runs", _STEPS, _PER_STEP)
        stdout, stderr = finished(proc, timeout_s=280)
    report = _last_json(stdout)
    wait_until(lambda: not bus.host_alive(), timeout_s=120, what="the host gone")
    run_dir = Path(report["run_dir"])

    total = _STEPS * _PER_STEP
    points = 0
    distinct = bytearray(total)  # one flag per (step, name): ``m<k>`` at step s is s * 10 + k
    with open(run_dir / "log.jsonl", encoding="utf-8") as fh:
        for raw in fh:
            rec = json.loads(raw)
            if rec["kind"] != "metric":
                continue
            for name in rec["payload"]:
                points += 1
                distinct[rec["step"] * _PER_STEP + int(name[1:])] = 1
    kv = read_kv(run_dir / "run.kv")
    summary = {"points": points, "distinct": sum(distinct), "run.kv": kv, "report": report}
    print(f"tight loop with 2 CPU hogs: {summary}")

    assert (total, total) == (points, sum(distinct)), (summary, stderr)
    assert "done" == kv["status"] and 0 == int(kv.get("lost", 0)), summary
    _clean_report(report, stderr)
