"""-0.0 survives the collector: SQLite's REAL column stores it as the integer 0, so the store
keeps the sign beside it (issue 41, item 8); the run files always kept it."""

from __future__ import annotations

import math
import sqlite3
import struct
import tempfile
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nonfinite_json
from goggles_io.handlers.remote import RemoteHandler
from goggles_io.server.collector import Collector
from goggles_io.server.store import RunStore
from support import wait_until

_values = st.lists(
    st.one_of(
        st.sampled_from([-0.0, 0.0]),
        st.floats(allow_nan=False, allow_infinity=False),
        st.none(),
    ),
    min_size=1,
    max_size=50,
)


def _bits(value: float | None) -> bytes | None:
    return None if value is None else struct.pack("<d", value)


@pytest.fixture
def collector(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Collector]:
    for var in ("TELEMETRY_REMOTE_URL", "TELEMETRY_REMOTE_API_KEY", "TELEMETRY_NO_REMOTE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    with Collector(db_path=str(tmp_path / "c.sqlite")) as running:
        yield running


class TestSignedZero:
    @settings(max_examples=60, deadline=None)
    @given(values=_values)
    def test_store_reads_back_every_value_bit_for_bit(self, values: list[float | None]) -> None:
        """Whatever is stored (-0.0 among others) comes back with its sign, from both readers
        (the HTTP answer's ``points`` and the dashboard's ``points_after``)."""
        with tempfile.TemporaryDirectory() as folder:
            store = RunStore(str(Path(folder) / "c.sqlite"))
            try:
                store.register({"run_id": "r", "name": "r"})
                points = [
                    {"seq": i + 1, "name": "x", "value": v, "step": i} for i, v in enumerate(values)
                ]
                store.add_points("r", {"points": points})
                read = [p["value"] for p in store.points("r")]
                fed = [row[3] for row in store.points_after(0, 1000)]
            finally:
                store.close()

        assert list(map(_bits, values)) == list(map(_bits, read))
        assert list(map(_bits, values)) == list(map(_bits, fed))

    def test_older_database_gains_the_sign(self, tmp_path: Path) -> None:
        """A database written before the fix opens, keeps its rows, and stores -0.0 from then on."""
        path = tmp_path / "old.sqlite"
        db = sqlite3.connect(path)
        db.executescript(
            "CREATE TABLE runs (run_id TEXT PRIMARY KEY, name TEXT, config TEXT, info TEXT,"
            " status TEXT, registered REAL, last_seen REAL, finished REAL, last_seq INTEGER,"
            " gaps INTEGER, duplicates INTEGER, heartbeats INTEGER, summary TEXT);"
            "CREATE TABLE points (run_id TEXT, seq INTEGER, name TEXT, value REAL,"
            " step INTEGER, time REAL, PRIMARY KEY (run_id, seq));"
            "INSERT INTO runs VALUES ('r', 'r', '{}', '{}', 'running', 0, 0, NULL, 1, 0, 0, 0,"
            " '{}');"
            "INSERT INTO points VALUES ('r', 1, 'x', 2.5, 0, NULL);"
        )
        db.commit()
        db.close()
        store = RunStore(str(path))
        try:
            store.add_points("r", {"points": [{"seq": 2, "name": "x", "value": -0.0, "step": 1}]})
            values = [p["value"] for p in store.points("r")]
        finally:
            store.close()

        assert [2.5, -0.0] == values
        assert -1.0 == math.copysign(1.0, values[1])

    def test_remote_handler_to_collector_keeps_the_sign(self, collector: Collector) -> None:
        """End to end over HTTP: 10,000 points, every tenth -0.0, read back with the sign."""
        handler = RemoteHandler(server_url=collector.url, run_name="signed zero")
        for i in range(10_000):
            handler.log_scalar("x", -0.0 if i % 10 == 0 else float(i), step=i)
        handler.close()
        [run] = collector.runs()
        wait_until(lambda: len(collector.points(run["run_id"])) == 10_000, what="every point")
        url = f"{collector.url}/runs/{run['run_id']}/points"
        with urllib.request.urlopen(url, timeout=30) as reply:
            answered = nonfinite_json.loads(reply.read())["points"]

        signs = [math.copysign(1.0, p["value"]) for p in answered]
        assert 1_000 == signs.count(-1.0)
        assert all(p["value"] == 0.0 for p in answered if math.copysign(1.0, p["value"]) < 0)
