"""Monty's episode and overall statistics, one test per branch of its logger, events in.

``G<line>`` names a line of Monty's ``graph_matching_loggers.py`` (the reference in
``../shared/reference/tbp.monty/``), ``D<n>`` a departure listed in
``docs/experiment_telemetry.md``.
"""

from __future__ import annotations

import math

import pytest

from experiment_telemetry.aggregators import RecognitionAggregator
from experiment_telemetry.stats import LearningModuleEpisodeStats
from lm_events import (
    ctx,
    episode_of,
    goal,
    lm_stats,
    mlh,
    no_match,
    overall_of,
    recognize,
    reset,
    step,
    teach,
    timeout,
    withdraw,
)

QUARTER_Z = (math.sqrt(0.5), 0.0, 0.0, math.sqrt(0.5))


def eval_episode(
    agg: RecognitionAggregator, episode: int, target: str = "mug", **kw: object
) -> list[object]:
    return list(agg.post_episode(ctx(target, mode="eval", episode=episode, **kw)))


def correct(agg: RecognitionAggregator, lm: str = "lm_0") -> None:
    step(lm, matches=("g0",))
    recognize(lm, graph="g0", rotation=QUARTER_Z)


class TestEpisodeVerdict:
    def test_G289_episode_verdict_is_strongest_module_verdict(
        self, agg: RecognitionAggregator
    ) -> None:
        """correct beats no_match beats time_out; a module without a verdict is skipped."""
        teach(agg, "g0", "mug", lm="lm_0")
        correct(agg, "lm_0")
        step("lm_1", matches=())
        reset("lm_2", evidence=False)
        step("lm_2")
        timeout("lm_2")
        reset("lm_3", evidence=False)
        step("lm_3")  # no terminal event: no verdict

        assert "correct" == episode_of(eval_episode(agg, 1)).performance

    def test_D4_no_verdict_episode_has_all_flags_zero(self, agg: RecognitionAggregator) -> None:
        """An episode whose modules have no verdict has verdict None and every flag 0."""
        reset(evidence=False)
        step()
        e = episode_of(eval_episode(agg, 0))

        assert (None, 0) == (
            e.performance,
            e.correct + e.no_match + e.confused + e.time_out + e.pose_time_out,
        )

    def test_D3_first_episode_without_verdict_does_not_raise(
        self, agg: RecognitionAggregator
    ) -> None:
        """A mode's first episode without a verdict counts as an episode (Monty raises KeyError)."""
        reset(evidence=False)
        step()
        o = overall_of(eval_episode(agg, 0))

        assert (1, 0.0, {"none": 1}) == (o.num_episodes, o.percent_correct, o.episode_verdicts)

    def test_D13_episode_without_events_warns_and_has_no_verdict(
        self, agg: RecognitionAggregator, caplog: pytest.LogCaptureFixture
    ) -> None:
        """No module events and no module seen before: no module rows, verdict None, one warning."""
        stats = eval_episode(agg, 0)

        assert ([], None) == (
            [s for s in stats if isinstance(s, LearningModuleEpisodeStats)],
            episode_of(stats).performance,
        )
        assert "no learning-module events" in caplog.text

    def test_modules_seen_before_are_scored_patch_off_object(
        self, agg: RecognitionAggregator
    ) -> None:
        """A module seen in an earlier episode that is silent now is scored patch_off_object."""
        step("lm_0")
        eval_episode(agg, 0)
        step("lm_1")

        assert "patch_off_object" == lm_stats(eval_episode(agg, 1), "lm_0").primary_performance

    def test_modules_in_order_of_appearance(self, agg: RecognitionAggregator) -> None:
        """Modules are scored in the order they first appeared (lm_10 after lm_2)."""
        reset("lm_2")
        reset("lm_10")
        reset("lm_1")
        stats = eval_episode(agg, 0)

        assert ["lm_2", "lm_10", "lm_1"] == [
            s.lm_id for s in stats if isinstance(s, LearningModuleEpisodeStats)
        ]


