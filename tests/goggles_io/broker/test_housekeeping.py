"""Runs tidy Redis after themselves; what a crash leaves is listed and pruned (ADR 0039)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from goggles_io._broker.housekeeping import list_runs, release_run, trim_handled

_SRC = Path(__file__).parents[3] / "src"


def _telemetry(*args: str, timeout_s: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(_SRC)}
    return subprocess.run(
        [sys.executable, "-m", "experiment_telemetry", *args],
        capture_output=True, text=True, timeout=timeout_s, env=env, check=False,
    )  # fmt: skip


def _stream(client: Any, run: str, entries: int, group: bool) -> str:
    stream = f"goggles_io:{run}"
    for i in range(entries):
        client.xadd(stream, {"p": "host:1:abc", "s": str(i + 1), "d": b"x"})
    if group:
        client.xgroup_create(stream, "goggles_io", id="0", mkstream=True)
    return stream


class TestTrim:
    def test_entries_every_group_acknowledged_are_trimmed(self, redis_server) -> None:
        """Read and acked by the group: gone; delivered but pending, or unread: kept."""
        client = redis_server.client()
        stream = _stream(client, "t", 10, group=True)
        got = client.xreadgroup("goggles_io", "c", {stream: ">"}, count=6)
        ids = [entry_id for entry_id, _ in got[0][1]]
        client.xack(stream, "goggles_io", *ids[:4])

        assert 4 == trim_handled(client, stream, exact=True)
        assert 6 == client.xlen(stream)  # 2 pending + 4 unread

    def test_a_group_whose_last_pending_entry_is_acked_meanwhile(self, redis_server) -> None:
        """Another consumer acknowledges the last pending entry between the group's view and
        XPENDING (two consumers, each trimming every second): the trim keeps what the group
        had not been given, and does not fail (it sent XTRIM "None", which ended the reading
        thread with an error reply)."""
        client = redis_server.client()
        stream = _stream(client, "race", 6, group=True)
        got = client.xreadgroup("goggles_io", "c", {stream: ">"}, count=4)
        ids = [entry_id for entry_id, _ in got[0][1]]
        seen = client.xinfo_groups(stream)  # 4 pending, as the trimming consumer saw it
        client.xack(stream, "goggles_io", *ids)  # the other consumer, meanwhile

        class Late:
            """The client as the trim used it: the group's view read before the ack."""

            def __getattr__(self, name: str) -> Any:
                return getattr(client, name)

            def xinfo_groups(self, name: str) -> Any:
                return seen

        assert 4 == trim_handled(Late(), stream, exact=True)
        assert 2 == client.xlen(stream)  # the two never read

    def test_a_stream_no_group_reads_is_kept_whole(self, redis_server) -> None:
        """No consumer group yet: one may come later, so nothing is trimmed."""
        client = redis_server.client()
        stream = _stream(client, "nogroup", 5, group=False)

        assert 0 == trim_handled(client, stream, exact=True)
        assert 5 == client.xlen(stream)

    def test_release_keeps_a_run_with_a_live_producer(self, redis_server) -> None:
        """Everything handled but a producer marker is there: its producer cleans up later."""
        client = redis_server.client()
        stream = _stream(client, "live", 0, group=True)
        client.set(f"{stream}:producer:host:1:abc", "1", ex=60)

        assert not release_run(client, stream)
        client.delete(f"{stream}:producer:host:1:abc")
        assert release_run(client, stream)
        assert [] == client.keys("goggles_io:*")


