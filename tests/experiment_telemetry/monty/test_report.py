"""``MontyReportAggregator`` without Monty: the values Monty's logger hands its handlers become
our stat events, whose CSV row equals the row Monty's own handler wrote in a real Monty 0.55
run (the evidence experiment's first training episode: nothing in memory yet, no match), and
which replay recomputes from the recorded report.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

import nonfinite_json
from experiment_telemetry.aggregators.standard import make_aggregators
from experiment_telemetry.context import EpisodeContext
from experiment_telemetry.monty.events import MontyEpisodeReported
from experiment_telemetry.monty.handler import plain_data
from experiment_telemetry.monty.report import MontyReportAggregator
from experiment_telemetry.recorder import EventRecorder
from experiment_telemetry.replay import replay_run
from experiment_telemetry.stats import EpisodeStats, LearningModuleEpisodeStats, OverallStats
from experiment_telemetry.transforms import CsvTransform
from monty_csv import compare_csvs

# What Monty 0.55 wrote (train_stats.csv of test/evidence_lm/evidence_mujoco, episode 0).
MONTY_CSV = """\
,primary_performance,stepwise_performance,num_steps,rotation_error,result,most_likely_object,primary_target_object,stepwise_target_object,highest_evidence,time,symmetry_evidence,monty_steps,monty_matching_steps,individual_ts_performance,individual_ts_reached_at_step,primary_target_position,primary_target_rotation_euler,most_likely_rotation,num_possible_matches,detected_location,detected_rotation,detected_scale,location_rel_body,detected_path,individual_ts_rotation_error,mean_objects_per_graph,mean_graphs_per_object,TFNP,possible_match_sources,most_likely_location,episode_avg_prediction_error,goal_states_attempted,goal_state_achieved,episode_seed,primary_target_rotation_quat,primary_target_scale,lm_id
LM_0,no_match,no_match,21,,new_object0,new_object0,capsule3DSolid,capsule3DSolid,0,0.2903249263763428,0,21,1,no_match,0.0,[0.  1.5 0. ],[0. 0. 0.],[-0.  0.  0.],0,"[None, None, None]","[None, None, None]",,[1.68852721e-04 1.53622448e+00 9.99803658e-02],,,,,unknown_object_not_matched_(TN),,"[0, 0, 0]",,0,0.0,1060955053,[1. 0. 0. 0.],1.0,LM_0
"""


def montys_values() -> dict[str, object]:
    """The LM_0 statistics Monty's ``get_stats_per_lm`` held for that row (numpy types included)."""
    return {
        "primary_performance": "no_match", "stepwise_performance": "no_match",
        "num_steps": np.int64(21), "result": "new_object0", "rotation_error": None,
        "num_possible_matches": 0, "detected_location": [None, None, None],
        "detected_rotation": [None, None, None], "detected_scale": None,
        "location_rel_body": np.array([1.68852721e-04, 1.53622448e00, 9.99803658e-02]),
        "detected_path": None, "symmetry_evidence": 0,
        "individual_ts_reached_at_step": np.sum([]), "individual_ts_performance": "no_match",
        "individual_ts_rotation_error": None, "time": np.float64(0.2903249263763428),
        "mean_objects_per_graph": np.float64(math.nan), "mean_graphs_per_object": np.float64(math.nan),
        "TFNP": "unknown_object_not_matched_(TN)", "possible_match_sources": "",
        "most_likely_object": "new_object0", "most_likely_location": [0, 0, 0],
        "most_likely_rotation": np.array([-0.0, 0.0, 0.0]), "highest_evidence": 0,
        "episode_avg_prediction_error": np.float64(math.nan),
        "goal_states_attempted": 0, "goal_state_achieved": np.sum([]),
        "monty_steps": 21, "monty_matching_steps": 1, "episode_seed": 1060955053,
        "primary_target_object": "capsule3DSolid", "primary_target_position": np.array([0, 1.5, 0]),
        "primary_target_rotation_euler": np.array([0, 0, 0]),
        "primary_target_rotation_quat": np.array([1.0, 0, 0, 0]), "primary_target_scale": 1.0,
        "stepwise_target_object": "capsule3DSolid",
    }  # fmt: skip


def context() -> EpisodeContext:
    return EpisodeContext(mode="train", epoch=0, episode=0, target="capsule3DSolid",
                          seed=1060955053, target_position=(0, 1.5, 0), target_euler=(0, 0, 0))  # fmt: skip


def report() -> MontyEpisodeReported:
    return MontyEpisodeReported(
        mode="train",
        monty_episode=0,
        lm_stats=nonfinite_json.dumps(plain_data({"LM_0": montys_values()})),
    )


def test_montys_values_become_stats_whose_csv_row_is_montys(tmp_path: Path) -> None:
    """Every column of the row equals Monty's (time too: it is Monty's own number here), the
    vectors and unresolved pose as departures D9/D10 list them."""
    aggregator = MontyReportAggregator().subscribe()
    csv = CsvTransform(tmp_path).attach()
    try:
        aggregator.feed(report())
        stats = aggregator.post_episode(context())
    finally:
        aggregator.close()
        csv.close()
    (tmp_path / "monty.csv").write_text(MONTY_CSV)
    parity = compare_csvs(tmp_path / "monty.csv", tmp_path / "train_stats.csv", skip=())

    assert [type(s) for s in stats] == [LearningModuleEpisodeStats, EpisodeStats, OverallStats]
    assert parity.ok, parity.summary()
    assert {c: dict(d) for c, d in parity.departed.items()} == {
        "primary_target_position": {"D10": 1}, "primary_target_rotation_euler": {"D10": 1},
        "most_likely_rotation": {"D10": 1}, "detected_location": {"D9": 1},
        "detected_rotation": {"D9": 1}, "location_rel_body": {"D10": 1},
        "most_likely_location": {"D10": 1}, "primary_target_rotation_quat": {"D10": 1},
    }  # fmt: skip
    assert (stats[1].performance, stats[2].percent_no_match) == ("no_match", 100.0)


def test_an_episode_without_a_report_scores_nothing_and_warns_once(caplog) -> None:
    aggregator = MontyReportAggregator()
    first = aggregator.post_episode(context())
    second = aggregator.post_episode(context())

    assert (first, second) == ([], [])
    assert sum("reported no statistics" in r.getMessage() for r in caplog.records) == 1


def test_replay_recomputes_the_stats_from_the_recorded_report(tmp_path: Path) -> None:
    """``monty.report.enabled`` in a run's config: replay builds the report aggregator and
    gets the same stats from the event log's report and context."""
    config = {"monty.report.enabled": True, "recognition.enabled": False}
    live = make_aggregators(config)
    recorder = EventRecorder(tmp_path / "runtime_events.jsonl").subscribe()
    stats: list[object] = []
    episode = context()
    for aggregator in live:
        aggregator.subscribe().add_listener(stats.append)
    try:
        from runtime_telemetry import get_telemetry

        get_telemetry("experiment_telemetry.monty.report").emit(report())
        recorder.record(episode)
        for aggregator in live:
            aggregator.post_episode(episode)
    finally:
        for aggregator in live:
            aggregator.close()
        recorder.close()

    replayed = replay_run(tmp_path, aggregators=make_aggregators(config))

    assert isinstance(live[0], MontyReportAggregator)
    assert replayed == stats and len(stats) == 3
