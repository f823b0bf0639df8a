"""RecognitionAggregator: every rule and every verdict, from hand-written event sequences."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

import pytest

from experiment_telemetry.aggregators import RecognitionAggregator
from experiment_telemetry.aggregators.verdicts import rotation_error
from experiment_telemetry.context import EpisodeContext
from experiment_telemetry.exceptions import ExperimentTypeError, ExperimentValueError
from experiment_telemetry.stats import (
    VERDICTS,
    EpisodeStats,
    LearningModuleEpisodeStats,
    OverallStats,
)
from runtime_telemetry import get_telemetry
from runtime_telemetry.events import (
    GraphMemoryUpdated,
    LearningModuleNoMatch,
    LearningModuleObjectRecognized,
    LearningModuleStep,
    LearningModuleTimedOut,
    MostLikelyHypothesis,
    SensorPatchObserved,
)

runtime = get_telemetry("tests.runtime.lm")
IDENTITY = (1.0, 0.0, 0.0, 0.0)


@pytest.fixture
def agg() -> Iterator[RecognitionAggregator]:
    aggregator = RecognitionAggregator().subscribe()
    yield aggregator
    aggregator.close()


def ctx(target: str = "mug", mode: str = "train", episode: int = 0, **kw: object) -> EpisodeContext:
    return EpisodeContext(mode=mode, epoch=0, episode=episode, target=target, **kw)  # type: ignore[arg-type]


def step(
    lm: str = "lm_0", n: int = 1, matches: Sequence[str] = ("g0", "g1"), on: bool = True
) -> None:
    runtime.emit(LearningModuleStep(lm_id=lm, step=n, possible_matches=matches, on_object=on))


def recognize(lm: str = "lm_0", graph: str = "g0", n: int = 2, rotation=IDENTITY, sym=()) -> None:  # type: ignore[no-untyped-def]
    runtime.emit(
        LearningModuleObjectRecognized(
            lm_id=lm, step=n, graph_id=graph, location=(0, 0, 0), rotation=rotation,
            symmetric_rotations=sym, symmetry_evidence=len(sym),
        )
    )  # fmt: skip


def timeout(lm: str = "lm_0", matches: Sequence[str] = ("g0", "g1"), n: int = 5) -> None:
    runtime.emit(
        LearningModuleTimedOut(lm_id=lm, step=n, possible_matches=matches, pose_resolved=False)
    )


def mlh(lm: str = "lm_0", graph: str = "g0", rotation=IDENTITY) -> None:  # type: ignore[no-untyped-def]
    runtime.emit(
        MostLikelyHypothesis(
            lm_id=lm, step=3, graph_id=graph, location=(0, 0, 0), rotation=rotation, evidence=1.0
        )
    )


def teach(agg: RecognitionAggregator, graph: str, label: str, lm: str = "lm_0") -> None:
    """A train episode in which ``lm`` stores ``graph`` while the target is ``label``."""
    step(lm, matches=())
    runtime.emit(LearningModuleNoMatch(lm_id=lm, step=1))
    runtime.emit(GraphMemoryUpdated(lm_id=lm, graph_id=graph, num_nodes=3, created=True))
    agg.post_episode(ctx(label, episode=99))


def lm_stats(stats: Sequence[object], lm: str = "lm_0") -> LearningModuleEpisodeStats:
    return next(s for s in stats if isinstance(s, LearningModuleEpisodeStats) and s.lm_id == lm)


def verdict(stats: Sequence[object], lm: str = "lm_0") -> str:
    return lm_stats(stats, lm).primary_performance


class TestRules:
    def test_no_possible_matches_is_no_match(self, agg: RecognitionAggregator) -> None:
        """A module whose possible matches emptied gets no_match."""
        step(matches=())

        assert "no_match" == verdict(agg.post_episode(ctx()))

    def test_no_match_event_is_no_match(self, agg: RecognitionAggregator) -> None:
        """A LearningModuleNoMatch event empties the possible matches: no_match."""
        step()
        runtime.emit(LearningModuleNoMatch(lm_id="lm_0", step=2))

        assert "no_match" == verdict(agg.post_episode(ctx()))

    def test_no_match_beats_no_label(self, agg: RecognitionAggregator) -> None:
        """The no-match rule comes before the no_label rule."""
        step(matches=())

        assert "no_match" == verdict(agg.post_episode(ctx("no_label")))

    def test_no_label_target_is_no_label(self, agg: RecognitionAggregator) -> None:
        """A target labelled no_label gives no_label even when the module recognised something."""
        step()
        recognize()

        assert "no_label" == verdict(agg.post_episode(ctx("no_label")))

    def test_recognised_graph_carrying_target_is_correct(self, agg: RecognitionAggregator) -> None:
        """Recognising a graph whose learned labels include the target is correct."""
        teach(agg, "g0", "mug")
        step()
        recognize(graph="g0")

        assert "correct" == verdict(agg.post_episode(ctx("mug")))

    def test_recognised_graph_without_target_is_confused(self, agg: RecognitionAggregator) -> None:
        """Recognising a graph learned for another label is confused."""
        teach(agg, "g0", "bowl")
        step()
        recognize(graph="g0")

        assert "confused" == verdict(agg.post_episode(ctx("mug")))

    def test_hypothesis_does_not_change_a_recognition(self, agg: RecognitionAggregator) -> None:
        """The most-likely-hypothesis rule refines time-outs only: a recognition stays correct."""
        teach(agg, "g0", "mug")
        teach(agg, "g1", "bowl")
        step()
        mlh(graph="g1")
        recognize(graph="g0")

        assert "correct" == verdict(agg.post_episode(ctx("mug")))

    def test_time_out_with_one_match_is_pose_time_out(self, agg: RecognitionAggregator) -> None:
        """Timing out with exactly one possible match is pose_time_out."""
        step(matches=("g0",))
        timeout(matches=("g0",))

        assert "pose_time_out" == verdict(agg.post_episode(ctx()))

    def test_time_out_with_several_matches_is_time_out(self, agg: RecognitionAggregator) -> None:
        """Timing out with several possible matches is time_out."""
        step()
        timeout()

        assert "time_out" == verdict(agg.post_episode(ctx()))

    def test_no_terminal_event_is_time_out(self, agg: RecognitionAggregator) -> None:
        """A module that never reached a terminal state timed out."""
        step()

        assert "time_out" == verdict(agg.post_episode(ctx()))

    def test_time_out_with_right_hypothesis_is_correct_mlh(
        self, agg: RecognitionAggregator
    ) -> None:
        """A time-out whose most-likely graph carries the target is correct_mlh."""
        teach(agg, "g0", "mug")
        step()
        mlh(graph="g0")
        timeout()

        assert "correct_mlh" == verdict(agg.post_episode(ctx("mug")))

    def test_pose_time_out_with_wrong_hypothesis_is_confused_mlh(
        self, agg: RecognitionAggregator
    ) -> None:
        """A pose time-out whose most-likely graph lacks the target is confused_mlh."""
        teach(agg, "g1", "bowl")
        step(matches=("g1",))
        mlh(graph="g1")
        timeout(matches=("g1",))

        assert "confused_mlh" == verdict(agg.post_episode(ctx("mug")))

    def test_confused_with_consistent_child_is_consistent_child_obj(
        self, agg: RecognitionAggregator
    ) -> None:
        """Recognising a graph labelled as a consistent child of the target is consistent_child_obj."""
        teach(agg, "g2", "handle")
        step()
        recognize(graph="g2")

        stats = agg.post_episode(ctx("mug", consistent_child_labels=("handle",)))

        assert "consistent_child_obj" == verdict(stats)

    def test_confused_mlh_with_consistent_child_is_consistent_child_obj(
        self, agg: RecognitionAggregator
    ) -> None:
        """A confused_mlh whose most-likely graph is a consistent child becomes consistent_child_obj."""
        teach(agg, "g2", "handle")
        step()
        mlh(graph="g2")
        timeout()

        stats = agg.post_episode(ctx("mug", consistent_child_labels=("handle",)))

        assert "consistent_child_obj" == verdict(stats)

    def test_confused_with_unrelated_children_stays_confused(
        self, agg: RecognitionAggregator
    ) -> None:
        """Consistent children that the graph does not carry leave confused alone."""
        teach(agg, "g0", "bowl")
        step()
        recognize(graph="g0")

        assert "confused" == verdict(
            agg.post_episode(ctx("mug", consistent_child_labels=("handle",)))
        )

    def test_never_on_object_is_patch_off_object(self, agg: RecognitionAggregator) -> None:
        """A module whose steps were all off the object gets patch_off_object, whatever else it did."""
        step(on=False, matches=())
        timeout(matches=())

        assert "patch_off_object" == verdict(agg.post_episode(ctx()))

    def test_sensor_mapping_counts_patch_on_object(self) -> None:
        """With sensor_to_lm, a sensor patch on the object counts as the module having sensed it."""
        agg = RecognitionAggregator(sensor_to_lm={"patch_0": "lm_0"}).subscribe()
        step(on=False)
        runtime.emit(SensorPatchObserved(sensor_id="patch_0", step=1, on_object=True))
        timeout()

        assert "time_out" == verdict(agg.post_episode(ctx()))
        agg.close()

    def test_every_verdict_kind_is_reachable(self, agg: RecognitionAggregator) -> None:
        """The hand-written sequences above reach all ten verdicts (a guard for VERDICTS)."""
        seen = set()
        teach(agg, "g0", "mug")
        teach(agg, "g1", "bowl")
        teach(agg, "g2", "handle")
        for target, children, emit in [
            ("mug", (), lambda: step(on=False)),
            ("no_label", (), lambda: step()),
            ("mug", (), lambda: (step(matches=("g0",)), timeout(matches=("g0",)))),
            ("mug", (), lambda: (step(), timeout())),
            ("mug", ("handle",), lambda: (step(), recognize(graph="g2"))),
            ("mug", (), lambda: (step(), mlh(graph="g1"), timeout())),
            ("mug", (), lambda: (step(), mlh(graph="g0"), timeout())),
            ("mug", (), lambda: step(matches=())),
            ("mug", (), lambda: (step(), recognize(graph="g1"))),
            ("mug", (), lambda: (step(), recognize(graph="g0"))),
        ]:
            emit()  # type: ignore[no-untyped-call]
            seen.add(
                verdict(
                    agg.post_episode(ctx(target, mode="eval", consistent_child_labels=children))
                )
            )

        assert set(VERDICTS) == seen


class TestLabelMap:
    def test_labels_update_only_after_scoring(self, agg: RecognitionAggregator) -> None:
        """The first recognition of an unlabelled graph is confused; the next one is correct."""
        step()
        recognize(graph="g0")
        first = verdict(agg.post_episode(ctx("mug", episode=0)))
        step()
        recognize(graph="g0")
        second = verdict(agg.post_episode(ctx("mug", episode=1)))

        assert ("confused", "correct") == (first, second)

    def test_eval_episodes_do_not_teach_labels(self, agg: RecognitionAggregator) -> None:
        """By default only train contexts teach the map."""
        step()
        recognize(graph="g0")
        agg.post_episode(ctx("mug", mode="eval"))

        assert frozenset() == agg.labels("lm_0", "g0")

    def test_memory_update_wins_over_recognition(self, agg: RecognitionAggregator) -> None:
        """A graph the module stored into gets the label, not the graph it took the object for."""
        step()
        recognize(graph="g0")
        runtime.emit(GraphMemoryUpdated(lm_id="lm_0", graph_id="g5", num_nodes=2, created=True))
        agg.post_episode(ctx("mug"))

        assert (frozenset(), frozenset({"mug"})) == (
            agg.labels("lm_0", "g0"),
            agg.labels("lm_0", "g5"),
        )

    def test_labels_are_per_module(self, agg: RecognitionAggregator) -> None:
        """The same graph id in two modules names two graphs."""
        teach(agg, "g0", "mug", lm="lm_0")

        assert frozenset() == agg.labels("lm_1", "g0")


class TestModuleStats:
    def test_rotation_error_uses_closest_symmetric_pose(self, agg: RecognitionAggregator) -> None:
        """rotation_error is the smallest angle to the detected or any symmetric rotation."""
        teach(agg, "g0", "mug")
        half = math.sqrt(0.5)
        step()
        recognize(graph="g0", rotation=(half, 0, 0, half), sym=[(0.9998477, 0, 0, 0.0174524)])

        stats = agg.post_episode(ctx("mug", target_rotation=IDENTITY))

        assert 2.0 == lm_stats(stats).rotation_error

    def test_rotation_error_of_correct_mlh_uses_hypothesis(
        self, agg: RecognitionAggregator
    ) -> None:
        """correct_mlh measures the most-likely hypothesis's rotation."""
        teach(agg, "g0", "mug")
        step()
        mlh(graph="g0", rotation=(0.0, 1.0, 0.0, 0.0))
        timeout()

        assert 180.0 == lm_stats(agg.post_episode(ctx("mug"))).rotation_error

    def test_rotation_error_is_none_when_not_correct(self, agg: RecognitionAggregator) -> None:
        """Only correct verdicts have a rotation error."""
        step()
        timeout()

        assert None is lm_stats(agg.post_episode(ctx())).rotation_error

    def test_steps_and_first_terminal_state(self, agg: RecognitionAggregator) -> None:
        """num_steps counts on-object steps; the first terminal event gives step and verdict."""
        teach(agg, "g0", "mug")
        step(n=1)
        step(n=2, on=False)
        step(n=3, matches=("g0",))
        timeout(matches=("g0",), n=3)
        step(n=4, matches=("g0",))
        recognize(graph="g0", n=4)

        s = lm_stats(agg.post_episode(ctx("mug")))

        assert (3, 3, "pose_time_out", "correct") == (
            s.num_steps, s.terminal_step, s.first_terminal_performance, s.primary_performance,
        )  # fmt: skip

    def test_detected_object_pose_and_symmetry(self, agg: RecognitionAggregator) -> None:
        """The recognised graph, its labels, pose and symmetry evidence are reported."""
        teach(agg, "g0", "mug")
        step()
        recognize(graph="g0", sym=[(0, 0, 0, 1)])

        s = lm_stats(agg.post_episode(ctx("mug")))

        assert ("g0", ("mug",), (0.0, 0.0, 0.0), IDENTITY, 1) == (
            s.detected_object, s.detected_labels, s.detected_location, s.detected_rotation,
            s.symmetry_evidence,
        )  # fmt: skip


