"""EventRecorder: runtime events (and contexts) as JSON lines, stat events kept apart."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from experiment_telemetry.context import EpisodeContext
from experiment_telemetry.exceptions import ExperimentValueError
from experiment_telemetry.recorder import EventRecorder
from experiment_telemetry.stats import EpisodeStats, StatEvent
from runtime_telemetry import get_telemetry, read_jsonl
from runtime_telemetry.events import LearningModuleEvidenceSnapshot, LearningModuleStep

runtime = get_telemetry("tests.runtime.lm")
stats_stream = get_telemetry("experiment_telemetry.stats")


def episode_stats() -> EpisodeStats:
    return EpisodeStats(
        mode="eval", epoch=0, episode=0, target="mug", performance="correct",
        num_learning_modules=1, lm_steps=1, mean_lm_steps_to_indv_ts=1.0, run_time=0.0,
    )  # fmt: skip


class TestEventRecorder:
    def test_records_runtime_events_and_contexts_in_order(self, tmp_path: Path) -> None:
        """Runtime events and recorded contexts read back equal, in order; stats are skipped."""
        path = tmp_path / "log.jsonl"
        recorder = EventRecorder(path).subscribe()
        first = LearningModuleStep(lm_id="lm_0", step=1, possible_matches=("g",))
        runtime.emit(first)
        stats_stream.emit(episode_stats())
        context = EpisodeContext(mode="eval", epoch=0, episode=0, target="mug")
        recorder.record(context)
        recorder.close()

        assert [first, context] == list(read_jsonl(path))

    def test_stats_recorder_keeps_only_stats(self, tmp_path: Path) -> None:
        """only=(StatEvent,), skip=() records the stats stream alone."""
        path = tmp_path / "stats.jsonl"
        recorder = EventRecorder(path, only=(StatEvent,), skip=()).subscribe()
        runtime.emit(LearningModuleStep(lm_id="lm_0", step=1, possible_matches=()))
        stat = episode_stats()
        stats_stream.emit(stat)
        recorder.close()

        assert [stat] == list(read_jsonl(path))

    def test_unencodable_schema_is_counted_and_nothing_else_lost(self, tmp_path: Path) -> None:
        """An object array cannot be encoded: counted in errors, the other lines kept whole."""
        path = tmp_path / "log.jsonl"
        recorder = EventRecorder(path).subscribe("telemetry", "snapshots")
        get_telemetry("tests.runtime.lm").snapshot(
            LearningModuleEvidenceSnapshot(
                lm_id="lm_0", step=1, graph_id="g", evidence=np.array([object()]),
                locations=np.zeros((1, 3)), rotations=np.zeros((1, 4)),
            ),
            level=30,
        )  # fmt: skip
        after = LearningModuleStep(lm_id="lm_0", step=2, possible_matches=())
        runtime.emit(after)
        recorder.close()

        assert (1, [after]) == (recorder.errors, list(read_jsonl(path)))

    def test_bad_path_refused(self) -> None:
        """A non-path raises ExperimentValueError naming the parameter."""
        with pytest.raises(ExperimentValueError, match="path must be a non-empty path"):
            EventRecorder("")