class TestEpisodeFlags:
    def test_G415_episode_correct_includes_correct_mlh(self, agg: RecognitionAggregator) -> None:
        """A correct_mlh episode flags correct, correct_mlh, used_mlh and child-or-parent."""
        teach(agg, "g0", "mug")
        reset(evidence=True)
        step()
        mlh(graph="g0")
        timeout()
        e = episode_of(eval_episode(agg, 1))

        assert (1, 1, 1, 1, 0) == (
            e.correct, e.correct_mlh, e.used_mlh_after_time_out, e.consistent_child_or_parent, e.confused
        )  # fmt: skip

    def test_G417_confused_includes_confused_mlh(self, agg: RecognitionAggregator) -> None:
        """A confused_mlh episode flags confused and confused_mlh, not correct."""
        reset(evidence=True)
        step()
        mlh(graph="g9")
        timeout()
        e = episode_of(eval_episode(agg, 0))

        assert (1, 1, 0) == (e.confused, e.confused_mlh, e.correct)

    def test_G425_consistent_child_or_parent(self, agg: RecognitionAggregator) -> None:
        """A consistent_child_obj episode flags consistent_child_obj and child-or-parent."""
        reset(evidence=True)
        step()
        mlh(graph="handle")
        timeout()
        e = episode_of(eval_episode(agg, 0, consistent_child_labels=["handle"]))

        assert (1, 1, 0) == (e.consistent_child_obj, e.consistent_child_or_parent, e.confused)

    def test_G326_episode_rotation_error_minus_one_when_none(
        self, agg: RecognitionAggregator
    ) -> None:
        """Without any rotation error the episode's is -1."""
        step()
        timeout()

        assert -1.0 == episode_of(eval_episode(agg, 0)).rotation_error

    def test_G432_episode_rotation_error_is_mean_over_modules(
        self, agg: RecognitionAggregator
    ) -> None:
        """The episode's rotation error is the mean of its modules' errors."""
        teach(agg, "g0", "mug", lm="lm_0")
        teach(agg, "g0", "mug", lm="lm_1")
        correct(agg, "lm_0")
        step("lm_1", matches=("g0",))
        recognize("lm_1", graph="g0")

        assert 45.0 == episode_of(eval_episode(agg, 1)).rotation_error


class TestEpisodeNumbers:
    def test_G437_lm_steps_is_max(self, agg: RecognitionAggregator) -> None:
        """lm_steps is the most inputs any module processed."""
        for n in range(3):
            step("lm_0", n=n)
        step("lm_1")

        assert 3 == episode_of(eval_episode(agg, 0)).lm_steps

    def test_G440_mean_steps_to_indv_ts(self, agg: RecognitionAggregator) -> None:
        """The mean of the first-conclusion steps of the modules that concluded."""
        step("lm_0")
        recognize("lm_0", n=2)
        step("lm_1")
        no_match("lm_1", n=5)
        step("lm_2")

        assert 3.5 == episode_of(eval_episode(agg, 0)).mean_lm_steps_to_indv_ts

    def test_G440_mean_steps_to_indv_ts_nan_when_none(self, agg: RecognitionAggregator) -> None:
        """Without conclusions the mean is NaN."""
        step()

        assert math.isnan(episode_of(eval_episode(agg, 0)).mean_lm_steps_to_indv_ts)

    def test_G445_run_time_is_max_module_time(self, agg: RecognitionAggregator) -> None:
        """run_time is the longest module time."""
        reset("lm_0", ts=10.0)
        step("lm_0", ts=11.0)
        reset("lm_1", ts=10.0)
        step("lm_1", ts=13.5)

        assert 3.5 == episode_of(eval_episode(agg, 0)).run_time

    def test_G448_symmetry_mean(self, agg: RecognitionAggregator) -> None:
        """symmetry_evidence is the mean over modules."""
        step("lm_0", symmetry=4)
        step("lm_1", symmetry=1)

        assert 2.5 == episode_of(eval_episode(agg, 0)).symmetry_evidence

    def test_D8_goal_stats_sum_over_modules(self, agg: RecognitionAggregator) -> None:
        """Goal states are summed over modules, the success rate is achieved over attempted."""
        step("lm_0")
        goal("lm_0", achieved=True)
        goal("lm_0", achieved=True)
        step("lm_1")
        goal("lm_1", achieved=False)
        e = episode_of(eval_episode(agg, 0))

        assert (3, 2 / 3) == (e.goal_states_attempted, e.goal_state_success_rate)

    def test_D6_episode_avg_prediction_error_is_this_episodes_mean(
        self, agg: RecognitionAggregator
    ) -> None:
        """The episode's prediction error is the mean of its evidence modules' averages,
        NaN ones left out, whatever earlier episodes had."""
        reset("lm_0", evidence=True)
        step("lm_0")
        mlh("lm_0", error=0.9)
        eval_episode(agg, 0)
        reset("lm_0", evidence=True)
        step("lm_0")
        mlh("lm_0", error=0.2)
        reset("lm_1", evidence=True)
        step("lm_1")
        mlh("lm_1")  # no error: NaN average

        assert 0.2 == episode_of(eval_episode(agg, 1)).avg_prediction_error

    def test_D6_G513_several_modules_without_a_valid_error_is_nan(
        self, agg: RecognitionAggregator
    ) -> None:
        """Several modules, none with a prediction error this episode: ours is NaN (W&B leaves
        the key out), where Monty logs its running list of averages, [0.9, nan, nan, nan]."""
        errors = {0: (0.9, None), 1: (None, None)}  # per episode: lm_0's and lm_1's error
        stats = []
        for episode, pair in errors.items():
            for lm, error in zip(("lm_0", "lm_1"), pair, strict=True):
                reset(lm, evidence=True)
                step(lm)
                mlh(lm, error=error)  # None: no error, a NaN average
            stats.append(episode_of(eval_episode(agg, episode)).avg_prediction_error)

        assert 0.9 == stats[0]
        assert math.isnan(stats[1])


