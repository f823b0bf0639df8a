"""Events across machines through a real Redis: exactly once, in order, through faults."""

from __future__ import annotations

import json
import signal
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support import wait_until

pytestmark = pytest.mark.slow


def _done(proc: Any, timeout_s: float = 120) -> dict[str, Any]:
    out, err = proc.communicate(timeout=timeout_s)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{out}\n{err}"
    return json.loads(out.strip().splitlines()[-1])


def _lines(path: Path) -> list[tuple[Any, ...]]:
    if not path.exists():
        return []
    return [tuple(json.loads(line)) for line in path.read_text().splitlines() if line]


@pytest.fixture
def out(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "handled.jsonl"


class TestExactlyOnce:
    def test_three_machines_one_consumer_every_event_once_in_order(self, machines, out) -> None:
        """3 producers (own sockets, own hosts) -> Redis -> 1 consumer: once each, in order."""
        consumer = machines.run("broker_consumer.py", out, 3 * 2000, machine="consumer")
        producers = [
            machines.run("broker_producer.py", f"m{i}", 2000, machine=f"m{i}") for i in range(3)
        ]
        for proc in producers:
            assert 0 == _done(proc)["dropped"]
        got = _done(consumer)
        rows = _lines(out)
        seen = Counter((metric, step) for metric, step, *_ in rows)

        assert 6000 == got["count"] == len(rows)
        assert {1} == set(seen.values())
        for i in range(3):
            steps = [step for metric, step, *_ in rows if metric == f"m{i}"]
            assert list(range(2000)) == steps  # per-producer order
        assert 0 == got["duplicates"] + got["malformed"]

    def test_killed_consumer_mid_batch_is_taken_over_without_repeats(self, machines, out) -> None:
        """SIGKILL a consumer inside a handler: a second one reclaims its entries, none twice."""
        first = machines.run("broker_consumer.py", out, 10**9, 700, machine="c1")
        assert "ready\n" == first.stdout.readline()
        finished = _done(machines.run("broker_producer.py", "m0", 1500, machine="m0"))
        assert 0 == finished["dropped"]
        assert "blocked\n" == first.stdout.readline()
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
        second = _done(
            machines.run("broker_consumer.py", out, 1500 - len(_lines(out)), machine="c2")
        )
        rows = _lines(out)
        seen = Counter((metric, step) for metric, step, *_ in rows)

        assert second["reclaimed"] >= 1
        assert 1500 == len(rows)
        assert {1} == set(seen.values())


class TestFaults:
    def test_server_restart_mid_run_loses_nothing_within_the_budget(
        self, machines, redis_server, out
    ) -> None:
        """Redis restarts empty while a producer logs and no consumer reads yet: the producer
        kept what no consumer had passed, sends it again, and every event arrives once."""
        producer = machines.run("broker_producer.py", "m0", 4000, "pause", machine="m0")
        assert ["ready\n", "half\n"] == [producer.stdout.readline() for _ in range(2)]
        redis_server.stop()
        producer.stdin.write("go\n")
        producer.stdin.flush()
        wait_until(lambda: "unreachable" in machines.host_log("m0"), what="forwarder saw Redis go")
        redis_server.start()  # empty: persistence is off, as after a crash without AOF
        consumer = machines.run("broker_consumer.py", out, 4000, machine="consumer")
        assert 0 == _done(producer)["dropped"]
        _done(consumer)
        steps = [step for _, step, *_ in _lines(out)]

        assert list(range(4000)) == steps  # the first half too: it was kept until passed
        assert "reachable again" in machines.host_log("m0")

    def test_unreachable_at_start_the_job_runs_and_reports_once(
        self, machines, redis_server
    ) -> None:
        """No Redis at all: the producer runs to the end, says so once, counts what it lost."""
        redis_server.stop()
        proc = machines.run(
            "broker_producer.py", "m0", 5000, machine="m0", GOGGLES_BROKER_BYTES="65536"
        )
        got = _done(proc)
        log = machines.host_log("m0")

        assert 1 == log.count("Redis unreachable")
        assert "5000 not delivered" in log  # spilled past the budget, counted at close
        assert got["lost"] > 0  # the forwarder's losses are in the FinishReport

    def test_drop_policy_drops_past_the_buffer_and_counts(self, machines, redis_server) -> None:
        """GOGGLES_WHEN_FULL=drop, no Redis: past the buffer's bytes events are dropped, counted."""
        redis_server.stop()
        proc = machines.run(
            "broker_producer.py",
            "m0",
            5000,
            machine="m0",
            GOGGLES_BROKER_BYTES="65536",
            GOGGLES_WHEN_FULL="drop",
        )
        got = _done(proc)
        log = machines.host_log("m0")

        assert "buffer of 65536 bytes full" in log
        assert got["lost"] > 0

    def test_hostile_entries_are_skipped_and_counted(self, machines, redis_server, out) -> None:
        """Entries that are not ours (missing fields, garbage payload) are skipped, counted."""
        client = redis_server.client()
        client.xadd("goggles_io:default", {"p": "x", "s": "1", "d": b"\xc1\xc1garbage"})
        client.xadd("goggles_io:default", {"junk": "1"})
        client.xadd("goggles_io:default", {"p": "y" * 300, "s": "-4", "d": b""})
        consumer = machines.run("broker_consumer.py", out, 100, machine="consumer")
        _done(machines.run("broker_producer.py", "m0", 100, machine="m0"))
        got = _done(consumer)

        assert (100, 3) == (got["count"], got["malformed"])

    def test_password_url_is_passed_to_the_client(self, password_redis, tmp_path: Path) -> None:
        """A password in the URL authenticates producer and consumer alike."""
        _server, m = password_redis
        consumer = m.run("broker_consumer.py", tmp_path / "o.jsonl", 50, machine="c")
        _done(m.run("broker_producer.py", "m0", 50, machine="m0"))

        assert 50 == _done(consumer)["count"]


def test_tls_url_gives_a_tls_client() -> None:
    """A rediss:// URL is handed to redis-py as is: its connections use TLS."""
    import redis

    from goggles_io._broker.forwarder import BrokerForwarder
    from goggles_io._broker.stream import redis_client
    from goggles_io._util.secret import Secret

    client = redis_client(Secret("rediss://:pw@127.0.0.1:6380/2"))

    assert client.connection_pool.connection_class is redis.SSLConnection
    assert "pw" not in repr(BrokerForwarder(url="rediss://:pw@127.0.0.1:6380/2").to_dict())


def test_bad_broker_url_is_refused_without_echoing_it() -> None:
    """http://... is not a broker URL: ConfigurationError, and the URL (maybe a password) not shown."""
    from goggles_io._broker.forwarder import BrokerForwarder
    from goggles_io.exceptions import ConfigurationError

    with pytest.raises(ConfigurationError, match="redis://") as info:
        BrokerForwarder(url="http://user:hunter2@example")
    assert "hunter2" not in str(info.value)


def test_from_broker_without_a_broker_says_how_to_set_one(monkeypatch) -> None:
    """attach(..., from_broker=True) with no broker raises, naming GOGGLES_BROKER."""
    import goggles_io as gg
    from goggles_io.exceptions import ConfigurationError
    from goggles_io.testing import MemoryHandler

    monkeypatch.delenv("GOGGLES_BROKER", raising=False)
    with pytest.raises(ConfigurationError, match="GOGGLES_BROKER"):
        gg.attach(MemoryHandler(name="m"), scopes=["*"], from_broker=True)
