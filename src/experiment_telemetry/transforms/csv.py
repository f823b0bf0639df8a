"""``CsvTransform``: one row per learning module per episode in ``<mode>_stats.csv``.

Written through goggles_io's row writer (:class:`goggles_io.handlers.csv.CsvRows`, the cells
and whole lines of its ``CsvHandler``) beside the run's other files, a row per
``LearningModuleEpisodeStats``, pushed to the OS as it is written so a crash keeps every
finished episode. ``CsvHandler`` keeps the wide numeric table; this one holds verdicts (text).
"""

from __future__ import annotations

import os
from pathlib import Path

import attrs

from experiment_telemetry.exceptions import ExperimentValueError
from experiment_telemetry.stats import LearningModuleEpisodeStats
from experiment_telemetry.transforms.base import Transform
from goggles_io.handlers.csv import CsvRows
from runtime_telemetry import receives

__all__ = ["COLUMNS", "CsvTransform"]

COLUMNS = tuple(f.name for f in attrs.fields(LearningModuleEpisodeStats) if f.name != "timestamp")
"""The header of every ``<mode>_stats.csv``."""


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
        self._files: dict[str, CsvRows] = {}

    def path(self, mode: str) -> Path:
        """Where rows of ``mode`` go."""
        return self.directory / f"{mode}_stats.csv"

    @receives(LearningModuleEpisodeStats)
    def _on_module(self, stats: LearningModuleEpisodeStats) -> None:
        rows = self._files.get(stats.mode)
        if rows is None:
            rows = self._files[stats.mode] = CsvRows(self.path(stats.mode), COLUMNS, "CsvTransform")
        rows.append([getattr(stats, c) for c in COLUMNS])

    def close(self) -> None:
        """Close the files; a later row reopens and appends."""
        with self.lock:
            files, self._files = self._files, {}
        for rows in files.values():
            rows.close()
        super().close()