class TestOverallStats:
    def _six_episodes(self, agg: RecognitionAggregator) -> object:
        teach(agg, "g0", "mug", lm="lm_0")
        teach(agg, "g0", "mug", lm="lm_1")
        plan = [  # (lm_0, lm_1) outcomes
            ("correct", "correct"),
            ("correct_mlh", "time_out"),
            ("confused_mlh", "no_match"),
            ("none", "none"),
            ("off", "correct"),
            ("child", "off"),
        ]
        stats: list[object] = []
        for episode, outcomes in enumerate(plan):
            for lm, outcome in zip(("lm_0", "lm_1"), outcomes, strict=True):
                reset(lm, evidence=True)
                if outcome == "off":
                    continue
                step(lm, matches=("g0", "g1") if outcome != "correct" else ("g0",))
                if outcome == "correct":
                    recognize(lm, graph="g0")
                elif outcome == "no_match":
                    step(lm, n=2, matches=())
                elif outcome in ("correct_mlh", "confused_mlh", "child"):
                    mlh(
                        lm,
                        graph={"correct_mlh": "g0", "confused_mlh": "g1", "child": "handle"}[
                            outcome
                        ],
                    )
                    timeout(lm)
                elif outcome == "time_out":
                    withdraw(lm)
                    timeout(lm)
            stats = eval_episode(agg, episode, consistent_child_labels=["handle"])
        return overall_of(stats)

    def test_G337_percentages_over_episodes(self, agg: RecognitionAggregator) -> None:
        """Episode verdicts: correct, correct_mlh, no_match, none, correct, consistent_child_obj."""
        o = self._six_episodes(agg)

        assert (6, 100 * 3 / 6, 100 * 1 / 6, 100 * 1 / 6, 0.0, 100 * 1 / 6) == (
            o.num_episodes, o.percent_correct, o.percent_correct_mlh, o.percent_no_match,
            o.percent_confused, o.percent_consistent_child_obj,
        )  # fmt: skip

    def test_G461_per_lm_denominators_are_module_episodes(self, agg: RecognitionAggregator) -> None:
        """Per-module percentages divide by episodes x modules, no-verdict modules included."""
        o = self._six_episodes(agg)

        assert (100 * 4 / 12, 100 * 1 / 12, 100 * 2 / 12, 100 * 1 / 12, 100 * 1 / 12) == (
            o.percent_correct_per_lm, o.percent_confused_per_lm, o.percent_patch_off_object_per_lm,
            o.percent_time_out_per_lm, o.percent_consistent_child_obj_per_lm,
        )  # fmt: skip

    def test_G275_correct_child_or_parent_counted_per_module(
        self, agg: RecognitionAggregator
    ) -> None:
        """Child-or-parent counts modules (correct, correct_mlh, consistent child) over N x L."""
        o = self._six_episodes(agg)

        assert 100 * 5 / 12 == o.percent_correct_child_or_parent

    def test_G254_none_verdict_not_counted_per_lm_but_in_denominator(
        self, agg: RecognitionAggregator
    ) -> None:
        """Modules without a verdict are counted as 'none', and still in num_lm_episodes."""
        o = self._six_episodes(agg)

        assert (2, 12) == (o.lm_verdicts["none"], o.num_lm_episodes)

    def test_G407_overall_run_time_sum_over_modules(self, agg: RecognitionAggregator) -> None:
        """run_time is the sum of module times per module; avg_episode_run_time their mean."""
        for episode, times in enumerate([(1.0, 3.0), (2.0, 6.0)]):
            for lm, t in zip(("lm_0", "lm_1"), times, strict=True):
                reset(lm, ts=100.0)
                step(lm, ts=100.0 + t)
            o = overall_of(eval_episode(agg, episode))

        assert (6.0, 3.0) == (o.run_time, o.avg_episode_run_time)

    def test_G383_monty_steps_and_lm_steps_averages(self, agg: RecognitionAggregator) -> None:
        """avg_num_lm_steps averages module steps over module-episodes."""
        step("lm_0")
        step("lm_0", n=2)
        step("lm_1")

        assert 1.5 == overall_of(eval_episode(agg, 0)).avg_num_lm_steps

    def test_G373_avg_rotation_error_nan_when_none(self, agg: RecognitionAggregator) -> None:
        """Without any rotation error the overall average is NaN."""
        step()

        assert math.isnan(overall_of(eval_episode(agg, 0)).avg_rotation_error)

    def test_D7_overall_avg_prediction_error_ignores_nan(self, agg: RecognitionAggregator) -> None:
        """A module without prediction errors does not make the overall average NaN."""
        reset("lm_0", evidence=True)
        step("lm_0")
        mlh("lm_0", error=0.4)
        reset("lm_1", evidence=True)
        step("lm_1")

        assert 0.4 == overall_of(eval_episode(agg, 0)).avg_prediction_error

    def test_G128_modes_are_counted_apart(self, agg: RecognitionAggregator) -> None:
        """Train and eval keep separate totals."""
        teach(agg, "g0", "mug")
        step()
        o = overall_of(eval_episode(agg, 1))

        assert (1, "eval") == (o.num_episodes, o.mode)
