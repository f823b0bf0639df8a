"""The collector skips a redelivered point by its producer's sequence, kept with the points
(issue 41; ADR 0069): a ``(run, producer, pseq, part)`` mark moves in the transaction that
inserts the points, so points a rebuilt sender numbers afresh (new ``seq``) but that carry the
same producer and sequence are stored once, however far back the repeat reaches; old clients
(no producer) are stored by ``seq`` as before."""

from __future__ import annotations

import json
import sqlite3
import tempfile
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goggles_io._event.remote_protocol import ProtocolError
from goggles_io.server.collector import Collector
from goggles_io.server.store import RunStore


def _point(
    seq: int, step: int, producer: str | None = None, pseq: int = 0, part: int = 0
) -> dict[str, Any]:
    point: dict[str, Any] = {"seq": seq, "name": "x", "value": float(step), "step": step}
    if producer is not None:
        point.update(producer=producer, pseq=pseq)
        if part:
            point["part"] = part
    return point


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RunStore]:
    found = RunStore(str(tmp_path / "c.sqlite"))
    found.register({"run_id": "r", "name": "r"})
    try:
        yield found
    finally:
        found.close()


def _steps(store: RunStore) -> list[int]:
    return [p["step"] for p in store.points("r")]


class TestProducerMarks:
    def test_a_resend_numbered_afresh_is_skipped_by_its_producer_sequence(
        self, store: RunStore
    ) -> None:
        """Host 1 stored steps 0-99; host 2 (a rebuilt sender, numbering its points after the
        run's last seq) sends steps 50-149 again: the run holds 0-149 once each, in order."""
        first = [_point(i + 1, i, "p1", (1 << 20) + i) for i in range(100)]
        again = [_point(101 + i, 50 + i, "p1", (1 << 20) + 50 + i) for i in range(100)]
        assert {"accepted": 100, "duplicates": 0, "gaps": 0} == store.add_points(
            "r", {"points": first}
        )
        answer = store.add_points("r", {"points": again})

        assert {"accepted": 50, "duplicates": 50, "gaps": 0} == answer
        assert list(range(150)) == _steps(store)
        assert {"p1": ((1 << 20) + 149, 0)} == store.producer_marks("r")

    def test_a_repeat_far_behind_any_window_is_skipped(self, store: RunStore) -> None:
        """A redelivery 100,000 points back is skipped as exactly as one a point back."""
        n = 100_000
        points = [_point(i + 1, i, "p1", i + 1) for i in range(n)]
        for at in range(0, n, 5000):
            store.add_points("r", {"points": points[at : at + 5000]})
        again = [_point(n + 1 + i, i, "p1", i + 1) for i in range(3)]

        assert 0 == store.add_points("r", {"points": again})["accepted"]
        assert n == len(store.points("r"))

    def test_parts_of_one_event_are_ordered_after_its_sequence(self, store: RunStore) -> None:
        """An event's metrics share its sequence and differ by ``part``: a batch that ended in
        the middle of an event, sent again whole, adds only the parts not stored."""
        store.add_points("r", {"points": [_point(1, 0, "p1", 7, 0), _point(2, 1, "p1", 7, 1)]})
        answer = store.add_points(
            "r",
            {
                "points": [
                    _point(3, 0, "p1", 7, 0),
                    _point(4, 1, "p1", 7, 1),
                    _point(5, 2, "p1", 7, 2),
                ]
            },
        )

        assert (1, 2) == (answer["accepted"], answer["duplicates"])
        assert [0, 1, 2] == _steps(store)

    def test_producers_are_independent_and_old_clients_are_stored_by_seq(
        self, store: RunStore
    ) -> None:
        """Two producers' marks do not interfere; a point without a producer is new unless its
        ``seq`` was stored (the old rule)."""
        store.add_points("r", {"points": [_point(1, 0, "a", 5), _point(2, 1, "b", 3)]})
        answer = store.add_points(
            "r", {"points": [_point(3, 2, "a", 4), _point(4, 3, "b", 4), _point(5, 4)]}
        )
        assert (2, 1) == (answer["accepted"], answer["duplicates"])
        assert 0 == store.add_points("r", {"points": [_point(5, 4)]})["accepted"]
        assert [0, 1, 3, 4] == _steps(store)

    def test_marks_survive_a_reopened_database(self, tmp_path: Path) -> None:
        """The marks are in the database file, committed with the points."""
        path = str(tmp_path / "c.sqlite")
        first = RunStore(path)
        first.register({"run_id": "r", "name": "r"})
        first.add_points("r", {"points": [_point(i + 1, i, "p1", i + 1) for i in range(10)]})
        first.close()
        second = RunStore(path)
        try:
            answer = second.add_points(
                "r", {"points": [_point(11, 9, "p1", 10), _point(12, 10, "p1", 11)]}
            )
            assert (1, 1) == (answer["accepted"], answer["duplicates"])
            assert list(range(11)) == [p["step"] for p in second.points("r")]
        finally:
            second.close()

    @pytest.mark.parametrize(
        "extra",
        [
            {"producer": "", "pseq": 1},
            {"producer": "p" * 129, "pseq": 1},
            {"producer": "p", "pseq": 0},
            {"producer": "p", "pseq": True},
            {"producer": "p"},
            {"pseq": 3},
            {"producer": "p", "pseq": 1, "part": -1},
            {"producer": 7, "pseq": 1},
        ],
    )
    def test_a_malformed_origin_is_refused_with_422_naming_the_point(
        self, store: RunStore, extra: dict[str, Any]
    ) -> None:
        """A producer, pseq or part that is not what the protocol says gets a 422 for that
        point; nothing of the batch is stored."""
        bad = {**_point(2, 1), **extra}
        with pytest.raises(ProtocolError) as caught:
            store.add_points("r", {"points": [_point(1, 0), bad]})
        assert 422 == caught.value.status
        assert [1] == [item["index"] for item in caught.value.body["invalid"]]
        assert [] == store.points("r")

    @settings(max_examples=40, deadline=None)
    @given(
        cuts=st.lists(st.integers(min_value=0, max_value=60), min_size=1, max_size=8),
        parts=st.integers(min_value=1, max_value=3),
    )
    def test_any_replay_of_any_prefix_stores_each_point_once_in_order(
        self, cuts: list[int], parts: int
    ) -> None:
        """However a sender dies and its successor replays (any prefix again, renumbered), the
        run holds each point once, in the producer's order."""
        events = 60
        points = [(e, k) for e in range(events) for k in range(parts)]
        with tempfile.TemporaryDirectory() as folder:
            store = RunStore(str(Path(folder) / "c.sqlite"))
            try:
                store.register({"run_id": "r", "name": "r"})
                seq = 0
                sent_to = 0
                for cut in [*cuts, events]:
                    start = min(cut, sent_to) * parts  # a successor resends from an older point
                    end = max(cut, sent_to) * parts
                    batch = []
                    for e, k in points[start:end]:
                        seq += 1
                        batch.append(_point(seq, e * parts + k, "p", e + 1, k))
                    if batch:
                        store.add_points("r", {"points": batch})
                    sent_to = max(sent_to, cut)
                assert list(range(events * parts)) == _steps(store)
            finally:
                store.close()

    def test_an_old_database_gains_the_producers_table(self, tmp_path: Path) -> None:
        """A database from before this change (no producers table) opens and works."""
        path = tmp_path / "old.sqlite"
        db = sqlite3.connect(path)
        db.executescript(
            "CREATE TABLE runs (run_id TEXT PRIMARY KEY, name TEXT, config TEXT, info TEXT,"
            " status TEXT, registered REAL, last_seen REAL, finished REAL, last_seq INTEGER,"
            " gaps INTEGER, duplicates INTEGER, heartbeats INTEGER, summary TEXT);"
            "CREATE TABLE points (run_id TEXT, seq INTEGER, name TEXT, value REAL, step INTEGER,"
            " time REAL, PRIMARY KEY (run_id, seq));"
        )
        db.close()
        store = RunStore(str(path))
        try:
            store.register({"run_id": "r", "name": "r"})
            store.add_points("r", {"points": [_point(1, 0, "p", 1), _point(2, 0, "p", 1)]})
            assert [0] == [p["step"] for p in store.points("r")]
        finally:
            store.close()


def test_over_http_the_collector_answers_what_it_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real collector on 127.0.0.1: a repeat of a producer's points, renumbered, is counted
    a duplicate in the answer and in the run's listing."""
    monkeypatch.chdir(tmp_path)
    with Collector(db_path=str(tmp_path / "c.sqlite")) as collector:

        def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
            request = urllib.request.Request(
                collector.url + path,
                data=json.dumps(body).encode(),
                headers={"Content-Type": "application/json"},
                method="POST",
            )
            with urllib.request.urlopen(request, timeout=30) as response:
                answer: dict[str, Any] = json.loads(response.read())
                return answer

        post("/runs", {"run_id": "r", "name": "r"})
        post("/runs/r/points", {"points": [_point(i + 1, i, "p", i + 1) for i in range(5)]})
        answer = post(
            "/runs/r/points", {"points": [_point(6 + i, i, "p", i + 1) for i in range(5)]}
        )

        assert {"accepted": 0, "duplicates": 5, "gaps": 0} == answer
        with urllib.request.urlopen(collector.url + "/runs", timeout=30) as response:
            run = json.loads(response.read())["runs"][0]
        assert (5, 5) == (run["points"], run["duplicates"])