class TestListAndPrune:
    def _leftovers(self, client: Any) -> None:
        """What a killed producer and a never-read stream leave behind."""
        _stream(client, "crashed", 3, group=True)
        client.hset("goggles_io:crashed:goggles_io:seen", "host:1:abc", 1)
        client.set("goggles_io:crashed:producer:host:1:abc", "1", ex=86400)
        _stream(client, "default", 7, group=False)
        client.hset("goggles_io:gone:goggles_io:seen", "host:2:def", 5)  # stream already gone

    def test_list_names_each_run_and_what_it_holds(self, redis_server) -> None:
        """Each run once, with its entries, keys and whether a producer still lives."""
        client = redis_server.client()
        self._leftovers(client)
        found = {run.run: run for run in list_runs(client)}

        assert {"crashed", "default", "gone"} == set(found)
        assert (3, 1, 3) == (found["crashed"].entries, found["crashed"].live_producers,
                             len(found["crashed"].keys))  # fmt: skip
        assert (7, 7, 0) == (found["default"].entries, found["default"].unhandled,
                             found["default"].groups)  # fmt: skip

        out = _telemetry("broker", "list", "--url", redis_server.url)
        assert 0 == out.returncode, out.stderr
        assert "default: 7 entries (7 unhandled), 0 groups" in out.stdout
        assert "crashed:" in out.stdout and "1 live producers" in out.stdout

    def test_prune_removes_idle_runs_only(self, redis_server) -> None:
        """A run with a live producer marker stays; the idle ones go (--dry-run removes none)."""
        client = redis_server.client()
        self._leftovers(client)
        dry = _telemetry("broker", "prune", "--url", redis_server.url, "--dry-run")
        assert 0 == dry.returncode, dry.stderr
        assert "would remove 2 runs" in dry.stdout
        assert 5 == len(client.keys("goggles_io:*"))

        out = _telemetry("broker", "prune", "--url", redis_server.url)
        assert 0 == out.returncode, out.stderr
        assert "removed 2 runs" in out.stdout
        left = sorted(k.decode() for k in client.keys("goggles_io:*"))
        assert all(k.startswith("goggles_io:crashed") for k in left), left

    def test_a_producer_silent_past_idle_no_longer_keeps_its_run(self, redis_server) -> None:
        """A marker last refreshed 700 s ago (a killed producer): idle after --idle 600 (the
        default), still live with --idle 1000."""
        client = redis_server.client()
        _stream(client, "killed", 4, group=True)
        client.set("goggles_io:killed:producer:host:9:abc", "1", ex=86400 - 700)
        keep = _telemetry("broker", "prune", "--url", redis_server.url, "--idle", "1000")
        assert "removed 0 runs" in keep.stdout, keep.stderr

        out = _telemetry("broker", "prune", "--url", redis_server.url)
        assert "removed 1 runs" in out.stdout, out.stderr
        assert [] == client.keys("goggles_io:*")

    def test_prune_of_named_runs_only(self, redis_server) -> None:
        """--run limits prune to that run."""
        client = redis_server.client()
        self._leftovers(client)
        out = _telemetry("broker", "prune", "--url", redis_server.url, "--run", "default")
        assert 0 == out.returncode, out.stderr
        assert 0 == client.exists("goggles_io:default")
        assert 1 == client.exists("goggles_io:gone:goggles_io:seen")

    @pytest.mark.parametrize(
        "url", ["redis://127.0.0.1:99999/0", "http://x", "redis://127.0.0.1:1/0"]
    )
    def test_a_bad_or_dead_url_is_one_line_exit_2(self, url: str) -> None:
        """A port out of range, a non-Redis URL, nothing listening: one line, exit 2."""
        out = _telemetry("broker", "list", "--url", url)
        assert (2, 1) == (out.returncode, len(out.stderr.strip().splitlines())), out.stderr
        assert "Traceback" not in out.stderr


def test_a_producer_and_consumer_leave_nothing(machines, redis_server, tmp_path: Path) -> None:
    """One producer machine, one consumer: after both ended, Redis holds none of the run."""
    handled = tmp_path / "handled.jsonl"
    consumer = machines.run("broker_consumer.py", handled, 500, machine="consumer")
    producer = machines.run("broker_producer.py", "m0", 500, machine="m0")
    for proc in (producer, consumer):
        out, err = proc.communicate(timeout=120)
        assert 0 == proc.returncode, err
    assert 500 == json.loads(out.strip().splitlines()[-1])["count"]
    client = redis_server.client()
    from support import wait_until

    wait_until(
        lambda: not client.keys("goggles_io:*"),
        timeout_s=30,
        what=f"Redis empty of the run (holds {client.keys('goggles_io:*')})",
    )


def test_documented_broker_commands_run_against_a_real_redis(redis_server) -> None:
    """Every `telemetry broker` line of docs/cross-machine.md exits 0 (its URL made this one's)."""
    doc = (Path(__file__).parents[3] / "docs" / "cross-machine.md").read_text(encoding="utf-8")
    lines = [
        line.split(" #")[0].split()
        for line in doc.splitlines()
        if line.startswith("telemetry broker ")
    ]
    assert len(lines) >= 3
    client = redis_server.client()
    _stream(client, "exp-42", 2, group=True)
    for argv in lines:
        argv = [redis_server.url if a.startswith("redis://") else a for a in argv]
        out = _telemetry(*argv[1:])
        assert 0 == out.returncode, (argv, out.stderr)
    assert [] == client.keys("goggles_io:*")
