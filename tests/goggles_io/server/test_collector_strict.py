"""The collector under hostile or odd input: raw sockets against a real collector on loopback."""

from __future__ import annotations

import json
import logging
import socket
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from goggles_io.exceptions import ConfigurationError
from goggles_io.server.collector import Collector, is_loopback
from support import wait_until


def _strict(raw: bytes) -> Any:
    def refuse(name: str) -> Any:
        raise AssertionError(f"answer holds {name}: not JSON")

    return json.loads(raw, parse_constant=refuse)


def exchange(collector: Collector, raw: bytes, timeout_s: float = 10.0) -> tuple[int, Any, bool]:
    """Send raw bytes; return (status, JSON body, whether the server closed the connection)."""
    with socket.create_connection((collector.host, collector.port), timeout=timeout_s) as sock:
        sock.sendall(raw)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            assert chunk, f"connection closed without an answer: {data!r}"
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = {k.lower(): v.strip() for k, _, v in (h.partition(":") for h in lines[1:])}
        length = int(headers["content-length"])
        while len(body) < length:
            body += sock.recv(65536)
        closes = headers.get("connection", "").lower() == "close"
        return int(lines[0].split()[1]), _strict(body[:length]), closes


def post(path: str, body: bytes, extra: str = "") -> bytes:
    head = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n{extra}\r\n"
    return head.encode() + body


@pytest.fixture
def collector() -> Iterator[Collector]:
    with Collector(read_timeout_s=5.0) as running:
        running.store.register({"run_id": "r1"})
        yield running


def points_body(*points: dict[str, Any]) -> bytes:
    return json.dumps({"points": list(points)}).encode()


