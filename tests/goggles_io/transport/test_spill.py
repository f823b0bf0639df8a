"""The client queue and the shared-memory pool when full, with a real host: spill, block, drop
(ADR 0025); a producer's spill survives its host; no spool folder outlives a run."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

from goggles_io._util.liveness import pid_alive
from support import wait_until

_Q = {"GOGGLES_QUEUE_SIZE": "1000"}


def _say(proc: subprocess.Popen[str], line: str, expect: str | None = None) -> str:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(line + "\n")
    proc.stdin.flush()
    got = proc.stdout.readline().strip()
    if expect is not None:
        assert expect == got, got
    return got


def _start(bus: Any, n: int, kind: str = "scalars", **env: str) -> subprocess.Popen[str]:
    proc = bus.run("stepped.py", bus.jsonl, n, kind, **env)
    assert proc.stdout is not None
    assert "ready" == proc.stdout.readline().strip(), proc.stderr.read() if proc.stderr else ""
    return proc


def _log_with_host_stopped(bus: Any, proc: subprocess.Popen[str]) -> list[Path]:
    """Stop the host, have ``proc`` log its events, start the host again; the spool files then."""
    host = bus.host_pid()
    os.kill(host, signal.SIGSTOP)
    try:
        _say(proc, "log", "logged")
        return list(Path(bus.env["GOGGLES_SPOOL_DIR"]).rglob("*.seg"))
    finally:
        os.kill(host, signal.SIGCONT)


def _steps(bus: Any) -> list[int]:
    return [json.loads(line)["step"] for line in bus.lines()]


def _spool_folders(root: Path) -> list[str]:
    return sorted(p.name for p in root.glob("p*")) if root.exists() else []


class TestClientQueue:
    def test_spill_while_the_host_is_stopped_delivers_all_in_order(self, bus, finished) -> None:
        """Host SIGSTOPped, 20,000 scalars into a 1,000-event queue: all arrive, in order."""
        proc = _start(bus, 20_000, **_Q)
        spilled = any("client-" in str(p) for p in _log_with_host_stopped(bus, proc))
        report = json.loads(_say(proc, "finish"))
        finished(proc)

        assert spilled
        assert ({}, [20_001, 0]) == (report["transport"], report["handler"])
        assert list(range(20_001)) == _steps(bus)

    def test_block_waits_for_the_host_then_delivers(self, bus, finished) -> None:
        """GOGGLES_WHEN_FULL=block: with the host stopped 0.5 s the producer waits, loses nothing."""
        proc = _start(bus, 5_000, GOGGLES_WHEN_FULL="block", **_Q)
        host = bus.host_pid()
        os.kill(host, signal.SIGSTOP)
        timer = __import__("threading").Timer(0.5, os.kill, (host, signal.SIGCONT))
        timer.start()
        _say(proc, "log", "logged")
        timer.join()
        report = json.loads(_say(proc, "finish"))
        finished(proc)

        assert ({}, [5_001, 0]) == (report["transport"], report["handler"])

    def test_drop_policy_drops_and_counts_while_the_host_is_stopped(self, bus, finished) -> None:
        """GOGGLES_WHEN_FULL=drop: past the queue, events are dropped and counted, never waited."""
        proc = _start(bus, 20_000, GOGGLES_WHEN_FULL="drop", **_Q)
        _log_with_host_stopped(bus, proc)
        report = json.loads(_say(proc, "finish"))
        _, err = finished(proc)
        dropped = sum(report["transport"].values())

        assert dropped > 0 and 20_001 == dropped + sum(report["handler"]), (report, err)
        assert "to keep such bursts" in err and "GOGGLES_WHEN_FULL=spill" in err


class TestSharedMemoryPool:
    def test_images_past_the_pool_go_to_the_disk_pool_whole(self, bus, finished) -> None:
        """Host stopped, 100 x 1 MiB images past the 32 MiB pool: all arrive with their pixels."""
        proc = _start(bus, 100, "images")
        disk = [p for p in _log_with_host_stopped(bus, proc) if "diskpool-" in str(p)]
        report = json.loads(_say(proc, "finish"))
        finished(proc)
        sums = [json.loads(line)["payload"]["sum"] for line in bus.lines()[1:]]

        assert disk
        assert ({}, [101, 0]) == (report["transport"], report["handler"])
        assert [float(s % 256) for s in range(1, 101)] == sums

    def test_drop_policy_drops_images_past_pool_and_queue(self, bus, finished) -> None:
        """GOGGLES_WHEN_FULL=drop: images past the pool and the 16 MiB queue are dropped, counted
        (200: past the 96 MiB pool of ADR 0083 and the queue; 100 were before it)."""
        proc = _start(bus, 200, "images", GOGGLES_WHEN_FULL="drop")
        _log_with_host_stopped(bus, proc)
        report = json.loads(_say(proc, "finish"))
        finished(proc)
        dropped = sum(report["transport"].values())

        assert dropped > 0 and 201 == dropped + sum(report["handler"])


class TestHostDeath:
    def test_spilled_events_survive_a_host_sigkill(self, bus, finished) -> None:
        """Host SIGSTOPped, 20,000 scalars spilled, host SIGKILLed: the next host delivers them,
        and what was in flight to the dead host too (sent again, ADR 0030): nothing is missing."""
        proc = _start(bus, 20_000, **_Q)
        host = bus.host_pid()
        os.kill(host, signal.SIGSTOP)
        _say(proc, "log", "logged")
        os.kill(host, signal.SIGKILL)  # ends a stopped process too: no SIGCONT, whose target
        # may already be reaped (ProcessLookupError: failed 2 of 8 runs under load)
        wait_until(lambda: bus.host_pid() not in (None, host), what="a new host")
        report = json.loads(_say(proc, "finish"))
        _, err = finished(proc)
        steps = _steps(bus)

        assert {} == report["transport"], err
        assert set(range(20_001)) <= set(steps), err  # every event, spilled or in flight


class TestSpoolFolders:
    def test_no_folder_after_a_clean_run(self, bus, finished) -> None:
        """A run that spilled (client, disk pool and host lanes) leaves no spool folder."""
        proc = _start(bus, 50, "images", GOGGLES_QUEUE_BYTES=str(4 << 20))
        _say(proc, "log", "logged")
        _say(proc, "finish")
        finished(proc)
        root = Path(bus.env["GOGGLES_SPOOL_DIR"])
        wait_until(lambda: not bus.host_alive(), what="host exits")

        assert [] == _spool_folders(root)

    def test_crashed_producer_folder_removed_by_the_next_run(self, bus, finished) -> None:
        """A producer SIGKILLed while spilling leaves its folder; the next run that spills
        removes it, and leaves none of its own."""
        root = Path(bus.env["GOGGLES_SPOOL_DIR"])
        crashed = _start(bus, 20_000, **_Q)
        host = bus.host_pid()
        os.kill(host, signal.SIGSTOP)
        try:
            _say(crashed, "log", "logged")
            left = _spool_folders(root)
            crashed.kill()
            crashed.communicate(timeout=30)
        finally:
            os.kill(host, signal.SIGCONT)
        again = _start(bus, 20_000, **_Q)
        _log_with_host_stopped(bus, again)
        _say(again, "finish")
        _, err = finished(again)
        wait_until(lambda: not bus.host_alive(), what="host exits")

        assert [f"p{crashed.pid}-"] == [name[: len(str(crashed.pid)) + 2] for name in left]
        assert "removed the spool" in err + Path(bus.host_log).read_text()
        assert [] == _spool_folders(root)


def test_fifo_symlink_and_fifo_folder_in_the_spool_root_never_hang_a_spill(
    bus, finished, tmp_path: Path
) -> None:
    """A FIFO named like a spool folder, a symlink to an outside folder and a folder holding a
    FIFO in the spool root: the producer's first spill sweeps past them (the sweep used to open
    the FIFO and hang every log call), every event arrives, the symlink's target is untouched."""
    root = Path(bus.env["GOGGLES_SPOOL_DIR"])
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine")
    dead = list(itertools.islice((p for p in range(999_996, 1, -1) if not pid_alive(p)), 3))
    fifo, link, holder = (root / f"p{pid}-1" for pid in dead)
    os.mkfifo(fifo)
    link.symlink_to(outside, target_is_directory=True)
    holder.mkdir()
    os.mkfifo(holder / "q")
    proc = _start(bus, 20_000, **_Q)
    watchdog = threading.Timer(60, proc.kill)  # a hung spill fails the test instead of hanging it
    watchdog.start()
    try:
        spilled = any("client-" in str(p) for p in _log_with_host_stopped(bus, proc))
        report = json.loads(_say(proc, "finish"))
        finished(proc)
    finally:
        watchdog.cancel()

    assert spilled
    assert ({}, [20_001, 0]) == (report["transport"], report["handler"])
    assert list(range(20_001)) == _steps(bus)
    assert "mine" == (outside / "keep.txt").read_text()
    assert (fifo.exists(), link.is_symlink(), (holder / "q").exists()) == (True, True, True)
