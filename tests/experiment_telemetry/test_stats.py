"""Stat events round-trip through runtime_telemetry's codec, whatever their values."""

from __future__ import annotations

import attrs
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
number = st.floats(allow_infinity=False)  # NaN included: means over nothing
count = st.integers(min_value=0, max_value=10**6)
name = st.text(min_size=1, max_size=8)
verdict = st.sampled_from(VERDICTS)
vector = st.tuples(finite, finite, finite)
vectors = st.lists(vector, max_size=3).map(tuple)
quat = st.tuples(finite, finite, finite, finite)

module_stats = st.builds(
    LearningModuleEpisodeStats, mode=st.sampled_from(["train", "eval"]), epoch=count, episode=count,
    lm_id=name, evidence_based=st.booleans(), primary_performance=st.none() | verdict,
    stepwise_performance=st.none() | verdict, num_steps=count,
    result=st.none() | name | st.lists(name, max_size=3).map(tuple),
    rotation_error=st.none() | finite, num_possible_matches=count,
    detected_location=st.none() | vector, detected_rotation=st.none() | vector,
    detected_scale=st.none() | finite, location_rel_body=vector, detected_path=st.none() | vectors,
    symmetry_evidence=count, individual_ts_reached_at_step=st.none() | count,
    individual_ts_performance=verdict, individual_ts_rotation_error=st.none() | finite, time=finite,
    mean_objects_per_graph=number, mean_graphs_per_object=number, TFNP=name,
    possible_match_sources=st.text(max_size=8), most_likely_object=st.none() | name,
    most_likely_location=st.none() | vector, most_likely_rotation=st.none() | vector,
    highest_evidence=st.none() | finite, episode_avg_prediction_error=st.none() | number,
    possible_object_poses=st.none() | vectors, possible_object_locations=st.none() | vectors,
    goal_states_attempted=count, goal_state_achieved=count, monty_steps=count,
    monty_matching_steps=count, episode_seed=st.none() | count, primary_target_object=name,
    primary_target_position=vector, primary_target_rotation_euler=vector,
    primary_target_rotation_quat=quat, primary_target_scale=finite,
    stepwise_target_object=st.none() | name, detected_labels=st.lists(name, max_size=3).map(tuple),
    possible_matches=st.lists(name, max_size=3).map(tuple),
)  # fmt: skip
_flag = st.integers(0, 1)
episode_stats = st.builds(
    EpisodeStats, mode=name, epoch=count, episode=count, target=name,
    performance=st.none() | verdict, num_learning_modules=count, correct=_flag, no_match=_flag,
    confused=_flag, correct_mlh=_flag, confused_mlh=_flag, pose_time_out=_flag, time_out=_flag,
    consistent_child_obj=_flag, consistent_child_or_parent=_flag, used_mlh_after_time_out=_flag,
    rotation_error=finite, lm_steps=count, monty_steps=count, monty_matching_steps=count,
    mean_lm_steps_to_indv_ts=number, run_time=finite, symmetry_evidence=number,
    goal_states_attempted=count, goal_state_success_rate=finite, avg_prediction_error=number,
)  # fmt: skip
_overall_numbers = {  # averages may be NaN (over nothing); percentages and sums never are
    f.name: number if f.name.startswith("avg_") else finite
    for f in attrs.fields(OverallStats)
    if f.name.startswith(("percent_", "avg_")) or f.name == "run_time"
}
overall_stats = st.builds(
    OverallStats, mode=name, epoch=count, episode=count, num_episodes=count,
    num_lm_episodes=count, episode_verdicts=st.dictionaries(name, count, max_size=3),
    lm_verdicts=st.dictionaries(name, count, max_size=3), **_overall_numbers,
)  # fmt: skip
window_stats = st.builds(
    MetricWindowStats, source=name, cadence=st.sampled_from(["progress", "diagnostic"]),
    step=count, count=count, mean=st.dictionaries(name, finite), last=st.dictionaries(name, finite),
)  # fmt: skip


class TestStatEvents:
    @given(module_stats | episode_stats | overall_stats | window_stats)
    def test_json_round_trip(self, stat: object) -> None:
        """from_json(to_json(stat)) == stat for every stat event, NaN means included."""
        assert stat == from_json(to_json(stat))  # type: ignore[arg-type]
