"""RemoteHandler's pipe past its memory budget: spilled to disk in order, refused only when the
spool is full (ADR 0025), against the real collector on 127.0.0.1."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from goggles_io.handlers.remote import RemoteHandler
from goggles_io.server.collector import Collector
from support import wait_until


@pytest.fixture
def collector(tmp_path: Path) -> Iterator[Collector]:
    with Collector(db_path=str(tmp_path / "c.sqlite")) as running:
        yield running


def _handler(collector: Collector, **kwargs: object) -> RemoteHandler:
    return RemoteHandler(server_url=collector.url, read_env=False, enabled=True, **kwargs)  # type: ignore[arg-type]


class TestSpill:
    def test_outage_of_a_minute_at_10k_points_per_second_loses_nothing(
        self, collector: Collector
    ) -> None:
        """600,000 points logged while the collector is down all arrive, once, in order."""
        handler = _handler(collector, close_timeout_s=120.0)
        handler.register()
        wait_until(lambda: collector.runs(), what="registered")
        collector.shutdown()
        longest = 0.0
        for step in range(600_000):
            started = time.perf_counter()
            handler.log_scalar("loss", 0.25, step)
            longest = max(longest, time.perf_counter() - started)
        spilled = handler.stats()["queued"]
        collector.start()
        handler.close()
        run = collector.runs()[0]
        stats = handler.stats()

        assert 0 == stats["refused_points"]
        assert (600_000, 600_000, 0) == (run["points"], run["last_seq"], run["gaps"])
        assert spilled > 0 and longest < 1.0  # never waited on the network

    def test_queue_past_its_bytes_spills_in_order(self, collector: Collector) -> None:
        """A 64 KiB memory budget, collector down: later points follow the spilled ones in order."""
        handler = _handler(collector, buffer_size=10, queue_bytes=64 * 1024)
        handler.register()
        wait_until(lambda: collector.runs(), what="registered")
        collector.shutdown()
        for step in range(5000):
            handler.log_scalar("loss", float(step), step)
        collector.start()
        handler.close()
        got = collector.points(handler.run_id)

        assert list(range(1, 5001)) == [p["seq"] for p in got]
        assert [float(s) for s in range(5000)] == [p["value"] for p in got]

    def test_refused_only_when_the_spool_is_full(
        self, collector: Collector, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A 256 KiB spool budget: past memory and spool, batches are refused and counted."""
        monkeypatch.setenv("GOGGLES_SPOOL_BYTES", str(256 * 1024))
        handler = _handler(collector, buffer_size=100, queue_bytes=64 * 1024)
        handler.register()
        wait_until(lambda: collector.runs(), what="registered")
        collector.shutdown()
        for step in range(50_000):
            handler.log_scalar("loss", 1.0, step)
        collector.start()
        handler.close()
        stats = handler.stats()
        stored = collector.runs()[0]["points"]

        assert 0 < stats["refused_points"] < 50_000
        assert 50_000 == stored + stats["refused_points"]


class TestRestart:
    def test_rebuilt_handler_numbers_after_the_points_stored(self, collector: Collector) -> None:
        """A second handler for the same run (a host restarted) is not taken for repeats."""
        first = _handler(collector, run_id="same-run")
        for step in range(100):
            first.log_scalar("loss", 1.0, step)
        first.close()
        again = _handler(collector, run_id="same-run")
        for step in range(100, 150):
            again.log_scalar("loss", 2.0, step)
        again.close()
        run = collector.runs()[0]

        assert (150, 150, 0, 0) == (run["points"], run["last_seq"], run["duplicates"], run["gaps"])