class TestEpisodeStats:
    def test_episode_verdict_is_strongest_module_verdict(self, agg: RecognitionAggregator) -> None:
        """no_match outranks time_out and correct_mlh; correct outranks everything."""
        teach(agg, "g0", "mug")
        step("lm_0", matches=())
        step("lm_1")
        timeout("lm_1")
        step("lm_2")
        mlh("lm_2", graph="g9")

        stats = agg.post_episode(ctx("mug", mode="eval"))

        assert "no_match" == next(s for s in stats if isinstance(s, EpisodeStats)).performance

    def test_episode_steps_and_run_time_come_from_events(self, agg: RecognitionAggregator) -> None:
        """num_steps is the most on-object steps; run time ends at the last event's timestamp."""
        context = ctx()
        step("lm_0", n=1)
        step("lm_0", n=2)
        step("lm_1", n=1)
        last = LearningModuleTimedOut(
            lm_id="lm_1", step=2, possible_matches=("a", "b"), pose_resolved=False
        )
        runtime.emit(last)

        e = next(s for s in agg.post_episode(context) if isinstance(s, EpisodeStats))

        assert (2, 2, 2, last.timestamp - context.timestamp) == (
            e.num_steps, e.num_learning_modules, e.terminal_step, e.run_time_s,
        )  # fmt: skip

    def test_episode_without_events_warns_and_is_patch_off_object(
        self, agg: RecognitionAggregator, caplog: pytest.LogCaptureFixture
    ) -> None:
        """An episode with no module events is scored patch_off_object, with one warning."""
        stats = agg.post_episode(ctx())

        assert (
            "patch_off_object" == next(s for s in stats if isinstance(s, EpisodeStats)).performance
        )
        assert "no learning-module events" in caplog.text


