"""What Monty's modules record between a step's inputs and its end, one test per branch.

Monty's step runs each module's input, then the vote round (``MontyForGraphMatching._vote``:
``receive_votes``, then ``update_stats_after_vote``), then the terminal check
(``check_terminal_conditions`` -> ``update_terminal_condition`` ->
``get_unique_pose_if_available``). ``LearningModuleStep`` is emitted after the votes, so what
the vote round and the check change reaches us through ``LearningModuleVotesReceived`` and the
``symmetry_evidence`` that ``Recognized``/``TimedOut`` carry. Each case is the example of
issue 32, with the value Monty's statistics code gives for it (its ``get_stats_per_lm``,
``logging_utils.py`` L684, L794, L166-216, and ``graph_matching_loggers.py`` G393 in
``../shared/reference/tbp.monty/``).
"""

from __future__ import annotations

import math

import pytest

from experiment_telemetry.aggregators import RecognitionAggregator
from lm_events import (
    ctx,
    lm_stats,
    mlh,
    overall_of,
    recognize,
    reset,
    step,
    teach,
    timeout,
    votes,
)

FOUR_FOLD = tuple(
    (math.cos(math.radians(45 * k)), 0.0, 0.0, math.sin(math.radians(45 * k))) for k in range(4)
)
"""Four rotations about z, 90 degrees apart: an object with four equally likely poses."""


class TestSymmetryCountOfTheLastCheck:
    def test_get_unique_pose_if_available_raises_symmetry_evidence(
        self, agg: RecognitionAggregator
    ) -> None:
        """The check that settles the pose raises the count after the step was reported: the
        recognition's count (3) is the module's, as in Monty, not the step's (0)."""
        teach(agg, "mug", "mug")
        reset(evidence=True)
        step(matches=("mug",), symmetry=0)
        recognize(graph="mug", sym=FOUR_FOLD, symmetry=3)

        assert 3 == lm_stats(agg.post_episode(ctx("mug", mode="eval"))).symmetry_evidence

    def test_get_unique_pose_if_available_count_when_stopped(
        self, agg: RecognitionAggregator
    ) -> None:
        """A module stopped undecided reports the count its last check left (2), not the
        last step's (1)."""
        reset(evidence=False)
        step(matches=("mug",), symmetry=1)
        timeout(matches=("mug",), symmetry_evidence=2)

        assert 2 == lm_stats(agg.post_episode(ctx("mug", mode="eval"))).symmetry_evidence

    def test_recognition_without_a_count_keeps_the_steps(self, agg: RecognitionAggregator) -> None:
        """A recognition that does not say its count (None) leaves the last step's."""
        reset(evidence=True)
        step(matches=("mug",), symmetry=4)
        recognize(graph="mug")

        assert 4 == lm_stats(agg.post_episode(ctx("mug", mode="eval"))).symmetry_evidence


class TestPredictionErrorPerVoteRound:
    def test_update_stats_after_vote_appends_last_prediction_error(
        self, agg: RecognitionAggregator
    ) -> None:
        """Two evidence modules voting; lm_0's inputs have errors None, 0.2, (no input), 0.9.
        Each input and each vote round appends the last input's error to Monty's list:
        [0.2, 0.2, 0.2, 0.9, 0.9], mean 0.48 (one value per input would give 0.55)."""
        reset("lm_0", evidence=True)
        reset("lm_1", evidence=True)
        for n, error in ((1, None), (2, 0.2), (None, None), (3, 0.9)):
            if n is not None:
                step("lm_0", n=n)
                mlh("lm_0", error=error, n=n)
            step("lm_1", n=4 if n is None else n)
            mlh("lm_1", error=0.1, n=4 if n is None else n)
            votes("lm_0", n=n or 2)
            votes("lm_1", n=4 if n is None else n)
        stats = agg.post_episode(ctx("mug", mode="eval"))

        assert pytest.approx(0.48) == lm_stats(stats, "lm_0").episode_avg_prediction_error
        assert pytest.approx(0.1) == lm_stats(stats, "lm_1").episode_avg_prediction_error
        assert pytest.approx((0.48 + 0.1) / 2) == overall_of(stats).avg_prediction_error

    def test_update_stats_after_vote_appends_nothing_before_an_error(
        self, agg: RecognitionAggregator
    ) -> None:
        """Vote rounds before the module's first prediction error append nothing (NaN mean)."""
        reset(evidence=True)
        step()
        mlh(error=None)
        votes()
        votes()
        s = lm_stats(agg.post_episode(ctx("mug", mode="eval")))

        assert s.episode_avg_prediction_error is not None
        assert math.isnan(s.episode_avg_prediction_error)


class TestMatchesNarrowedByVotes:
    @pytest.mark.parametrize(
        ("left", "expected"),
        [
            (("mug",), (1, "mug", "target_in_possible_matches_(TP)")),
            (("bowl",), (1, "bowl", "target_not_matched_(FN)")),
        ],
        ids=["votes_leave_the_target", "votes_leave_another_object"],
    )
    def test_receive_votes_narrows_matches_without_input(
        self,
        agg: RecognitionAggregator,
        left: tuple[str, ...],
        expected: tuple[int, str, str],
    ) -> None:
        """Step(1, [mug, bowl]); the next step brings no input and the votes leave ``left``;
        then the module settles. Monty counts the matches the votes left (1, sources "mug"),
        not the last input's (2, "bowl-mug")."""
        teach(agg, "mug", "mug")
        teach(agg, "bowl", "bowl")
        reset(evidence=False)
        step(matches=("bowl", "mug"))
        votes(matches=("bowl", "mug"), n=1)
        votes(matches=left, n=1)  # a step without input
        recognize(graph=left[0], n=1)
        s = lm_stats(agg.post_episode(ctx("mug", mode="eval")))

        assert expected == (s.num_possible_matches, s.possible_match_sources, s.TFNP)

    def test_votes_before_any_input_change_nothing(self, agg: RecognitionAggregator) -> None:
        """A module that heard votes but never processed an input stays patch_off_object with
        no possible matches."""
        reset(evidence=False)
        votes(matches=("mug",), n=0)
        s = lm_stats(agg.post_episode(ctx("mug", mode="eval")))

        assert ("patch_off_object", 0) == (s.primary_performance, s.num_possible_matches)
