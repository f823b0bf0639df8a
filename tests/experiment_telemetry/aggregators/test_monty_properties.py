"""Invariants of Monty's statistics over generated event streams (Hypothesis).

Each example is a short run: 1-4 episodes, 1-3 learning modules of both kinds, each module a
random sequence of inputs, hypotheses, conclusions, withdrawals, time-outs, goal states and
memory updates, interleaved at random, with system steps, then a context drawn from a small
label set (``no_label`` and a child label included).
"""

from __future__ import annotations

import csv
import math
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from experiment_telemetry.aggregators import RecognitionAggregator
from experiment_telemetry.context import EpisodeContext
from experiment_telemetry.replay import replay
from experiment_telemetry.stats import (
    VERDICTS,
    EpisodeStats,
    LearningModuleEpisodeStats,
    OverallStats,
)
from experiment_telemetry.transforms import CsvTransform
from experiment_telemetry.transforms.csv import monty_columns
from runtime_telemetry import TelemetrySchema, from_json, get_telemetry, to_json
from runtime_telemetry.events import (
    GraphMemoryUpdated,
    LearningModuleConclusionWithdrawn,
    LearningModuleGoalStateAttempted,
    LearningModuleNoMatch,
    LearningModuleObjectRecognized,
    LearningModuleReset,
    LearningModuleStep,
    LearningModuleTimedOut,
    LearningModuleVotesReceived,
    MostLikelyHypothesis,
    SensorimotorStep,
)

GRAPHS = ("g0", "g1", "g2", "handle")
LABELS = ("mug", "bowl", "handle", "no_label")
_RANK = {v: i for i, v in enumerate(VERDICTS)}
_stats_stream = get_telemetry("experiment_telemetry.stats")
_runtime = get_telemetry("tests.runtime.properties")
_quaternion = st.sampled_from([(1.0, 0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.5, 0.5, 0.5, 0.5)])
_matches = st.lists(st.sampled_from(GRAPHS), unique=True, max_size=3).map(tuple)
_action = st.one_of(
    st.tuples(st.just("step"), st.booleans(), st.booleans(), _matches),
    st.tuples(st.just("mlh"), st.sampled_from(GRAPHS), st.none() | st.floats(0, 1), _quaternion),
    st.tuples(st.just("recognized"), st.sampled_from(GRAPHS), st.booleans(), _quaternion),
    st.tuples(st.just("no_match"), st.none() | st.sampled_from(("new_0", "g2"))),
    st.tuples(st.just("withdrawn"), _matches),
    st.tuples(st.just("timed_out"), _matches),
    st.tuples(st.just("goal"), st.booleans()),
    st.tuples(st.just("memory"), st.sampled_from(GRAPHS)),
    st.tuples(st.just("votes"), _matches),
)


def _module_events(
    lm_id: str, evidence: bool, actions: Sequence[tuple[Any, ...]]
) -> list[TelemetrySchema]:
    """One module's events, ``step`` counting its inputs so far, as a runtime would."""
    events: list[TelemetrySchema] = [LearningModuleReset(lm_id=lm_id, evidence_based=evidence)]
    n = 0
    for action in actions:
        kind = action[0]
        if kind == "step":
            n += 1
            _, on, exploring, matches = action
            events.append(LearningModuleStep(lm_id=lm_id, step=n, possible_matches=matches, on_object=on,
                                             exploring=exploring, location=(0.0, 0.0, float(n)), symmetry_evidence=n % 3))  # fmt: skip
        elif kind == "mlh":
            _, graph, error, q = action
            events.append(MostLikelyHypothesis(lm_id=lm_id, step=n, graph_id=graph, location=(0, 0, 0),
                                               rotation=q, evidence=float(n), prediction_error=error))  # fmt: skip
        elif kind == "recognized":
            _, graph, symmetric, q = action
            sym = (q, (1.0, 0.0, 0.0, 0.0)) if symmetric else ()
            events.append(LearningModuleObjectRecognized(lm_id=lm_id, step=n, graph_id=graph, location=(0, 0, 0),
                                                         rotation=q, symmetric_rotations=sym, path=((0, 0, 0),),
                                                         possible_poses=(q,), possible_locations=((0, 0, 0),)))  # fmt: skip
        elif kind == "no_match":
            events.append(LearningModuleNoMatch(lm_id=lm_id, step=n, new_graph_id=action[1]))
        elif kind == "withdrawn":
            events.append(
                LearningModuleConclusionWithdrawn(lm_id=lm_id, step=n, possible_matches=action[1])
            )
        elif kind == "timed_out":
            events.append(LearningModuleTimedOut(lm_id=lm_id, step=n, possible_matches=action[1],
                                                 pose_resolved=False, possible_poses=((1, 0, 0, 0),),
                                                 possible_locations=((0, 0, 0),)))  # fmt: skip
        elif kind == "goal":
            events.append(LearningModuleGoalStateAttempted(lm_id=lm_id, step=n, achieved=action[1]))
        elif kind == "votes":
            events.append(
                LearningModuleVotesReceived(lm_id=lm_id, step=n, possible_matches=action[1])
            )
        else:
            events.append(
                GraphMemoryUpdated(lm_id=lm_id, graph_id=action[1], num_nodes=1, created=True)
            )
    return events


