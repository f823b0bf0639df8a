"""The experiment side's records for the "Experiment stats" view, and a run's alerts.

``stats.jsonl`` is read by record ``kind`` and every field is passed on as it is, so the view
takes both the current stat records and Monty's (fields it does not know are shown as
columns, not dropped). ``<mode>_stats.csv`` tables come as rows of text. A run without
recognition stats gets a ``reason`` saying why its view is empty. Lines that could not be read
are counted by file (``unreadable``), for the view to say so.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from goggles_io.runs.lines import Objects, json_objects

__all__ = ["read_alerts", "stat_records"]

_MAX_CSV_ROWS = 5000
_OVERALL = ("overall_stats",)
_EPISODE = ("episode_stats",)
_MODULE = ("learning_module_episode_stats", "lm_episode_stats")


def _objects(path: Path) -> Objects:
    try:
        return json_objects(path.read_bytes()) if path.is_file() else Objects([])
    except OSError:
        return Objects([])


def read_alerts(run_dir: Path) -> dict[str, Any]:
    """``alerts.jsonl``: each alert with its step, metric, source, severity and message, and
    how many of its lines were unreadable (shown, never skipped in silence)."""
    found = _objects(run_dir / "alerts.jsonl")
    return {"alerts": found.items, "unreadable": found.unreadable}


def _csv_tables(run_dir: Path) -> dict[str, dict[str, Any]]:
    tables = {}
    for path in sorted(run_dir.glob("*_stats.csv")):
        try:
            rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8", errors="replace"))))
        except OSError:
            continue
        if rows:
            tables[path.name] = {"columns": rows[0], "rows": rows[1 : _MAX_CSV_ROWS + 1],
                                 "total": len(rows) - 1}  # fmt: skip
    return tables


def stat_records(run_dir: Path) -> dict[str, Any]:
    """Overall, per-episode and per-module records, alerts, stats tables, and why it is empty."""
    stats = _objects(run_dir / "stats.jsonl")
    records = stats.items
    overall = [r for r in records if r.get("kind") in _OVERALL]
    episodes = [r for r in records if r.get("kind") in _EPISODE]
    modules: dict[tuple[str, str], dict[str, int]] = {}
    for r in records:
        if r.get("kind") in _MODULE:
            counts = modules.setdefault((str(r.get("mode")), str(r.get("lm_id"))), {})
            verdict = r.get("primary_performance", r.get("result", "?"))
            verdict = "no verdict" if verdict is None else str(verdict)  # Monty records None
            counts[verdict] = counts.get(verdict, 0) + 1
    kinds = sorted({str(r.get("kind")) for r in records})
    alerts = read_alerts(run_dir)
    reason = None
    if not (run_dir / "stats.jsonl").is_file():
        reason = "this run has no stats.jsonl: it was not run by the experiment harness"
    elif not (overall or episodes or modules):
        found = ", ".join(kinds) if kinds else "nothing"
        reason = (
            "no recognition stats in this run (no episodes were scored: a training loop "
            f"watched for failures); stats.jsonl holds {found}"
        )
    return {
        "overall": overall,
        "episodes": episodes,
        "modules": [{"mode": m, "lm_id": lm, **c} for (m, lm), c in sorted(modules.items())],
        "alerts": alerts["alerts"],
        "records": len(records),
        "unreadable": {"stats.jsonl": stats.unreadable, "alerts.jsonl": alerts["unreadable"]},
        "tables": _csv_tables(run_dir),
        "kinds": kinds,
        "reason": reason,
    }
