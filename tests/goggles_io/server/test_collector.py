"""Tests for goggles_io.server.collector: the reference HTTP collector over real sockets and SQLite."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from goggles_io.server.collector import Collector


def request(
    collector: Collector, method: str, path: str, body: Any = None, key: str | None = None
) -> tuple[int, Any]:
    conn = http.client.HTTPConnection(collector.host, collector.port, timeout=10)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    data = (
        None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    )
    conn.request(method, path, body=data, headers=headers)
    response = conn.getresponse()
    status, reply = response.status, json.loads(response.read())
    conn.close()
    return status, reply


def points(start: int, stop: int) -> dict[str, Any]:
    return {
        "points": [
            {"seq": i, "name": "loss", "value": i / 2, "step": i} for i in range(start, stop)
        ]
    }


@pytest.fixture
def collector() -> Iterator[Collector]:
    with Collector() as running:
        request(running, "POST", "/runs", {"run_id": "r1", "name": "run one", "config": {"lr": 1}})
        yield running


class TestCollector:
    def test_registered_run_listed_with_config(self, collector: Collector) -> None:
        """GET /runs lists a registered run with its name and config."""
        status, reply = request(collector, "GET", "/runs")

        assert 200 == status
        assert ("r1", "run one", {"lr": 1}) == (
            reply["runs"][0]["run_id"],
            reply["runs"][0]["name"],
            reply["runs"][0]["config"],
        )

    def test_points_read_back_in_sequence_order(self, collector: Collector) -> None:
        """Points posted in two batches come back from GET in sequence order."""
        request(collector, "POST", "/runs/r1/points", points(3, 6))
        request(collector, "POST", "/runs/r1/points", points(1, 3))
        _, reply = request(collector, "GET", "/runs/r1/points")

        assert [1, 2, 3, 4, 5] == [p["seq"] for p in reply["points"]]

    def test_duplicate_batch_stored_once(self, collector: Collector) -> None:
        """A batch posted twice (a retry after a lost response) is stored once."""
        request(collector, "POST", "/runs/r1/points", points(1, 4))
        _, reply = request(collector, "POST", "/runs/r1/points", points(1, 4))

        assert {"accepted": 0, "duplicates": 3, "gaps": 0} == reply
        assert 3 == len(collector.points("r1"))

    def test_gap_in_sequence_counted(self, collector: Collector) -> None:
        """A jump in sequence numbers (refused batches) is counted on the run."""
        request(collector, "POST", "/runs/r1/points", points(1, 3))
        request(collector, "POST", "/runs/r1/points", points(10, 12))

        assert 1 == collector.runs()[0]["gaps"]

    def test_heartbeat_and_finish_recorded(self, collector: Collector) -> None:
        """Heartbeats are counted and finish sets the status and summary."""
        request(collector, "POST", "/runs/r1/heartbeat", {})
        request(collector, "POST", "/runs/r1/finish", {"status": "done", "summary": {"n": 2}})
        run = collector.runs()[0]

        assert (1, "done", {"n": 2}) == (run["heartbeats"], run["status"], run["summary"])

    def test_reregistration_merges_config(self, collector: Collector) -> None:
        """Registering the same run again merges the new config keys."""
        request(collector, "POST", "/runs", {"run_id": "r1", "config": {"bs": 32}})

        assert {"lr": 1, "bs": 32} == collector.runs()[0]["config"]

    def test_points_for_unknown_run_404(self, collector: Collector) -> None:
        """Points for a run never registered get a 404 JSON error."""
        status, reply = request(collector, "POST", "/runs/nope/points", points(1, 2))

        assert 404 == status
        assert "nope" in reply["error"]

    def test_malformed_json_400(self, collector: Collector) -> None:
        """A body that is not JSON gets a 400 JSON error."""
        status, reply = request(collector, "POST", "/runs/r1/points", b"{not json")

        assert 400 == status
        assert "JSON" in reply["error"]

    def test_malformed_point_422(self, collector: Collector) -> None:
        """A point without a sequence number is rejected with 422 and nothing is stored."""
        status, _ = request(collector, "POST", "/runs/r1/points", {"points": [{"name": "x"}]})

        assert 422 == status
        assert [] == collector.points("r1")


class TestCollectorAuth:
    def test_wrong_key_401_json(self) -> None:
        """With an API key set, a wrong bearer token gets a 401 JSON error."""
        with Collector(api_key="right") as collector:
            status, reply = request(collector, "GET", "/runs", key="wrong")

        assert 401 == status
        assert "API key" in reply["error"]

    def test_right_key_accepted(self) -> None:
        """The right bearer token is accepted."""
        with Collector(api_key="right") as collector:
            status, _ = request(collector, "GET", "/runs", key="right")

        assert 200 == status

    def test_key_not_in_repr(self) -> None:
        """The collector's repr never shows its API key."""
        collector = Collector(api_key="s3cret-value")

        assert "s3cret-value" not in repr(collector)
        collector.close()


class TestCollectorRestart:
    def test_restart_on_same_port_keeps_runs(self, tmp_path: Path) -> None:
        """A collector shut down and started again serves the same port and the same runs."""
        collector = Collector(db_path=str(tmp_path / "runs.sqlite")).start()
        port = collector.port
        request(collector, "POST", "/runs", {"run_id": "r1"})
        collector.shutdown()
        collector.start()
        _, reply = request(collector, "GET", "/runs")
        collector.close()

        assert port == collector.port
        assert ["r1"] == [r["run_id"] for r in reply["runs"]]

    def test_shutdown_drops_keepalive_connections(self) -> None:
        """After shutdown an open keep-alive connection no longer gets answers."""
        collector = Collector().start()
        conn = http.client.HTTPConnection(collector.host, collector.port, timeout=10)
        conn.request("GET", "/runs")
        conn.getresponse().read()
        collector.shutdown()

        with pytest.raises((OSError, http.client.HTTPException)):
            conn.request("GET", "/runs")
            conn.getresponse()
        conn.close()
        collector.close()