class TestTransportLevel:
    def test_accepted_connections_have_tcp_nodelay(self, collector: Collector) -> None:
        """The server side of every connection has Nagle off (no delayed-ACK stall)."""
        with socket.create_connection((collector.host, collector.port)) as sock:
            sock.sendall(b"GET /runs HTTP/1.1\r\nHost: x\r\n\r\n")
            sock.recv(65536)
            conns = wait_until(lambda: collector.connections, what="connection tracked")
            flags = [c.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) for c in conns]

        assert all(flags) and flags

    def test_answer_is_one_write(self, collector: Collector) -> None:
        """Headers and body arrive together: the first recv holds the whole answer."""
        with socket.create_connection((collector.host, collector.port), timeout=10) as sock:
            sock.sendall(b"GET /runs HTTP/1.1\r\nHost: x\r\n\r\n")
            first = sock.recv(65536)

        head, _, body = first.partition(b"\r\n\r\n")
        assert b"200 OK" in head and _strict(body)["runs"]

    def test_burst_of_200_connections_all_answered(self, collector: Collector) -> None:
        """200 clients connecting at once are all queued and answered (backlog 1024)."""
        results: list[int] = []
        lock = threading.Lock()

        def one() -> None:
            status, _, _ = exchange(collector, b"GET /runs HTTP/1.1\r\nHost: x\r\n\r\n", 60.0)
            with lock:
                results.append(status)

        threads = [threading.Thread(target=one) for _ in range(200)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(90)

        assert [200] * 200 == results


class TestBodies:
    @pytest.mark.parametrize("value", ["-1", "abc", "1e3", "+5", " ", "99999999999999999999999"])
    def test_malformed_content_length_400_and_close(self, collector: Collector, value: str) -> None:
        """Any Content-Length that is not plain decimal digits (or is absurd) is refused."""
        raw = f"POST /runs/r1/points HTTP/1.1\r\nHost: x\r\nContent-Length: {value}\r\n\r\n"
        status, body, closes = exchange(collector, raw.encode() + b"{}")

        assert (status in (400, 413), closes) == (True, True)
        assert "Content-Length" in body["error"] or "limit" in body["error"]
        assert [] == collector.points("r1")

    def test_over_limit_413_is_seen_by_the_client(self) -> None:
        """A body over max_body_bytes gets 413 (read away, so the client sees it) and nothing is stored."""
        with Collector(max_body_bytes=1000) as small:
            small.store.register({"run_id": "r1"})
            big = points_body(*({"seq": i, "name": "x", "value": 1.0} for i in range(1, 200)))
            status, body, closes = exchange(small, post("/runs/r1/points", big))

            assert (413, 1000, True) == (status, body["limit"], closes)
            assert [] == small.points("r1")

    def test_chunked_body_accepted_under_limit(self, collector: Collector) -> None:
        """A chunked body is decoded and stored."""
        body = points_body({"seq": 1, "name": "x", "value": 1.5})
        chunks = b"".join(
            b"%x\r\n%s\r\n" % (len(body[i : i + 7]), body[i : i + 7])
            for i in range(0, len(body), 7)
        )
        raw = b"POST /runs/r1/points HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        status, reply, _ = exchange(collector, raw + chunks + b"0\r\n\r\n")

        assert (200, 1) == (status, reply["accepted"])

    def test_chunked_body_over_limit_413(self) -> None:
        """Chunked bodies are held to the same limit."""
        with Collector(max_body_bytes=100) as small:
            small.store.register({"run_id": "r1"})
            raw = b"POST /runs/r1/points HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            status, _, closes = exchange(small, raw + b"80\r\n" + b"x" * 128 + b"\r\n0\r\n\r\n")

            assert (413, True) == (status, closes)

    def test_key_checked_before_any_body_is_read(self) -> None:
        """With a key set, a stranger declaring a huge body gets 401 at once."""
        with Collector(api_key="right") as keyed:
            raw = b"POST /runs HTTP/1.1\r\nHost: x\r\nContent-Length: 40000000\r\n\r\n"
            status, _, closes = exchange(keyed, raw)

            assert (401, True) == (status, closes)

    def test_half_sent_body_times_out_with_408(self) -> None:
        """A body that never arrives frees the thread after read_timeout_s with a 408."""
        with Collector(read_timeout_s=0.3) as quick:
            raw = b"POST /runs HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"
            status, body, closes = exchange(quick, raw)

            assert (408, True) == (status, closes)
            assert "0.3" in body["error"]

    def test_nan_constant_in_body_400(self, collector: Collector) -> None:
        """NaN / Infinity literals are not JSON and are refused."""
        status, body, _ = exchange(
            collector,
            post("/runs/r1/points", b'{"points": [{"seq": 1, "name": "x", "value": Infinity}]}'),
        )

        assert 400 == status and "Infinity" in body["error"]


class TestPointValidation:
    @pytest.mark.parametrize(
        ("point", "field"),
        [
            ({"seq": 1, "name": "x", "value": "abc"}, "value"),
            ({"seq": 1, "name": "x", "value": {}}, "value"),
            ({"seq": 1, "name": "x", "value": True}, "value"),
            ({"seq": 1, "name": "x", "value": 1e999}, "value"),
            ({"seq": True, "name": "x", "value": 1.0}, "seq"),
            ({"seq": -1, "name": "x", "value": 1.0}, "seq"),
            ({"seq": 2**63, "name": "x", "value": 1.0}, "seq"),
            ({"seq": 1, "name": "x", "value": 1.0, "step": 2**70}, "step"),
            ({"seq": 1, "name": "x", "value": 1.0, "step": 1.5}, "step"),
            ({"seq": 1, "name": "\ud800", "value": 1.0}, "name"),
            ({"seq": 1, "name": "", "value": 1.0}, "name"),
        ],
    )
    def test_unstorable_point_422_names_it(
        self, collector: Collector, point: dict[str, Any], field: str
    ) -> None:
        """Each point the collector cannot store is named in a 422; nothing of the batch is stored."""
        good = {"seq": 2, "name": "ok", "value": 1.0}
        raw = json.dumps({"points": [good, point]}).replace("1e999", "1e999").encode()
        if point.get("value") == 1e999:
            raw = raw.replace(b"Infinity", b"1e999")
        status, body, closes = exchange(collector, post("/runs/r1/points", raw))

        assert (422, False) == (status, closes)
        assert [1] == [item["index"] for item in body["invalid"]]
        assert field in body["invalid"][0]["error"]
        assert [] == collector.points("r1")

    def test_int_value_stored_as_number_null_as_null(self, collector: Collector) -> None:
        """An int value is a number; null (NaN on the client) stays null; nothing is TEXT."""
        body = points_body(
            {"seq": 1, "name": "a", "value": 3}, {"seq": 2, "name": "b", "value": None}
        )
        status, _, _ = exchange(collector, post("/runs/r1/points", body))

        assert 200 == status
        assert [3.0, None] == [p["value"] for p in collector.points("r1")]

    def test_old_rows_served_as_strict_json(self, tmp_path: Path) -> None:
        """Infinity or TEXT stored by an older collector is served back as null, never bare Infinity."""
        db = tmp_path / "old.sqlite"
        with Collector(db_path=str(db)) as first:
            first.store.register({"run_id": "r1"})
        raw = sqlite3.connect(db)
        raw.executemany(
            "INSERT INTO points (run_id, seq, name, value, step, time)"
            " VALUES ('r1', ?, 'x', ?, 1, 0.0)",
            [(1, float("inf")), (2, "abc")],
        )
        raw.commit()
        raw.close()
        with Collector(db_path=str(db)) as again:
            status, body, _ = exchange(again, b"GET /runs/r1/points HTTP/1.1\r\nHost: x\r\n\r\n")

        assert (200, [None, None]) == (status, [p["value"] for p in body["points"]])


class TestMethodsAndExposure:
    @pytest.mark.parametrize("method", ["PUT", "DELETE", "PATCH", "OPTIONS", "BREW"])
    def test_other_methods_get_json_405(self, collector: Collector, method: str) -> None:
        """Every method other than GET and POST gets a JSON 405, never HTML."""
        status, body, _ = exchange(
            collector, f"{method} /runs HTTP/1.1\r\nHost: x\r\n\r\n".encode()
        )

        assert 405 == status and method in body["error"]

    def test_bad_request_line_gets_json(self, collector: Collector) -> None:
        """A garbled request line is answered in JSON too."""
        status, body, closes = exchange(collector, b"NONSENSE\r\n\r\n")

        assert (400, True) == (status, closes) and body["error"]

    def test_beyond_loopback_requires_a_key(self) -> None:
        """Binding 0.0.0.0 without a key is refused with a message saying what to do."""
        with pytest.raises(ConfigurationError, match="API key"):
            Collector(host="0.0.0.0")

    def test_beyond_loopback_with_key_warns(self, caplog: pytest.LogCaptureFixture) -> None:
        """With a key it starts, and warns that it is reachable from other machines."""
        with caplog.at_level(logging.WARNING, "goggles_io.server.collector"):
            with Collector(host="0.0.0.0", api_key="k"):
                pass

        assert "reachable from other machines" in caplog.text

    def test_loopback_names(self) -> None:
        """localhost, 127/8 and ::1 are loopback; the wildcard and other names are not."""
        assert [True, True, True, False, False, False] == [
            is_loopback(h) for h in ("localhost", "127.0.0.2", "::1", "0.0.0.0", "", "example.org")
        ]

    def test_cli_refuses_wildcard_without_key(self, tmp_path: Path) -> None:
        """`telemetry collector --host 0.0.0.0` without a key exits 2 with one line, no traceback."""
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path)}
        done = subprocess.run(
            [sys.executable, "-m", "experiment_telemetry", "collector", "--host", "0.0.0.0",
             "--port", "0", "--db", str(tmp_path / "c.sqlite")],
            capture_output=True, text=True, timeout=60, env=env,
        )  # fmt: skip

        assert 2 == done.returncode
        assert "API key" in done.stderr and "Traceback" not in done.stderr


class TestStaleRuns:
    def test_silent_run_marked_stale_then_running_again(self, collector: Collector) -> None:
        """A running run quiet for 3 heartbeat periods shows as stale; a heartbeat revives it."""
        collector.store.register({"run_id": "quiet", "heartbeat_s": 0.05})

        wait_until(
            lambda: {r["run_id"]: r["status"] for r in collector.runs()}["quiet"] == "stale",
            what="run marked stale",
        )
        exchange(collector, post("/runs/quiet/heartbeat", b"{}"))

        assert "running" == {r["run_id"]: r["status"] for r in collector.runs()}["quiet"]
