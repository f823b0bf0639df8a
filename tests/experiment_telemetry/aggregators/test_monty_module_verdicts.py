"""Monty's per-module verdicts (primary, stepwise, first conclusion), one test per branch.

Test names carry the branch: ``L<line>`` is a line of Monty's ``logging_utils.py`` (the
reference in ``../shared/reference/tbp.monty/``), ``D<n>`` a departure listed in
``docs/experiment_telemetry.md``.
"""

from __future__ import annotations

import math

import pytest

from experiment_telemetry.aggregators import RecognitionAggregator
from lm_events import (
    IDENTITY,
    ctx,
    lm_stats,
    mlh,
    no_match,
    recognize,
    reset,
    step,
    teach,
    timeout,
    verdict,
    withdraw,
)

QUARTER_Z = (math.sqrt(0.5), 0.0, 0.0, math.sqrt(0.5))  # 90 degrees about z
HALF_Z = (0.0, 0.0, 0.0, 1.0)


def about_z(degrees: float) -> tuple[float, float, float, float]:
    """(w, x, y, z) of a rotation by ``degrees`` about z."""
    half = math.radians(degrees) / 2
    return (math.cos(half), 0.0, 0.0, math.sin(half))


class TestGate:
    def test_L574_no_input_is_patch_off_object(self, agg: RecognitionAggregator) -> None:
        """A module that only reset: patch_off_object everywhere, no steps, no result."""
        reset()
        s = lm_stats(agg.post_episode(ctx()))

        assert ("patch_off_object",) * 3 == (
            s.primary_performance, s.stepwise_performance, s.individual_ts_performance
        )  # fmt: skip
        assert (0, None, 0, (0.0, 0.0, 0.0)) == (
            s.num_steps, s.result, s.num_possible_matches, s.location_rel_body
        )  # fmt: skip

    def test_L575_first_input_off_object_is_patch_off_object_even_after_recognition(
        self, agg: RecognitionAggregator
    ) -> None:
        """Monty looks at the first input only: off the object, a later correct recognition
        still scores patch_off_object, without a rotation error."""
        teach(agg, "g0", "mug")
        step(on=False)
        step(n=2, matches=("g0",))
        recognize(graph="g0", n=2)
        s = lm_stats(agg.post_episode(ctx()))

        assert ("patch_off_object", None) == (s.primary_performance, s.rotation_error)

    def test_L577_num_steps_counts_exploratory_inputs(self, agg: RecognitionAggregator) -> None:
        """Three matching and two exploring inputs are five steps."""
        for n in range(1, 6):
            step(n=n, exploring=n > 3)

        assert 5 == lm_stats(agg.post_episode(ctx())).num_steps


