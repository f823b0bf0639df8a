"""Stat events round-trip through runtime_telemetry's codec, whatever their values."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from experiment_telemetry.stats import (
    VERDICTS,
    EpisodeStats,
    LearningModuleEpisodeStats,
    MetricWindowStats,
    OverallStats,
)
from runtime_telemetry import from_json, to_json

finite = st.floats(allow_nan=False, allow_infinity=False)
count = st.integers(min_value=0, max_value=10**6)
name = st.text(min_size=1, max_size=8)
verdict = st.sampled_from(VERDICTS)
maybe_quat = st.none() | st.tuples(finite, finite, finite, finite)

module_stats = st.builds(
    LearningModuleEpisodeStats, mode=st.sampled_from(["train", "eval"]), epoch=count, episode=count,
    target=name, lm_id=name, primary_performance=verdict, rotation_error=st.none() | finite,
    num_steps=count, terminal_step=st.none() | count, first_terminal_performance=st.none() | verdict,
    symmetry_evidence=st.none() | count, detected_object=st.none() | name,
    detected_labels=st.lists(name, max_size=3).map(tuple),
    detected_location=st.none() | st.tuples(finite, finite, finite), detected_rotation=maybe_quat,
    most_likely_object=st.none() | name, possible_matches=st.lists(name, max_size=3).map(tuple),
)  # fmt: skip
episode_stats = st.builds(
    EpisodeStats, mode=name, epoch=count, episode=count, target=name, performance=verdict,
    num_learning_modules=count, num_steps=count, terminal_step=st.none() | count, run_time_s=finite,
)  # fmt: skip
overall_stats = st.builds(
    OverallStats, mode=name, epoch=count, episode=count, num_episodes=count,
    percent_correct=finite, percent_confused=finite, percent_no_match=finite,
    percent_time_out=finite, percent_pose_time_out=finite, percent_correct_mlh=finite,
    percent_used_mlh_after_timeout=finite, avg_rotation_error=st.none() | finite,
    avg_num_lm_steps=finite, avg_episode_run_time=finite,
)  # fmt: skip
window_stats = st.builds(
    MetricWindowStats, source=name, cadence=st.sampled_from(["progress", "diagnostic"]),
    step=count, count=count, mean=st.dictionaries(name, finite), last=st.dictionaries(name, finite),
)  # fmt: skip


class TestStatEvents:
    @given(module_stats | episode_stats | overall_stats | window_stats)
    def test_json_round_trip(self, stat: object) -> None:
        """from_json(to_json(stat)) == stat for every stat event."""
        assert stat == from_json(to_json(stat))  # type: ignore[arg-type]
