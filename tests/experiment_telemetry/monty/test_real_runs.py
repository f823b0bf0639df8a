"""Real Monty 0.55 runs of both MuJoCo test experiments, with the adapter on and off (issue 40).

What each test shows on the real runs:
- every Monty telemetry event reaches the run, stamped with run and episode; a plain handler
  put on ``telemetry.tbp.monty`` beforehand receives none of them;
- the CSVs written from Monty's ``report_episode`` data, and those ``RecognitionAggregator``
  computes from the step hook's events, equal Monty's own column by column (``time`` aside,
  the listed departures compared by value);
- ``telemetry replay`` recomputes the run's statistics from its event log;
- Monty's own outputs are the same with the adapter on as without it;
- the run is a run like any other: ``telemetry runs``, its Hydra config for ``telemetry diff``.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from experiment_telemetry.replay import read_log, read_stats
from experiment_telemetry.stats import LearningModuleEpisodeStats
from monty_csv import compare_csvs
from monty_support import VOTING

pytestmark = pytest.mark.slow

MODES = ("train", "eval")


def monty_rows(run_dir: Path, mode: str) -> list[dict[str, str]]:
    with open(run_dir / f"{mode}_stats.csv", newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def telemetry_events(run_dir: Path) -> list[dict[str, object]]:
    events = []
    for line in (run_dir / "runtime_events.jsonl").read_text(encoding="utf-8").splitlines():
        data = json.loads(line)
        if data["kind"] == "monty_telemetry_event":
            events.append(data)
    return events


def telemetry(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "experiment_telemetry", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_every_monty_telemetry_event_arrives_with_run_and_episode(monty_runs, experiment) -> None:
    """GlobalMatchingStep count = monty_matching_steps summed over Monty's CSVs (one per episode
    and module: both experiments have one LM), per episode too (the stamp is right);
    NewGraphAdded = the graphs Monty's base GraphMemory stored (the feature LM's: one per
    no-match in training; Monty's evidence memory does not emit it, 0 in both)."""
    run = monty_runs.get(experiment, True)
    events = telemetry_events(run.run_dir)
    kinds = Counter(str(e["monty_kind"]) for e in events)
    rows = [r for mode in MODES for r in monty_rows(run.monty_dir, mode)]
    per_episode = [int(r["monty_matching_steps"]) for r in rows]
    steps = [e for e in events if e["monty_kind"] == "GlobalMatchingStep"]
    by_episode: dict[int, list[int]] = defaultdict(list)
    for e in steps:
        by_episode[int(e["episode"])].append(json.loads(str(e["fields"]))["matching_steps"])
    graphs = sum(
        1 for r in monty_rows(run.monty_dir, "train") if r["primary_performance"] == "no_match"
    )
    memory = "feature_pred" in experiment

    assert (sum(per_episode), len(steps)) == (len(steps), sum(per_episode)) and len(steps) > 0
    assert [len(by_episode[i]) for i in range(len(rows))] == per_episode
    assert all(v == list(range(1, len(v) + 1)) for v in by_episode.values())  # restarts per episode
    assert kinds["NewGraphAdded"] == (graphs if memory else 0)
    assert {e["run_id"] for e in events} == {run.run_dir.name}
    assert all(
        e["level"] == "INFO" and str(e["logger"]).startswith("telemetry.tbp.monty.") for e in events
    )
    assert {e["mode"] for e in steps[: per_episode[0]]} == {"train"}
    assert {e["mode"] for e in steps[-per_episode[-1] :]} == {"eval"}


def test_a_plain_handler_on_the_parent_logger_receives_none_of_them(monty_runs, experiment) -> None:
    """The naive way (a handler on ``telemetry.tbp.monty`` before the run) gets 0 records,
    with and without the adapter; the adapter's handler, declared in the Hydra telemetry
    config, got every event."""
    on, off = monty_runs.get(experiment, True), monty_runs.get(experiment, False)

    assert (on.plain_count, off.plain_count) == (0, 0)
    assert len(telemetry_events(on.run_dir)) > 0


@pytest.mark.parametrize("mode", MODES)
def test_csvs_from_montys_report_equal_montys_own(monty_runs, experiment, mode: str) -> None:
    """``<run>/monty/<mode>_stats.csv`` (Monty's report_episode data through our stat events
    and CsvTransform) equals Monty's BasicCSVStatsHandler CSV in every column but ``time``."""
    run = monty_runs.get(experiment, True)
    parity = compare_csvs(
        run.monty_dir / f"{mode}_stats.csv", run.run_dir / "monty" / f"{mode}_stats.csv"
    )

    assert parity.ok, parity.summary()
    assert parity.rows == (6 if mode == "train" else 3)
    assert parity.compared == parity.rows * (parity.columns - 1)  # every cell but time's


@pytest.mark.parametrize("mode", MODES)
def test_statistics_from_step_hook_events_equal_montys_own(
    monty_runs, experiment, mode: str
) -> None:
    """``<run>/<mode>_stats.csv``, which RecognitionAggregator computed from the step hook's
    runtime events alone, equals Monty's own CSV in every column but ``time``."""
    run = monty_runs.get(experiment, True)
    parity = compare_csvs(run.monty_dir / f"{mode}_stats.csv", run.run_dir / f"{mode}_stats.csv")

    assert parity.ok, parity.summary()
    assert parity.compared == parity.rows * (parity.columns - 1)  # every cell but time's