@st.composite
def _episode(
    draw: st.DrawFn, index: int
) -> tuple[list[list[TelemetrySchema]], list[int], EpisodeContext]:
    count = draw(st.integers(1, 3))
    modules = [
        _module_events(f"lm_{i}", draw(st.booleans()), draw(st.lists(_action, max_size=8)))
        for i in range(count)
    ]
    # An interleaving: which module's next event comes next (system steps in between).
    order = draw(st.permutations([i for i, events in enumerate(modules) for _ in events]))
    target = draw(st.sampled_from(LABELS))
    context = EpisodeContext(
        mode=draw(st.sampled_from(("train", "eval"))), epoch=0, episode=index, target=target,
        consistent_child_labels=("handle",) if draw(st.booleans()) else (),
        stepwise_target=draw(st.none() | st.sampled_from(LABELS)), timestamp=1000.0 * index,
    )  # fmt: skip
    return modules, list(order), context


@st.composite
def runs(draw: st.DrawFn) -> list[tuple[list[list[TelemetrySchema]], list[int], EpisodeContext]]:
    return [draw(_episode(i)) for i in range(draw(st.integers(1, 4)))]


def _stream(run: list[Any], *, reorder: bool = True) -> list[TelemetrySchema]:
    """The run as one ordered list of schemas, timestamps made explicit (as a recording has).

    An event's timestamp depends on its module and its place in that module's stream only,
    so two interleavings of an episode carry the same timestamps.
    """
    out: list[TelemetrySchema] = []
    for episode, (modules, order, context) in enumerate(run):
        cursors = [0] * len(modules)
        start = 1000.0 * episode
        for position, index in enumerate(order if reorder else sorted(order)):
            event = modules[index][cursors[index]]
            cursors[index] += 1
            out.append(_at(event, start + 1.0 + 0.25 * cursors[index] + index / 1024))
            if position % 3 == 2:
                out.append(
                    SensorimotorStep(step=position, modules_processed=("lm_0",), timestamp=start)
                )
        out.append(context)
    return out


def _at(event: TelemetrySchema, timestamp: float) -> TelemetrySchema:
    return attrs.evolve(event, timestamp=timestamp)


def _live(stream: list[TelemetrySchema]) -> list[Any]:
    """Emit the stream through the runtime's loggers into a subscribed aggregator."""
    agg = RecognitionAggregator().subscribe()
    stats: list[Any] = []
    try:
        for schema in stream:
            if isinstance(schema, EpisodeContext):
                stats.extend(agg.post_episode(schema))
            else:
                _runtime.emit(schema)
    finally:
        agg.close()
    return stats


