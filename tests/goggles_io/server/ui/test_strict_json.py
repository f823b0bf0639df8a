"""Every file a demo run writes is strict JSON, and nothing in it is lost on the way to the user.

Issue 30: lines holding ``NaN`` used to vanish (the dashboard showed 235 of the demo's 256 stat
records; the non-finite scenario's alert was nowhere). Here the demo's files are read with a
strict parser, the stats tab's API and ``open_run`` count every record, the alert reaches
``/api/alerts`` (what the charts' markers come from) and ``open_run``, and older files (bare
``NaN``) still read while a damaged line is counted and shown.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import urllib.parse
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("uvicorn")

import nonfinite_json
from experiment_telemetry.cli import main
from goggles_io.runs import RunContext, open_run
from goggles_io.server.collector import Collector
from support import wait_until

JSON_SUFFIXES = (".json", ".jsonl")


def refuse(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def strict(text: str | bytes) -> Any:
    """RFC 8259 only: Python's json with NaN/Infinity refused (as a browser's JSON.parse)."""
    return json.loads(text, parse_constant=refuse)


def get(server: Collector, path: str, **query: str) -> Any:
    """A dashboard answer, parsed strictly, its non-finite numbers restored by the convention."""
    url = f"{server.url}{path}?{urllib.parse.urlencode(query)}"
    with urllib.request.urlopen(url, timeout=30) as reply:
        body = reply.read()
    strict(body)
    return nonfinite_json.loads(body)


def key_of(server: Collector, run_dir: Path) -> str:
    """The dashboard's key of the run in ``run_dir`` (its row's ``key``), once it is listed."""

    def find() -> str | None:
        for row in get(server, "/api/runs")["runs"]:
            if row["key"].endswith(run_dir.name) or row.get("run_id") == run_dir.name:
                return str(row["key"])
        return None

    return wait_until(find, timeout_s=60, what=f"{run_dir.name} listed")


@pytest.fixture(scope="module")
def demos(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """The default ``telemetry demo`` run and the ``non-finite`` scenario's, in one root."""
    from experiment_telemetry.demo.experiment import run_demo
    from experiment_telemetry.demo.watch import run_watch_demo

    root = tmp_path_factory.mktemp("demos")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        demo = run_demo(root, wandb=False, console=False, progress=False)
        watch = run_watch_demo("non-finite", root, console=False, progress=False)
    return root, demo.run_dir, watch.run_dir