class TestOverallStats:
    def test_percentages_and_averages_per_mode(self, agg: RecognitionAggregator) -> None:
        """Totals are kept per mode, as percentages of that mode's episodes."""
        teach(agg, "g0", "mug")  # one train episode: no_match
        step()
        recognize(graph="g0")
        agg.post_episode(ctx("mug", mode="eval", episode=1))
        step()
        mlh(graph="g0")
        timeout()
        agg.post_episode(ctx("mug", mode="eval", episode=2))
        step()
        mlh(graph="g7")
        timeout()
        stats = agg.post_episode(ctx("mug", mode="eval", episode=3))
        step(matches=("g0",))
        timeout(matches=("g0",))
        stats = agg.post_episode(ctx("mug", mode="eval", episode=4))

        o = next(s for s in stats if isinstance(s, OverallStats))

        assert ("eval", 4, 50.0, 25.0, 0.0, 0.0, 25.0, 25.0, 50.0, 0.0) == (
            o.mode, o.num_episodes, o.percent_correct, o.percent_confused, o.percent_no_match,
            o.percent_time_out, o.percent_pose_time_out, o.percent_correct_mlh,
            o.percent_used_mlh_after_timeout, o.avg_rotation_error,
        )  # fmt: skip
        assert 1.0 == o.avg_num_lm_steps

    def test_order_is_modules_then_episode_then_overall(self, agg: RecognitionAggregator) -> None:
        """post_episode returns module stats (sorted by id), the episode, then the totals."""
        step("lm_1")
        step("lm_0")

        kinds = [(type(s).__name__, getattr(s, "lm_id", None)) for s in agg.post_episode(ctx())]

        assert [
            ("LearningModuleEpisodeStats", "lm_0"),
            ("LearningModuleEpisodeStats", "lm_1"),
            ("EpisodeStats", None),
            ("OverallStats", None),
        ] == kinds


