"""Two producer machines, one consumer, and Redis SIGKILLed mid-run (issue 23, ADR 0029).

Each test: per producer, events handled exactly once + losses counted in its FinishReport equal
what it logged; each producer's events are handled in the order it logged them; what was logged
before Redis came back is handled within 5 s of the restart.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from support import wait_until

pytestmark = pytest.mark.slow

_PRODUCERS = 2
_BACKLOG_S = 5.0


def _rows(path: Path) -> list[list[Any]]:
    """The consumer's lines: metric, step, producer pid, value (logged at), handled at."""
    if not path.exists():
        return []
    whole = path.read_text().split("\n")[:-1]  # a line still being written is left out
    return [json.loads(line) for line in whole if line]


def _report(proc: Any) -> dict[str, Any]:
    """The JSON a script printed last, and its stderr under ``"stderr"``."""
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{out}\n{err}"
    return {**json.loads(out.strip().splitlines()[-1]), "stderr": err}


class _Run:
    """Producers logging at a steady rate through ``server``, one consumer writing ``out``."""

    def __init__(self, machines: Any, out: Path, n: int, rate: int) -> None:
        self.machines, self.out, self.n = machines, out, n
        self.consumer = machines.run(
            "broker_consumer.py",
            out,
            _PRODUCERS * (n + 1),  # and one warm-up event each
            machine="consumer",
            CONSUMER_DEADLINE_S="150",
            GOGGLES_BROKER_CLAIM_IDLE_MS="30000",  # the default: no test-only shortcut
        )
        assert "ready\n" == self.consumer.stdout.readline()
        self.producers = [
            machines.run("broker_producer.py", f"m{i}", n, rate, machine=f"m{i}")
            for i in range(_PRODUCERS)
        ]
        for proc in self.producers:
            assert "ready\n" == proc.stdout.readline()

    def flowing(self, after: int) -> bool:
        """Over ``after`` more events of each producer handled: both are sending."""
        steps = Counter(row[0] for row in _rows(self.out) if row[0] != "warm")
        return len(steps) == _PRODUCERS and min(steps.values()) > after

    def outage(self, server: Any, *, down_s: float = 0.0) -> float:
        """SIGKILL Redis in steady flow, start it again on its port; when it answered."""
        before = min(Counter(r[0] for r in _rows(self.out) if r[0] != "warm").values(), default=0)
        wait_until(lambda: self.flowing(before + 1000), timeout_s=60, what="both producers flow")
        server.kill()
        if down_s:
            time.sleep(down_s)  # the outage itself, not a wait for a condition
        server.start()
        return time.time()

    def check(self, restarts: list[float]) -> dict[str, Any]:
        self.reports = reports = [_report(proc) for proc in self.producers]
        consumer = _report(self.consumer)
        rows = _rows(self.out)
        for i, report in enumerate(reports):
            steps = [row[1] for row in rows if row[0] == f"m{i}"]
            repeats = [s for s, k in Counter(steps).items() if k > 1]
            lost = report["dropped"] + report["lost"]
            assert [] == repeats, f"m{i} handled twice: {repeats[:10]}"
            assert self.n == len(steps) + lost, (f"m{i}", len(steps), report)
            assert steps == sorted(steps), f"m{i} out of order"
            assert 0 == lost, (f"m{i}", report)  # within every budget: nothing is lost
        for restart in restarts:
            for i in range(_PRODUCERS):  # the fault hit mid-run: both were still logging
                assert any(row[3] > restart for row in rows if row[0] == f"m{i}"), f"m{i}"
            backlog = [row[4] for row in rows if row[3] < restart]
            late = max(backlog) - restart
            timeline = Counter(int(row[4] - restart) for row in rows if row[3] < restart)
            assert late <= _BACKLOG_S, (
                f"backlog handled {late:.1f} s after the restart; per second: {timeline}"
            )
        return consumer


def test_restart_empty_mid_run(machines, redis_server, tmp_path: Path) -> None:
    """No persistence: Redis comes back with nothing; the producers send what no consumer
    had passed again, and the consumer skips what it had already handled."""
    run = _Run(machines, tmp_path / "handled.jsonl", 20_000, 2500)
    restart = run.outage(redis_server)
    run.check([restart])


def test_restart_with_aof_mid_run(aof_machines, aof_redis_server, tmp_path: Path) -> None:
    """With its append-only file Redis keeps every entry; the consumer's own unacknowledged
    entries are handled right after the restart, not after the claim timeout."""
    run = _Run(aof_machines, tmp_path / "handled.jsonl", 20_000, 2500)
    restart = run.outage(aof_redis_server)
    got = run.check([restart])
    assert 0 == got["reclaimed"]  # its own entries were not left for XAUTOCLAIM


def test_restart_twice(machines, redis_server, tmp_path: Path) -> None:
    """Two empty restarts in one run."""
    run = _Run(machines, tmp_path / "handled.jsonl", 40_000, 2500)
    first = run.outage(redis_server)
    second = run.outage(redis_server)
    run.check([first, second])


def test_redis_down_for_20_s(machines, redis_server, tmp_path: Path) -> None:
    """Down 20 s while the producers go on logging: they buffer, then everything flows."""
    run = _Run(machines, tmp_path / "handled.jsonl", 30_000, 1000)
    restart = run.outage(redis_server, down_s=20.0)
    run.check([restart])
