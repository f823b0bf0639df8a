"""A config holding NaN/inf reaches the collector and comes back exactly, as strict JSON on the wire."""

from __future__ import annotations

import json
import math
import sqlite3
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import nonfinite_json
from goggles_io.handlers.remote import RemoteHandler
from goggles_io.server.collector import Collector
from support import wait_until


def refuse(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


@pytest.fixture
def collector(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Collector]:
    for var in ("TELEMETRY_REMOTE_URL", "TELEMETRY_REMOTE_API_KEY", "TELEMETRY_NO_REMOTE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    with Collector(db_path=str(tmp_path / "c.sqlite")) as running:
        yield running


class TestNonFiniteConfig:
    def test_nan_config_registers_and_reads_back_exactly(
        self, collector: Collector, tmp_path: Path
    ) -> None:
        """RemoteHandler sends the convention (no bare NaN, which the collector refuses with 400);
        the store keeps it strict, and the answer restores to the same floats."""
        handler = RemoteHandler(server_url=collector.url, run_name="nan config")
        handler.record_config({"lr": math.nan, "clip": [1.0, math.inf], "name": "NaN"})
        handler.register()
        wait_until(collector.runs, what="run registered")
        handler.close()
        with urllib.request.urlopen(f"{collector.url}/runs", timeout=30) as reply:
            body = reply.read()
        stored = (
            sqlite3.connect(tmp_path / "c.sqlite").execute("SELECT config FROM runs").fetchone()
        )
        [run] = nonfinite_json.loads(body)["runs"]

        json.loads(body, parse_constant=refuse)
        json.loads(stored[0], parse_constant=refuse)
        assert math.isnan(run["config"]["lr"]) and [1.0, math.inf] == run["config"]["clip"]
        assert "NaN" == run["config"]["name"]  # a logged string stays a string