class TestBadInput:
    def test_post_episode_needs_a_context(self, agg: RecognitionAggregator) -> None:
        """A non-context raises ExperimentTypeError naming what it got."""
        with pytest.raises(ExperimentTypeError, match="context must be an EpisodeContext"):
            agg.post_episode("mug")  # type: ignore[arg-type]

    def test_refused_post_episode_resets_nothing(self, agg: RecognitionAggregator) -> None:
        """The episode's events survive a refused post_episode and score the next valid one."""
        step(matches=())
        with pytest.raises(ExperimentTypeError):
            agg.post_episode(None)  # type: ignore[arg-type]

        assert "no_match" == verdict(agg.post_episode(ctx()))

    def test_unknown_learning_mode_is_refused(self) -> None:
        """learn_labels_in must name modes."""
        with pytest.raises(ExperimentValueError, match="learn_labels_in"):
            RecognitionAggregator(learn_labels_in=("test",))

    def test_sensor_mapping_must_be_str_to_str(self) -> None:
        """sensor_to_lm with a non-str value is refused."""
        with pytest.raises(ExperimentTypeError, match="sensor_to_lm"):
            RecognitionAggregator(sensor_to_lm={"patch": 0})  # type: ignore[dict-item]


class TestRotationError:
    def test_q_and_minus_q_are_the_same_rotation(self) -> None:
        """The sign of a quaternion does not change the error."""
        assert 0.0 == rotation_error(IDENTITY, [(-1.0, 0.0, 0.0, 0.0)])

    def test_quarter_turn_is_ninety_degrees(self) -> None:
        """A 90 degree turn about z is 90.0, rounded to 4 places."""
        half = math.sqrt(0.5)

        assert 90.0 == rotation_error(IDENTITY, [(half, 0.0, 0.0, half)])

    def test_empty_candidates_raise(self) -> None:
        """No detected rotation is a caller error."""
        with pytest.raises(ExperimentValueError, match="at least one rotation"):
            rotation_error(IDENTITY, [])

    def test_non_finite_rotation_raises(self) -> None:
        """A NaN detected rotation is refused rather than scored as a perfect match."""
        with pytest.raises(ExperimentValueError, match="finite, non-zero quaternion"):
            rotation_error(IDENTITY, [(math.nan, 0.0, 0.0, 0.0)])


class TestDegenerateRuntimeRotation:
    def test_zero_detected_rotation_scores_none_and_warns(
        self, agg: RecognitionAggregator, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A zero quaternion from the runtime keeps the verdict, records no error and warns."""
        teach(agg, "g0", "mug")
        step()
        recognize(rotation=(0.0, 0.0, 0.0, 0.0))

        with caplog.at_level("WARNING", logger="experiment_telemetry.aggregators.verdicts"):
            stats = lm_stats(agg.post_episode(ctx()))

        assert ("correct", None) == (stats.primary_performance, stats.rotation_error)
        assert "rotation_error recorded as None" in caplog.text
