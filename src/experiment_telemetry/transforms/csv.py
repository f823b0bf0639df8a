"""``CsvTransform``: Monty's ``train_stats.csv`` / ``eval_stats.csv``, one row per module per episode.

The columns are Monty's (``BasicCSVStatsHandler`` over ``lm_stats_to_dataframe``): an unnamed
index column (``LM_0``, ``LM_1``, ... in module order), each module's statistics in the order
Monty's functions add them (the union over the episode's modules: evidence modules have the
most-likely columns, the others the possible-pose columns), ``lm_id`` last, and Monty's
"most relevant" columns moved to the front. The header is fixed by a file's first episode.

Written through goggles_io's row writer (:class:`goggles_io.handlers.csv.CsvRows`, whole lines,
a full disk counted) beside the run's other files. A module's row waits for its episode's
``EpisodeStats``, then the episode's rows are written together, so a crash keeps every
finished episode. Cells render as pandas would (``_csv_cells``: numbers as the dtype pandas gives
their column in that episode, ``None``/NaN empty, ``True``/``False``, a list of graph ids as
Python's list), except vectors: ``[x y z]`` with each number's repr (D10).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from experiment_telemetry.exceptions import ExperimentValueError
from experiment_telemetry.stats import EpisodeStats, LearningModuleEpisodeStats
from experiment_telemetry.transforms._csv_cells import column_cells, monty_value, render_cell
from experiment_telemetry.transforms.base import Transform
from goggles_io.handlers.csv import CsvRows
from runtime_telemetry import receives

__all__ = [
    "EVIDENCE_FRONT",
    "POSE_FRONT",
    "CsvTransform",
    "column_cells",
    "monty_columns",
    "render_cell",
]

_GRAPH = (
    "primary_performance", "stepwise_performance", "num_steps", "result", "rotation_error",
    "num_possible_matches", "detected_location", "detected_rotation", "detected_scale",
    "location_rel_body", "detected_path", "symmetry_evidence", "individual_ts_reached_at_step",
    "individual_ts_performance", "individual_ts_rotation_error", "time",
    "mean_objects_per_graph", "mean_graphs_per_object", "TFNP", "possible_match_sources",
)  # fmt: skip
_EVIDENCE = (
    "most_likely_object", "most_likely_location", "most_likely_rotation", "highest_evidence",
    "episode_avg_prediction_error",
)  # fmt: skip
_POSE = ("possible_object_poses", "possible_object_locations")
_TAIL = (
    "goal_states_attempted", "goal_state_achieved", "monty_steps", "monty_matching_steps",
    "episode_seed", "primary_target_object", "primary_target_position",
    "primary_target_rotation_euler", "primary_target_rotation_quat", "primary_target_scale",
    "stepwise_target_object",
)  # fmt: skip
EVIDENCE_FRONT = (
    "primary_performance", "stepwise_performance", "num_steps", "rotation_error", "result",
    "most_likely_object", "primary_target_object", "stepwise_target_object", "highest_evidence",
    "time", "symmetry_evidence", "monty_steps", "monty_matching_steps",
    "individual_ts_performance", "individual_ts_reached_at_step", "primary_target_position",
    "primary_target_rotation_euler", "most_likely_rotation",
)  # fmt: skip
"""Monty's front columns when a module of the episode is evidence-based (H245-264)."""
POSE_FRONT = (
    "primary_performance", "stepwise_performance", "num_steps", "rotation_error", "result",
    "primary_target_object", "stepwise_target_object", "time", "symmetry_evidence",
    "monty_steps", "monty_matching_steps", "primary_target_position",
    "primary_target_rotation_euler",
)  # fmt: skip
"""Monty's front columns otherwise (H266-280)."""


def _row_keys(evidence_based: bool) -> tuple[str, ...]:
    return (*_GRAPH, *(_EVIDENCE if evidence_based else _POSE), *_TAIL)


def monty_columns(kinds: Sequence[bool]) -> list[str]:
    """The header Monty writes for an episode whose modules are ``kinds`` (True: evidence-based),
    in module order: ``""`` (the index) first, ``lm_id`` last."""
    columns = list(dict.fromkeys(key for kind in kinds for key in _row_keys(kind)))
    columns.append("lm_id")
    front = EVIDENCE_FRONT if any(kinds) else POSE_FRONT
    rest = [c for c in columns if c not in front]
    return ["", *front, *rest]


class CsvTransform(Transform):
    """Write module stats to ``<directory>/<mode>_stats.csv`` in Monty's columns.

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
        self._pending: dict[tuple[str, int], list[LearningModuleEpisodeStats]] = {}

    def path(self, mode: str) -> Path:
        """Where rows of ``mode`` go."""
        return self.directory / f"{mode}_stats.csv"

    @receives(LearningModuleEpisodeStats)
    def _on_module(self, stats: LearningModuleEpisodeStats) -> None:
        self._pending.setdefault((stats.mode, stats.episode), []).append(stats)

    @receives(EpisodeStats)
    def _on_episode(self, stats: EpisodeStats) -> None:
        self._write(stats.mode, self._pending.pop((stats.mode, stats.episode), []))

    def _write(self, mode: str, modules: list[LearningModuleEpisodeStats]) -> None:
        if not modules:
            return
        rows = self._files.get(mode)
        if rows is None:
            header = monty_columns([m.evidence_based for m in modules])
            rows = self._files[mode] = CsvRows(self.path(mode), header, "CsvTransform")
        columns = [column_cells(c, [monty_value(c, m) for m in modules]) for c in rows.columns[1:]]
        for index in range(len(modules)):
            rows.append([f"LM_{index}", *(cells[index] for cells in columns)])

    def close(self) -> None:
        """Write rows still waiting for their episode, close the files; a later row reopens."""
        with self.lock:
            pending, self._pending = self._pending, {}
            for (mode, _episode), modules in pending.items():
                self._write(mode, modules)
            files, self._files = self._files, {}
        for rows in files.values():
            rows.close()
        super().close()