def test_replay_recomputes_the_statistics_from_the_event_log(monty_runs, experiment) -> None:
    """``telemetry replay`` rebuilds RecognitionAggregator from the recorded config and gets
    the live stat events back, identical."""
    run = monty_runs.get(experiment, True)
    result = telemetry("replay", str(run.run_dir))
    live = read_stats(run.run_dir)

    assert result.returncode == 0, result.stdout + result.stderr
    assert f"identical to the {len(live)} stat events recorded live" in result.stdout
    assert sum(isinstance(s, LearningModuleEpisodeStats) for s in live) == 9


def test_montys_own_outputs_are_unchanged_by_the_adapter(monty_runs, experiment) -> None:
    """Monty's train/eval CSVs with the adapter on equal those without it, cell for cell but
    ``time``, and its per-epoch folders are the same."""
    on, off = monty_runs.get(experiment, True), monty_runs.get(experiment, False)
    for mode in MODES:
        parity = compare_csvs(
            off.monty_dir / f"{mode}_stats.csv", on.monty_dir / f"{mode}_stats.csv"
        )
        assert parity.ok and not parity.departed, parity.summary()
    folders = {p.name for p in off.monty_dir.iterdir() if p.is_dir() and p.name.isdigit()}

    assert folders == {p.name for p in on.monty_dir.iterdir() if p.is_dir() and p.name.isdigit()}
    assert {(p / "model.pt").is_file() for p in on.monty_dir.iterdir() if p.name in folders} == {
        True
    }


def test_the_run_is_listed_done_with_its_hydra_config(monty_runs) -> None:
    """``telemetry runs`` lists it done; its Hydra choices and config are recorded, so
    ``telemetry diff`` says which experiment and learning module differed."""
    evidence, feature = (monty_runs.get(e, True) for e in
                         ("test/evidence_lm/evidence_mujoco", "test/graph_learning/feature_pred_mujoco"))  # fmt: skip
    listed = telemetry("runs", str(evidence.monty_dir))
    diff = telemetry("diff", str(evidence.run_dir), str(feature.run_dir))
    config = (evidence.run_dir / "config.yaml").read_text(encoding="utf-8")

    assert (
        listed.returncode == 0
        and "done" in listed.stdout
        and evidence.run_dir.name in listed.stdout
    )
    assert "hydra.choices.experiment: test/evidence_lm/evidence_mujoco" in config
    assert "recognition.sensor_to_lm:" in config and "monty.version: 0.55" in config
    assert diff.returncode == 0, diff.stderr
    assert (
        "hydra.choices.experiment" in diff.stdout
        and "hydra.choices.monty/learning_module" in diff.stdout
    )


def test_the_event_log_holds_what_the_statistics_were_made_of(monty_runs, experiment) -> None:
    """Per episode: a reset, one step event per input Monty counted (num_steps), one system
    step per Monty step (monty_steps), Monty's report and the episode's context."""
    run = monty_runs.get(experiment, True)
    kinds = Counter(s.kind for s in read_log(run.run_dir))
    rows = [r for mode in MODES for r in monty_rows(run.monty_dir, mode)]

    assert kinds["learning_module_reset"] == kinds["episode_context"] == len(rows) == 9
    assert kinds["monty_episode_reported"] == 9
    assert kinds["learning_module_step"] == sum(int(r["num_steps"]) for r in rows)
    assert kinds["sensorimotor_step"] == sum(int(r["monty_steps"]) for r in rows)


def test_five_voting_lms_equal_montys_but_a_stepwise_target_after_the_last_input(
    monty_runs,
) -> None:
    """Five evidence LMs that vote (issue 40's first two differences, settled on a real run):
    votes in steps without input, hypotheses moved between inputs and prediction errors
    re-appended per vote round all come out as Monty's, from the step hook's events. What
    remains is D21: Monty's stepwise target follows an input the module did not process (off
    the object: ``no_label``); ours is the label at its last processed input."""
    run = monty_runs.get(VOTING, True)
    found: dict[str, list[tuple[int, str, str]]] = {}
    for mode in MODES:
        report = compare_csvs(
            run.monty_dir / f"{mode}_stats.csv", run.run_dir / "monty" / f"{mode}_stats.csv"
        )
        events = compare_csvs(
            run.monty_dir / f"{mode}_stats.csv", run.run_dir / f"{mode}_stats.csv"
        )
        assert report.ok, report.summary()
        assert events.header_equal and set(events.different) <= {"stepwise_target_object"}, (
            events.summary()
        )
        found.update({f"{mode}/{k}": v for k, v in events.different.items()})
    rows = [r for mode in MODES for r in monty_rows(run.monty_dir, mode)]
    matching = sum(int(r["monty_matching_steps"]) for r in rows[::5])
    kinds = Counter(str(e["monty_kind"]) for e in telemetry_events(run.run_dir))

    assert all(monty == "no_label" for cells in found.values() for _, monty, _ in cells)
    assert sum(len(cells) for cells in found.values()) <= 2
    assert kinds["GlobalMatchingStep"] == matching
    assert telemetry("replay", str(run.run_dir)).returncode == 0
