"""A run that lost events says so: ``run.kv`` ``lost=N``, ``telemetry runs``, the end-of-run line.

In-process bus, a real handler that stops taking events: finish gives it up after
``GOGGLES_FINISH_STALL`` and the run records exactly what it did not take.
"""

from __future__ import annotations

import argparse
import threading
from pathlib import Path
from typing import ClassVar

import pytest

import goggles_io as gg
from experiment_telemetry.cli import runs as runs_cli
from goggles_io import Event, Kind
from goggles_io.handlers.base import BaseHandler
from goggles_io.runs import RunContext, read_kv, read_run, shown_status


class _StopsAfter(BaseHandler):
    """Takes ``limit`` events, then blocks until released (a sink whose service hung)."""

    capabilities: ClassVar[frozenset[Kind]] = frozenset(Kind)

    def __init__(self, name: str, limit: int) -> None:
        super().__init__(name=name)
        self.limit = limit
        self.handled = 0
        self.release = threading.Event()

    def handle(self, event: Event) -> None:
        if self.handled >= self.limit:
            self.release.wait(60)
        self.handled += 1


def _telemetry_runs(root: Path) -> int:
    parser = argparse.ArgumentParser(prog="telemetry")
    runs_cli.add_parser(parser.add_subparsers())
    args = parser.parse_args(["runs", str(root)])
    return int(args.handler(args))


def _log(n: int) -> None:
    log = gg.get_logger("t", with_metrics=True)
    for step in range(n):
        log.scalar("loss", 0.5, step=step)


def test_finish_inside_the_run_writes_lost_and_every_tool_shows_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GOGGLES_FINISH_STALL", "0.5")
    sink = _StopsAfter("hung", limit=300)
    try:
        with RunContext(project="p", driver="d", slug="lossy", root=tmp_path) as run:
            gg.attach(sink)
            _log(1_000)
            report = gg.finish()
    finally:
        sink.release.set()
    stats = report.handlers["hung"]
    assert (stats.logged, stats.delivered, stats.dropped) == (1_000, 300, 700)
    assert report.missing == 700

    kv = read_kv(run.dir / "run.kv")
    assert (kv["status"], kv["lost"]) == ("done", "700")
    assert shown_status(read_run(run.dir)) == "done (lost 700)"

    err = capfd.readouterr().err
    assert "finish: lost 700 events: hung: 300 delivered, 700 dropped" in err
    assert "700 not handled in time" in err

    assert _telemetry_runs(tmp_path) == 0
    line = capfd.readouterr().out.splitlines()[1]
    assert "done (lost 700)" in line


def test_a_finish_after_the_run_closed_rewrites_run_kv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The documented pattern: the ``with`` block ends, ``gg.finish()`` (or exit) comes later."""
    monkeypatch.setenv("GOGGLES_FINISH_STALL", "0.5")
    sink = _StopsAfter("late", limit=10)
    try:
        with RunContext(project="p", driver="d", slug="later", root=tmp_path) as run:
            gg.attach(sink)
            _log(50)
        assert "lost" not in read_kv(run.dir / "run.kv")
        gg.finish()
    finally:
        sink.release.set()
    kv = read_kv(run.dir / "run.kv")
    assert (kv["status"], kv["lost"]) == ("done", "40")


def test_a_run_that_lost_nothing_says_lost_0_and_shows_plain_done(tmp_path: Path) -> None:
    sink = _StopsAfter("fine", limit=10**9)
    with RunContext(project="p", driver="d", slug="clean", root=tmp_path) as run:
        gg.attach(sink)
        _log(100)
        report = gg.finish()
    assert report.missing == 0 and sink.handled == 100
    assert read_kv(run.dir / "run.kv")["lost"] == "0"
    assert shown_status(read_run(run.dir)) == "done"


def test_a_sink_detached_before_finish_is_still_in_the_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The harness detaches a run's sinks, then finishes: their losses must still count."""
    monkeypatch.setenv("GOGGLES_FINISH_STALL", "0.5")
    sink = _StopsAfter("detached", limit=5)
    try:
        with RunContext(project="p", driver="d", slug="det", root=tmp_path) as run:
            gg.attach(sink, scopes=["global"])
            _log(20)
            gg.detach("detached", "global")
            report = gg.finish()
    finally:
        sink.release.set()
    stats = report.handlers["detached"]
    assert (stats.logged, stats.delivered, stats.dropped) == (20, 5, 15)
    assert read_kv(run.dir / "run.kv")["lost"] == "15"