class TestPrimaryPerformance:
    @pytest.mark.parametrize("terminal", ["recognized", "timed_out", "none", "no_match"])
    def test_L584_final_possible_matches_empty_is_no_match_whatever_the_state(
        self, agg: RecognitionAggregator, terminal: str
    ) -> None:
        """Possible matches empty at the end: no_match, whatever the terminal state."""
        teach(agg, "g0", "mug")
        step(matches=("g0",))
        if terminal == "recognized":
            recognize(graph="g0")
        elif terminal == "timed_out":
            timeout(matches=("g0",))
        elif terminal == "no_match":
            no_match()
        step(n=3, matches=())

        assert "no_match" == verdict(agg.post_episode(ctx()))

    def test_L584_before_L587_no_match_beats_no_label(self, agg: RecognitionAggregator) -> None:
        """The empty-matches branch comes before the no_label branch."""
        step(matches=())

        assert "no_match" == verdict(agg.post_episode(ctx("no_label")))

    def test_L587_no_label_target_is_no_label_even_when_recognised(
        self, agg: RecognitionAggregator
    ) -> None:
        """A no_label target gives no_label, in primary and stepwise, after a recognition."""
        step()
        recognize()
        s = lm_stats(agg.post_episode(ctx("no_label", stepwise_target="mug")))

        assert ("no_label", "no_label") == (s.primary_performance, s.stepwise_performance)

    def test_L593_match_with_target_label_is_correct(self, agg: RecognitionAggregator) -> None:
        """A recognised graph learned under the target is correct."""
        teach(agg, "g0", "mug")
        step()
        recognize(graph="g0")

        assert "correct" == verdict(agg.post_episode(ctx("mug")))

    def test_L595_correct_rotation_error_uses_symmetric_set_only(
        self, agg: RecognitionAggregator
    ) -> None:
        """With symmetric rotations, the error is the closest of them, not of the detected one."""
        teach(agg, "g0", "mug")
        step()
        recognize(graph="g0", rotation=IDENTITY, sym=(QUARTER_Z, HALF_Z))

        assert 90.0 == lm_stats(agg.post_episode(ctx(target_rotation=IDENTITY))).rotation_error

    def test_L601_correct_without_symmetry_uses_detected_rotation(
        self, agg: RecognitionAggregator
    ) -> None:
        """Without symmetric rotations, the error is that of the detected rotation."""
        teach(agg, "g0", "mug")
        step()
        recognize(graph="g0", rotation=QUARTER_Z)

        assert 90.0 == lm_stats(agg.post_episode(ctx())).rotation_error

    def test_D19_L595_stale_symmetric_set_is_not_reused(self, agg: RecognitionAggregator) -> None:
        """Recognised by symmetry 60 degrees off, then uniquely 5 degrees off: the error is that
        of the last recognition, 5.0 (Monty scores its stale symmetric set: 60.0, D19)."""
        teach(agg, "g0", "mug")
        step()
        recognize(graph="g0", rotation=about_z(60), sym=(about_z(60), about_z(-60)))
        recognize(graph="g0", rotation=about_z(5), n=3)

        assert (
            5.0 == lm_stats(agg.post_episode(ctx("mug", target_rotation=IDENTITY))).rotation_error
        )

    def test_L611_match_without_target_label_is_confused(self, agg: RecognitionAggregator) -> None:
        """A recognised graph learned under another label is confused, without an error."""
        teach(agg, "g0", "bowl")
        step()
        recognize(graph="g0")
        s = lm_stats(agg.post_episode(ctx("mug")))

        assert ("confused", None) == (s.primary_performance, s.rotation_error)

    def test_L614_stepwise_correct_and_confused_use_the_stepwise_label(
        self, agg: RecognitionAggregator
    ) -> None:
        """The primary target confuses what the stepwise target confirms."""
        teach(agg, "g0", "bowl")
        step()
        recognize(graph="g0")
        s = lm_stats(agg.post_episode(ctx("mug", stepwise_target="bowl")))

        assert ("confused", "correct") == (s.primary_performance, s.stepwise_performance)

    def test_L620_time_out_with_one_match_is_pose_time_out_and_result_is_the_list(
        self, agg: RecognitionAggregator
    ) -> None:
        """A time-out with one match left: pose_time_out, and result lists the matches."""
        reset(evidence=False)
        step(matches=("g0",))
        timeout(matches=("g0",))
        s = lm_stats(agg.post_episode(ctx()))

        assert ("pose_time_out", ("g0",)) == (s.primary_performance, s.result)

    def test_L620_time_out_with_several_matches_is_time_out(
        self, agg: RecognitionAggregator
    ) -> None:
        """A time-out with two matches left is time_out."""
        reset(evidence=False)
        step()
        timeout()

        assert "time_out" == verdict(agg.post_episode(ctx()))

    def test_L620_fallthrough_no_state_is_no_verdict(self, agg: RecognitionAggregator) -> None:
        """Bug 2: a recognition withdrawn before the episode ended leaves no verdict."""
        teach(agg, "mug_graph", "mug")
        reset()
        step(n=1, matches=("mug_graph",))
        recognize(graph="mug_graph", n=1)
        step(n=2, matches=("mug_graph", "bowl_graph"))
        withdraw(matches=("mug_graph", "bowl_graph"), n=2)
        s = lm_stats(agg.post_episode(ctx("mug", mode="eval")))

        assert (None, None) == (s.primary_performance, s.result)

    def test_L620_fallthrough_no_terminal_event_is_no_verdict(
        self, agg: RecognitionAggregator
    ) -> None:
        """A module that never concluded nor timed out has no verdict (not time_out)."""
        reset(evidence=False)
        step()

        assert verdict(agg.post_episode(ctx())) is None

    def test_L620_fallthrough_no_match_state_with_matches_back_is_no_match(
        self, agg: RecognitionAggregator
    ) -> None:
        """Bug 1, the issue's example: a no-match is kept although matches came back and the
        most likely hypothesis is the target."""
        teach(agg, "mug", "mug")
        reset(evidence=True)
        no_match(n=0)
        step(n=1, matches=())
        for n in range(2, 5):
            step(n=n, matches=("mug",))
        mlh(graph="mug")

        assert "no_match" == verdict(agg.post_episode(ctx("mug", mode="eval")))

    def test_withdrawn_no_match_then_time_out_is_time_out(self, agg: RecognitionAggregator) -> None:
        """A vote restores a no-matched module, which then times out: time_out."""
        reset(evidence=False)
        step(matches=())
        no_match()
        withdraw(matches=("g0", "g1"))
        timeout(matches=("g0", "g1"))

        assert "time_out" == verdict(agg.post_episode(ctx()))


