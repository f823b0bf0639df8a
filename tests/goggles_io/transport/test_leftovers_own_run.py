"""Left-overs belong to their run (issue 41, item 2; ADR 0060).

A run's events kept for later (finish gave up on a hung sink) are replayed into the handlers of
the run that logged them: its own ``store`` writes its own ``log.jsonl``, its hung sink its own
file. The next run, whose ``LocalStorageHandler`` has the same name ``store``, gets only its own
events, in its own folder. Before ADR 0060 the old run's handlers were attached again on the
live host under the same names: the new run's ``store`` was ignored ("first registration wins")
and its events went into the old run's ``log.jsonl``. The same held without any left-overs when
the next run reached the host that the last one had finished on (within its idle timeout).
"""

from __future__ import annotations

import json
import os
import signal
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from support import wait_until

_OLD, _NEW = 20_000, 3_000
_NEW_FIRST = 100_000  # the new run's steps: never one of the old run's


def _report(stdout: str) -> dict[str, Any]:
    return json.loads(stdout.strip().splitlines()[-1])


def _steps(path: Path) -> Counter[int]:
    """How often each step is in a ``log.jsonl`` (storage) or a recording sink's file."""
    found: Counter[int] = Counter()
    for raw in path.read_text().splitlines():
        rec = json.loads(raw)
        found[rec["step"] if "step" in rec else rec["i"]] += 1
    return found


def _once(first: int, n: int) -> Counter[int]:
    return Counter(range(first, first + n))


def _no_leftovers(spool: Path) -> bool:
    return not any(spool.glob("leftover-*"))


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_leftovers_go_to_their_own_run_and_the_new_run_keeps_its_own(
    bus: Any, finished: Any
) -> None:
    """The old run's 20,000 events reach its own ``log.jsonl`` and its own hung sink, each once;
    the new run's 3,000 reach only the new run's ``log.jsonl``; both runs say ``lost=0``."""
    spool = Path(os.environ["GOGGLES_SPOOL_DIR"])
    runs, gate = bus.root / "runs", bus.root / "gate"
    env = {"GOGGLES_FINISH_STALL": "1", "GOGGLES_QUEUE_SIZE": "256"}
    env["GOGGLES_HOST_IMPORTS"] = "gated_sink"
    old = bus.run("run_producer.py", runs, gate, _OLD, 0, **env)
    stdout, stderr = finished(old, timeout_s=120)
    first = _report(stdout)
    assert first["timed_out"] and first["transport"].get("kept for later"), (first, stderr)
    assert not _no_leftovers(spool), "finish gave up: its events are kept for later"
    pid = bus.host_pid()  # the host hangs in the gated sink for good: the user kills it
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not bus.host_alive(), timeout_s=30, what="the hung host gone")
    gate.write_text("open")

    new = bus.run("run_producer.py", runs, "-", _NEW, _NEW_FIRST)
    stdout, stderr = finished(new, timeout_s=120)
    second = _report(stdout)
    assert (0, False) == (second["missing"], second["timed_out"]), (second, stderr)
    wait_until(lambda: _no_leftovers(spool), timeout_s=120, what="the left-overs delivered")

    old_dir, new_dir = Path(first["run_dir"]), Path(second["run_dir"])
    assert _once(0, _OLD) == _steps(old_dir / "log.jsonl")
    assert _once(0, _OLD) == _steps(old_dir / "gated.jsonl")
    assert _once(_NEW_FIRST, _NEW) == _steps(new_dir / "log.jsonl")
    assert not (new_dir / "gated.jsonl").exists(), "the new run has no gated sink"
    for folder in (old_dir, new_dir):
        kv = (folder / "run.kv").read_text()
        assert "status=done" in kv and "lost=0" in kv, kv
    assert "already attached" not in Path(bus.host_log).read_text(errors="replace")


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_the_next_run_on_a_lingering_host_gets_only_its_own_events(bus: Any, finished: Any) -> None:
    """Two runs one after the other on one host (it lingers 30 s after its last client): the
    second run's ``store`` is its own, not the first run's, which ended with its finish."""
    runs = bus.root / "runs"
    env = {"GOGGLES_HOST_IDLE_TIMEOUT": "30"}
    first = _report(finished(bus.run("run_producer.py", runs, "-", 1000, 0, **env))[0])
    host = bus.host_pid()
    second = _report(finished(bus.run("run_producer.py", runs, "-", 1000, 5000, **env))[0])
    assert host == bus.host_pid() and bus.host_alive(), "both runs used the same host"
    assert _once(0, 1000) == _steps(Path(first["run_dir"]) / "log.jsonl")
    assert _once(5000, 1000) == _steps(Path(second["run_dir"]) / "log.jsonl")
    assert "already attached" not in Path(bus.host_log).read_text(errors="replace")
    assert host is not None
    os.kill(host, signal.SIGKILL)  # it would linger 30 s
