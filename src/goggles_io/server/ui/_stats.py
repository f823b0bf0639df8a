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

from goggles_io._util.safe_read import iter_chunks, open_inside
from goggles_io.runs.lines import file_objects

__all__ = ["read_alerts", "stat_records"]

_MAX_CSV_ROWS = 5000
_OVERALL = ("overall_stats",)
_EPISODE = ("episode_stats",)
_MODULE = ("learning_module_episode_stats", "lm_episode_stats")


def read_alerts(run_dir: Path) -> dict[str, Any]:
    """``alerts.jsonl``: each alert with its step, metric, source, severity and message, and
    how many of its lines were unreadable (shown, never skipped in silence)."""
    found = file_objects(run_dir, "alerts.jsonl")  # bounded lines, inside the run only
    return {"alerts": found.items, "unreadable": found.unreadable}


def _csv_table(run_dir: Path, path: Path) -> dict[str, Any] | None:
    """The first rows of one table and its row count, read in bounded pieces."""
    columns: list[str] | None = None
    rows: list[list[str]] = []
    total = 0
    with open_inside(run_dir, path) as fh:
        for chunk in iter_chunks(fh, [0]):
            for row in csv.reader(io.StringIO(chunk.decode("utf-8", errors="replace"))):
                if columns is None:
                    columns = row
                    continue
                total += 1
                if len(rows) < _MAX_CSV_ROWS:
                    rows.append(row)
    return None if columns is None else {"columns": columns, "rows": rows, "total": total}


def _csv_tables(run_dir: Path) -> dict[str, dict[str, Any]]:
    tables = {}
    for path in sorted(run_dir.glob("*_stats.csv")):
        try:
            table = _csv_table(run_dir, path)
        except OSError:
            continue
        if table is not None:
            tables[path.name] = table
    return tables


def stat_records(run_dir: Path) -> dict[str, Any]:
    """Overall, per-episode and per-module records, alerts, stats tables, and why it is empty."""
    stats = file_objects(run_dir, "stats.jsonl")  # bounded lines, inside the run only
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
