"""``CsvTransform``: one row per learning module per episode in ``<mode>_stats.csv``.

Written with the stdlib ``csv`` module beside the run's other files, a row per
``LearningModuleEpisodeStats``, flushed as it is written so a crash keeps every finished
episode. goggles_io's ``CsvHandler`` keeps the wide numeric table; this one holds verdicts (text).
"""

from __future__ import annotations

import csv
import os
from pathlib import Path
from typing import IO, Any

import attrs

from experiment_telemetry.exceptions import ExperimentValueError
from experiment_telemetry.stats import LearningModuleEpisodeStats
from experiment_telemetry.transforms.base import Transform
from runtime_telemetry import receives

__all__ = ["COLUMNS", "CsvTransform"]

COLUMNS = tuple(f.name for f in attrs.fields(LearningModuleEpisodeStats) if f.name != "timestamp")
"""The header of every ``<mode>_stats.csv``."""


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, tuple):
        return " ".join(_cell(v) for v in value)
    if isinstance(value, float):
        return repr(value)
    return str(value)


class CsvTransform(Transform):
    """Append module stats to ``<directory>/<mode>_stats.csv`` (header written once).

    Raises:
        ExperimentValueError: ``directory`` is not path-like.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        super().__init__()
        if not isinstance(directory, (str, os.PathLike)) or not os.fspath(directory):
            msg = f"directory must be a non-empty path (got {directory!r})."
            raise ExperimentValueError(msg, directory)
        self.directory = Path(directory)
        self._files: dict[str, tuple[IO[str], Any]] = {}

    def path(self, mode: str) -> Path:
        """Where rows of ``mode`` go."""
        return self.directory / f"{mode}_stats.csv"

    @receives(LearningModuleEpisodeStats)
    def _on_module(self, stats: LearningModuleEpisodeStats) -> None:
        entry = self._files.get(stats.mode)
        if entry is None:
            path = self.path(stats.mode)
            path.parent.mkdir(parents=True, exist_ok=True)
            fresh = not path.exists() or path.stat().st_size == 0
            file = open(path, "a", encoding="utf-8", newline="")
            writer = csv.writer(file, lineterminator="\n")
            if fresh:
                writer.writerow(COLUMNS)
            entry = self._files[stats.mode] = (file, writer)
        file, writer = entry
        writer.writerow([_cell(getattr(stats, c)) for c in COLUMNS])
        file.flush()

    def close(self) -> None:
        """Close the files; a later row reopens and appends."""
        with self.lock:
            files, self._files = self._files, {}
        for file, _ in files.values():
            file.close()
        super().close()