class TestIndividualTerminalState:
    def test_L626_individual_default_is_time_out_when_only_timed_out(
        self, agg: RecognitionAggregator
    ) -> None:
        """A time-out is not a conclusion: individual_ts is time_out with no step."""
        step()
        timeout()
        s = lm_stats(agg.post_episode(ctx()))

        assert ("time_out", None) == (s.individual_ts_performance, s.individual_ts_reached_at_step)

    def test_L630_individual_first_conclusion_no_match_wins_over_later_recognition(
        self, agg: RecognitionAggregator
    ) -> None:
        """No-match, withdrawn, then a correct recognition: individual no_match, primary correct."""
        teach(agg, "g0", "mug")
        step(matches=())
        no_match(n=1)
        withdraw(matches=("g0",), n=1)
        step(n=2, matches=("g0",))
        recognize(graph="g0", n=2)
        s = lm_stats(agg.post_episode(ctx()))

        assert ("no_match", "correct") == (s.individual_ts_performance, s.primary_performance)

    def test_L636_individual_correct_with_rotation_error_symmetric(
        self, agg: RecognitionAggregator
    ) -> None:
        """The first recognition's symmetric rotations give the individual rotation error."""
        teach(agg, "g0", "mug")
        step()
        recognize(graph="g0", rotation=IDENTITY, sym=(HALF_Z, QUARTER_Z))
        s = lm_stats(agg.post_episode(ctx()))

        assert ("correct", 90.0) == (s.individual_ts_performance, s.individual_ts_rotation_error)

    def test_L636_individual_correct_with_rotation_error_detected(
        self, agg: RecognitionAggregator
    ) -> None:
        """Without symmetry, the first recognition's own rotation gives the individual error."""
        teach(agg, "g0", "mug")
        step()
        recognize(graph="g0", rotation=HALF_Z)
        withdraw()
        recognize(graph="g0", rotation=IDENTITY, n=4)
        s = lm_stats(agg.post_episode(ctx()))

        assert (180.0, 0.0) == (s.individual_ts_rotation_error, s.rotation_error)

    def test_L653_individual_confused(self, agg: RecognitionAggregator) -> None:
        """A first recognition of a graph learned under another label is confused."""
        teach(agg, "g0", "bowl")
        step()
        recognize(graph="g0")

        assert "confused" == lm_stats(agg.post_episode(ctx("mug"))).individual_ts_performance

    def test_individual_ignores_no_label(self, agg: RecognitionAggregator) -> None:
        """The no_label rule is not applied to the first conclusion: it is confused."""
        teach(agg, "g0", "mug")
        step()
        recognize(graph="g0")
        s = lm_stats(agg.post_episode(ctx("no_label")))

        assert ("confused", "no_label") == (s.individual_ts_performance, s.primary_performance)

    def test_L628_reached_at_step_is_first_conclusion_step(
        self, agg: RecognitionAggregator
    ) -> None:
        """The step of the first conclusion is kept after a later re-recognition."""
        step()
        recognize(n=4)
        withdraw()
        recognize(n=7)

        assert 4 == lm_stats(agg.post_episode(ctx())).individual_ts_reached_at_step
