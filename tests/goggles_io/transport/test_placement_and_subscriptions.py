"""Handlers placed where they can be built, live subscriptions, and byte-bounded queues.

Real processes on a real socket and host (dedicated unless a test says otherwise).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from support import wait_until

pytestmark = pytest.mark.slow
Bus = Any  # the ``bus`` fixture of this folder's conftest


def _json_line(out: str) -> dict[str, Any]:
    return json.loads(out.strip().splitlines()[-1])


class TestPlacement:
    def test_main_handler_sees_events_of_three_processes(
        self, bus: Bus, finished: Callable[..., Any]
    ) -> None:
        """A handler class from __main__ runs in its own process and gets everyone's events."""
        main = bus.run("main_handler.py", bus.jsonl, 2 * 300)
        assert main.stdout is not None
        assert "ready\n" == main.stdout.readline()
        others = [bus.run("plain_producer.py", 300) for _ in range(2)]
        for proc in others:
            finished(proc)
        out, err = finished(main)
        got = _json_line(out)
        pids = {pid for pid, _ in got["seen"]}

        assert 5 + 600 == len(got["seen"]), err
        assert {main.pid, *(p.pid for p in others)} == pids
        for proc in others:
            steps = [step for pid, step in got["seen"] if pid == proc.pid]
            assert list(range(300)) == steps  # per-producer order kept
        assert [True] == got["closed"]
        assert "is not registered" not in err

    def test_main_handler_with_in_process_host(
        self, bus: Bus, finished: Callable[..., Any]
    ) -> None:
        """With GOGGLES_DEDICATED_HOST=0 the same script works (the subscription is local)."""
        main = bus.run("main_handler.py", bus.jsonl, 0, GOGGLES_DEDICATED_HOST="0")
        out, _ = finished(main)
        assert 5 == len(_json_line(out.split("ready\n", 1)[1])["seen"])


class TestSubscriptions:
    def test_subscriber_process_reads_the_live_stream_in_order(
        self, bus: Bus, finished: Callable[..., Any]
    ) -> None:
        """A separate process subscribed to metrics receives every event, in order."""
        sub = bus.run("subscriber.py", "read", 2000)
        assert sub.stdout is not None
        assert "ready\n" == sub.stdout.readline()
        finished(bus.run("producer.py", bus.jsonl, 2000))
        got = _json_line(finished(sub)[0])

        assert {"received": 2000, "dropped": 0, "in_order": True} == got

    def test_stalled_subscriber_loses_counted_events_not_producer_latency(
        self, bus: Bus, finished: Callable[..., Any]
    ) -> None:
        """A subscriber that stops reading loses events (counted, none silently); the
        producer's p99 log-call latency stays in the range measured without it."""
        baseline = _json_line(finished(bus.run("timed_producer.py", 100_000, bus.jsonl))[0])
        sub = bus.run("subscriber.py", "stall", 100_000, SUBSCRIBER_HOST_QUEUE="2000")
        assert sub.stdout is not None
        assert "ready\n" == sub.stdout.readline()
        with_sub = _json_line(finished(bus.run("timed_producer.py", 100_000, bus.jsonl))[0])
        out, err = sub.communicate("go\n", timeout=120)  # the subscriber resumes reading
        got = _json_line(out)

        assert got["dropped"] > 0, err
        assert 100_000 + 2000 >= got["received"] + got["dropped"] >= 100_000
        assert with_sub["p99_us"] <= 5 * baseline["p99_us"] + 200, (baseline, with_sub)

    def test_killed_subscriber_leaves_host_and_handlers_unharmed(
        self, bus: Bus, finished: Callable[..., Any]
    ) -> None:
        """SIGKILL a subscriber mid-stream: the host keeps serving, the sink gets every event."""
        sub = bus.run("subscriber.py", "hold", 0)
        assert sub.stdout is not None
        assert "ready\n" == sub.stdout.readline()
        first = bus.run("producer.py", bus.jsonl, 3000)
        wait_until(lambda: len(bus.lines()) > 100, what="events flowing")
        sub.kill()
        sub.wait(timeout=30)
        finished(first)
        finished(bus.run("producer.py", bus.jsonl, 1000))

        assert 4000 == len(bus.lines())


class TestByteBudgets:
    @pytest.mark.parametrize(("what", "limit_mib"), [("text", 64), ("images", 128)])
    def test_slow_handler_bounds_producer_memory(
        self, bus: Bus, finished: Callable[..., Any], what: str, limit_mib: int
    ) -> None:
        """A flood into a slow handler grows the producer by less than the bound, and nothing is
        dropped: the producer keeps what the handler has not taken (its spool past its memory
        budget, ADR 0030) and finish waits while the handler makes progress."""
        proc = bus.run("memory_bound.py", what, GOGGLES_DEDICATED_HOST="0")
        out, err = finished(proc, timeout_s=240)
        got = _json_line(out)

        assert got["grew_mib"] < limit_mib, (got, err)
        assert 0 == got["dropped"], err
        assert {"text": 50_000, "images": 1_500}[what] == got["taken"], (got, err)


def test_get_bus_is_host_reports_the_election(monkeypatch: pytest.MonkeyPatch, bus: Bus) -> None:
    """Over the socket, get_bus().is_host is False with a dedicated host, True when hosting here."""
    import goggles_io as gg
    from goggles_io.testing import reset_defaults

    monkeypatch.setenv("GOGGLES_TRANSPORT", "socket")
    monkeypatch.setenv("GOGGLES_HOST_IDLE_TIMEOUT", "0.5")
    seen = []
    for dedicated in ("1", "0"):
        monkeypatch.setenv("GOGGLES_SOCKET", str(bus.root / f"is-host-{dedicated}.sock"))
        monkeypatch.setenv("GOGGLES_DEDICATED_HOST", dedicated)
        reset_defaults()
        seen.append(gg.get_bus().is_host)
        gg.finish(timeout=10)
    reset_defaults()

    assert [False, True] == seen


class TestFinishReportOverTheSocket:
    def test_handler_losses_reach_the_report_under_the_dedicated_host(
        self, bus: Bus, finished: Callable[..., Any]
    ) -> None:
        """A host-side handler's own refusals (losses()) are in FinishReport and on stderr."""
        out, err = finished(bus.run("report.py", 1000, 0, 30, GOGGLES_HOST_IMPORTS="lossy_sink"))
        got = _json_line(out)

        assert {"refused": 500} == got["handler"][2]
        assert 500 == got["lost"]
        assert "500 refused" in err

    def test_timed_out_finish_still_reports_what_was_not_handled(
        self, bus: Bus, finished: Callable[..., Any]
    ) -> None:
        """finish(timeout) against a slow handler: timed_out, and the unhandled rest is counted:
        kept for later (on disk for the next process), not also as dropped (issue 41)."""
        out, err = finished(bus.run("report.py", 400, 0.01, 1.5, GOGGLES_HOST_IMPORTS="lossy_sink"))
        got = _json_line(out)
        delivered, dropped, _, kept = got["handler"]

        assert got["timed_out"] is True
        assert kept > 0 and delivered + dropped + kept + got["transport"][0] >= 400, got
        assert kept <= got["transport"][1].get("kept for later", 0), got
        assert "finish:" in err