_settings = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class TestInvariants:
    @_settings
    @given(run=runs())
    def test_replay_equals_live(self, run: list[Any]) -> None:
        """The stream decoded from JSON lines and replayed gives the live stats, timestamps too."""
        stream = _stream(run)
        decoded = [from_json(to_json(s)) for s in stream]

        assert _live(stream) == replay(decoded, [RecognitionAggregator()])

    @_settings
    @given(run=runs())
    def test_episode_percentages_sum_to_100(self, run: list[Any]) -> None:
        """Monty's episode percentages plus patch_off_object, no_label and no-verdict make 100."""
        for o in (s for s in _live(_stream(run)) if isinstance(s, OverallStats)):
            rest = sum(
                o.episode_verdicts.get(k, 0) for k in ("patch_off_object", "no_label", "none")
            )
            total = (
                o.percent_correct + o.percent_no_match + o.percent_confused + o.percent_pose_time_out
                + o.percent_time_out + o.percent_consistent_child_obj + 100.0 * rest / o.num_episodes
            )  # fmt: skip

            assert math.isclose(100.0, total) and o.num_episodes == sum(o.episode_verdicts.values())

    @_settings
    @given(run=runs())
    def test_per_lm_percentages_sum_to_100(self, run: list[Any]) -> None:
        """The per-module percentages plus the no-verdict share make 100 of module-episodes."""
        for o in (s for s in _live(_stream(run)) if isinstance(s, OverallStats)):
            total = (
                o.percent_correct_per_lm + o.percent_confused_per_lm + o.percent_patch_off_object_per_lm
                + o.percent_no_label_per_lm + o.percent_pose_time_out_per_lm + o.percent_time_out_per_lm
                + o.percent_consistent_child_obj_per_lm + o.percent_no_match_per_lm
                + 100.0 * o.lm_verdicts.get("none", 0) / o.num_lm_episodes
            )  # fmt: skip

            assert math.isclose(100.0, total)

    @_settings
    @given(run=runs())
    def test_episode_verdict_is_the_strongest_module_verdict(self, run: list[Any]) -> None:
        """Each episode's verdict is the highest-ranked non-None module verdict (or None)."""
        modules: list[LearningModuleEpisodeStats] = []
        for s in _live(_stream(run)):
            if isinstance(s, LearningModuleEpisodeStats):
                modules.append(s)
            elif isinstance(s, EpisodeStats):
                verdicts = [
                    m.primary_performance for m in modules if m.primary_performance is not None
                ]

                assert (max(verdicts, key=_RANK.__getitem__) if verdicts else None) == s.performance
                modules = []

    @_settings
    @given(run=runs())
    def test_steps_and_gate(self, run: list[Any]) -> None:
        """A gated module reaches its first conclusion within its steps; an ungated one is
        patch_off_object in all three performances, with no step."""
        for m in (s for s in _live(_stream(run)) if isinstance(s, LearningModuleEpisodeStats)):
            if m.individual_ts_performance == "patch_off_object":
                assert ("patch_off_object", "patch_off_object", 0, None) == (
                    m.primary_performance, m.stepwise_performance, m.num_steps, m.individual_ts_reached_at_step
                )  # fmt: skip
            elif m.individual_ts_reached_at_step is not None:
                assert m.individual_ts_reached_at_step <= m.num_steps
                assert m.individual_ts_performance in ("correct", "confused", "no_match")
            else:
                assert "time_out" == m.individual_ts_performance

    @_settings
    @given(run=runs())
    def test_interleaving_changes_only_the_module_order(self, run: list[Any]) -> None:
        """Two interleavings of the same module streams give the same stats per module."""

        def by_module(stats: list[Any]) -> list[Any]:
            return sorted(
                (s for s in stats if isinstance(s, LearningModuleEpisodeStats)),
                key=lambda s: (s.episode, s.lm_id),
            ) + [s for s in stats if not isinstance(s, LearningModuleEpisodeStats)]

        assert by_module(_live(_stream(run))) == by_module(_live(_stream(run, reorder=False)))

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(run=runs())
    def test_csv_rows_fit_a_monty_header(self, run: list[Any]) -> None:
        """Every CSV row has as many cells as the header, which is one of Monty's variants."""
        variants = [monty_columns(k) for k in ([True], [False], [True, False], [False, True])]
        with tempfile.TemporaryDirectory() as directory:
            transform = CsvTransform(directory).attach()
            for s in _live(_stream(run)):
                _stats_stream.emit(s)
            transform.close()
            for path in Path(directory).glob("*_stats.csv"):
                header, *rows = list(csv.reader(path.open(encoding="utf-8")))

                assert header in variants
                assert all(len(header) == len(row) for row in rows)