@pytest.fixture(scope="module")
def server(demos: tuple[Path, Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Any:
    index = tmp_path_factory.mktemp("index")
    with Collector(run_dirs=[str(demos[0])], index_dir=index) as collector:
        collector.index_dir_for_test = index  # type: ignore[attr-defined]
        yield collector


class TestNothingLost:
    def test_stats_tab_and_open_run_count_256_of_256(
        self, demos: tuple[Path, Path, Path], server: Collector
    ) -> None:
        """The stats tab's API and open_run hold every record of stats.jsonl, verdicts included."""
        run_dir = demos[1]
        lines = [strict(line) for line in (run_dir / "stats.jsonl").read_text().splitlines()]
        expected = Counter(
            (r["mode"], r["lm_id"]) for r in lines if r["kind"] == "learning_module_episode_stats"
        )

        stats = get(server, "/api/stats", run=key_of(server, run_dir))
        shown = {(m["mode"], m["lm_id"]): sum(v for k, v in m.items() if k not in ("mode", "lm_id"))
                 for m in stats["modules"]}  # fmt: skip
        run = open_run(run_dir)

        assert 256 == len(lines) == stats["records"] == len(run.stats)
        assert dict(expected) == shown
        assert 21 == shown[("eval", "lm_0")]
        assert all("patch_off_object" in m for m in stats["modules"])
        assert {"stats.jsonl": 0, "alerts.jsonl": 0} == stats["unreadable"]
        assert {} == run.unreadable

    def test_nonfinite_alert_in_the_api_the_chart_and_open_run(
        self, demos: tuple[Path, Path, Path], server: Collector
    ) -> None:
        """The non-finite scenario's alert, value NaN, is served for the chart markers and read."""
        run_dir = demos[2]
        key = key_of(server, run_dir)

        def indexed() -> dict[str, Any] | None:
            rows = get(server, "/api/runs")["runs"]
            wanted = "diagnostic/learner/critic_loss"  # the panel the marker goes on
            return next((r for r in rows if r["key"] == key and wanted in r["metrics"]), None)

        row = wait_until(indexed, timeout_s=60, what="critic_loss indexed")
        answer = get(server, "/api/alerts", run=key)
        [alert] = [a for a in answer["alerts"] if a["check"] == "non_finite"]
        [read] = [a for a in open_run(run_dir).alerts if a["check"] == "non_finite"]

        assert row["alerts"]  # what makes the charts ask /api/alerts for markers
        assert ("critic_loss", "learner") == (alert["metric"], alert["source"])
        assert math.isnan(alert["observed"]) and math.isnan(read["observed"])
        assert alert["step"] == read["step"] >= 1200
        assert 0 == answer["unreadable"]

    def test_json_export_keeps_the_logged_nan(
        self, demos: tuple[Path, Path, Path], server: Collector
    ) -> None:
        """The JSON download of critic_loss is strict; its NaN point is NaN again, not null."""
        run_dir = demos[2]
        with open(run_dir / "metrics.csv", newline="") as fh:
            cells = [r["diagnostic/learner/critic_loss"] for r in csv.DictReader(fh)]
        logged = [float(c) for c in cells if c]
        key = key_of(server, run_dir)
        url = f"{server.url}/api/export?" + urllib.parse.urlencode(
            {"run": key, "metric": "diagnostic/learner/critic_loss", "format": "json"}
        )

        def exported() -> Any:
            with urllib.request.urlopen(url, timeout=30) as reply:
                body = reply.read()
            strict(body)
            rows = nonfinite_json.loads(body)["rows"]
            return rows if len(rows) == len(logged) else None

        values = [row[3] for row in wait_until(exported, timeout_s=60, what="all points indexed")]

        assert 1 == sum(math.isnan(v) for v in values) == sum(math.isnan(v) for v in logged)
        assert [v for v in logged if v == v] == [v for v in values if v == v]

    def test_every_line_of_every_file_is_strict_json(
        self, demos: tuple[Path, Path, Path], server: Collector
    ) -> None:
        """A strict parser reads every line the demos wrote, and the dashboard's own index files."""
        for run_dir in demos[1:]:
            key_of(server, run_dir)
            get(server, "/api/stats", run=key_of(server, run_dir))
        index = server.index_dir_for_test  # type: ignore[attr-defined]
        wait_until(lambda: list(index.rglob("manifest.json")), timeout_s=60, what="index written")
        checked: Counter[str] = Counter()
        for folder in (demos[0], index):
            for path in sorted(p for p in folder.rglob("*") if p.is_file()):
                if path.suffix not in JSON_SUFFIXES:
                    continue  # run.kv, CSV, YAML: not JSON formats
                text = path.read_text(encoding="utf-8")
                lines = text.splitlines() if path.suffix == ".jsonl" else [text]
                for number, line in enumerate(lines, start=1):
                    if line.strip():
                        try:
                            strict(line)
                        except ValueError as exc:
                            pytest.fail(f"{path}:{number}: {exc}: {line[:120]}")
                        checked[path.name] += 1

        assert {"stats.jsonl", "alerts.jsonl", "runtime_events.jsonl", "manifest.json"} <= set(
            checked
        )
        assert checked["stats.jsonl"] > 256


OLD_ALERT = (
    '{"kind": "metric_alert", "version": 1, "timestamp": 1.0, "check": "non_finite", '
    '"severity": "error", "source": "learner", "metric": "loss", "step": 7, '
    '"observed": NaN, "threshold": null, "window": [NaN, Infinity], "related": null, '
    '"message": "non_finite in learner/loss at step 7: value is nan"}'
)
OLD_STAT = '{"kind": "episode_stats", "version": 1, "mode": "eval", "avg_rotation_error": NaN}'
GARBAGE = '{"kind": "metric_alert", "step": 8, "observed": nan'  # torn, and not even Python's


@pytest.fixture
def old_run(tmp_path: Path) -> Path:
    """A run whose files were written before the convention, plus one damaged line in each."""
    run = RunContext(project="p", driver="tests", slug="old", root=tmp_path / "runs")
    run.close()
    (run.dir / "alerts.jsonl").write_text(f"{OLD_ALERT}\n{GARBAGE}\n")
    (run.dir / "stats.jsonl").write_text(f"{OLD_STAT}\n\n{GARBAGE}\n{OLD_STAT}\n")
    return run.dir


class TestOlderAndDamagedFiles:
    def test_open_run_reads_bare_nan_and_counts_the_rest(self, old_run: Path) -> None:
        """Old bare-NaN lines read as floats; the damaged line is counted, not dropped silently."""
        run = open_run(old_run)
        [alert] = run.alerts

        assert math.isnan(alert["observed"]) and math.inf == alert["window"][1]
        assert 2 == len(run.stats) and math.isnan(run.stats[0]["avg_rotation_error"])
        assert {"alerts.jsonl": 1, "stats.jsonl": 1} == run.unreadable

    def test_dashboard_shows_the_unreadable_count(self, old_run: Path) -> None:
        """/api/alerts and /api/stats (the stats tab) carry how many lines could not be read."""
        with Collector(run_dirs=[str(old_run.parent)], index_dir=old_run.parent / "idx") as server:
            key = key_of(server, old_run)
            alerts = get(server, "/api/alerts", run=key)
            stats = get(server, "/api/stats", run=key)

        assert 1 == len(alerts["alerts"]) and 1 == alerts["unreadable"]
        assert math.isnan(alerts["alerts"][0]["observed"])
        assert {"stats.jsonl": 1, "alerts.jsonl": 1} == stats["unreadable"]
        assert 2 == stats["records"]

    def test_cli_shows_the_unreadable_count(
        self, old_run: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """telemetry show prints the alert and the unreadable lines; telemetry runs counts them."""
        assert 0 == main(["show", str(old_run)])
        shown = capsys.readouterr().out
        assert 0 == main(["runs", str(old_run.parent)])
        listed = capsys.readouterr().out

        assert "alerts: 1" in shown and "non_finite in learner/loss at step 7" in shown
        assert "unreadable: 1 line of alerts.jsonl" in shown
        assert "unreadable: 1 line of stats.jsonl" in shown
        assert "1 (1 unreadable)" in listed

    def test_last_value_nan_is_shown_not_hidden(
        self, old_run: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A metric whose last logged value is NaN (strict log.jsonl) is printed as nan."""
        from goggles_io.handlers._layout import encode_line
        from goggles_io.runs import last_metrics

        line = {"kind": "metric", "scope": "global", "payload": {"loss": math.nan, "lr": 0.1},
                "filepath": "x.py", "lineno": 1, "step": 3}  # fmt: skip
        (old_run / "log.jsonl").write_bytes(encode_line(line))
        strict((old_run / "log.jsonl").read_bytes())

        assert math.isnan(last_metrics(old_run)["loss"])
        assert 0 == main(["show", str(old_run)])
        assert "loss = nan" in capsys.readouterr().out
