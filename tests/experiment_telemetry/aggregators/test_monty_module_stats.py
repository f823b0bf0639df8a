"""Monty's per-module statistics, one test per branch of its code, events in and stats out.

Test names carry the branch: ``L<line>`` is a line of Monty's ``logging_utils.py`` (the
reference in ``../shared/reference/tbp.monty/``), ``D<n>`` a departure listed in
``docs/experiment_telemetry.md``.
"""

from __future__ import annotations

import math

import pytest

from experiment_telemetry.aggregators import RecognitionAggregator
from experiment_telemetry.context import GROUND_TRUTH_STREAM, ObjectUnderSensor
from lm_events import (
    IDENTITY,
    ctx,
    goal,
    lm_stats,
    mlh,
    recognize,
    reset,
    step,
    system_step,
    teach,
    timeout,
    verdict,
    withdraw,
)
from runtime_telemetry import get_telemetry

QUARTER_Z = (math.sqrt(0.5), 0.0, 0.0, math.sqrt(0.5))  # 90 degrees about z
HALF_Z = (0.0, 0.0, 0.0, 1.0)


class TestModuleFields:
    def test_L656_time_is_last_matching_input_since_reset(self, agg: RecognitionAggregator) -> None:
        """time runs from the reset to the last matching input; exploring inputs do not count."""
        reset(ts=100.0)
        step(n=1, ts=100.5)
        step(n=2, ts=101.25)
        step(n=3, exploring=True, ts=109.0)

        assert 1.25 == lm_stats(agg.post_episode(ctx())).time

    def test_L659_detected_pose_from_last_recognition(self, agg: RecognitionAggregator) -> None:
        """Location, Euler rotation (degrees, mod 360), scale and path of the last recognition
        stay after a withdrawal."""
        step()
        recognize(rotation=QUARTER_Z, scale=2.0, path=((1, 2, 3),))
        withdraw()
        s = lm_stats(agg.post_episode(ctx()))

        assert ((0.0, 0.0, 0.0), (0.0, 0.0, 90.0), 2.0, ((1.0, 2.0, 3.0),)) == (
            s.detected_location, s.detected_rotation, s.detected_scale, s.detected_path
        )  # fmt: skip

    def test_D9_never_resolved_pose_is_none(self, agg: RecognitionAggregator) -> None:
        """Without a recognition the detected pose fields are None (empty cells)."""
        step()
        s = lm_stats(agg.post_episode(ctx()))

        assert (None,) * 4 == (
            s.detected_location, s.detected_rotation, s.detected_scale, s.detected_path
        )  # fmt: skip

    def test_L684_symmetry_evidence_for_unrecognised_module(
        self, agg: RecognitionAggregator
    ) -> None:
        """symmetry_evidence is the module's last reported count, recognised or not."""
        step(symmetry=2)
        step(n=2, symmetry=3)

        assert 3 == lm_stats(agg.post_episode(ctx())).symmetry_evidence

    def test_L579_location_rel_body_is_last_input(self, agg: RecognitionAggregator) -> None:
        """location_rel_body is where the last input came from."""
        step(location=(1, 2, 3))
        step(n=2, location=(4, 5, 6))

        assert (4.0, 5.0, 6.0) == lm_stats(agg.post_episode(ctx())).location_rel_body


class TestUnsupervisedStats:
    def test_L691_target_in_possible_matches_is_TP(self, agg: RecognitionAggregator) -> None:
        """A known target among the possible matches' labels: TP."""
        teach(agg, "g0", "mug")
        step(matches=("g0", "g1"))

        assert "target_in_possible_matches_(TP)" == lm_stats(agg.post_episode(ctx())).TFNP

    def test_L691_known_target_not_matched_is_FN(self, agg: RecognitionAggregator) -> None:
        """A known target that no possible match carries: FN."""
        teach(agg, "g0", "mug")
        step(matches=("g1",))

        assert "target_not_matched_(FN)" == lm_stats(agg.post_episode(ctx())).TFNP

    def test_L691_unknown_target_with_matches_is_FP(self, agg: RecognitionAggregator) -> None:
        """An unknown target with possible matches left: FP."""
        teach(agg, "g0", "bowl")
        step(matches=("g0",))

        assert "unknown_object_in_possible_matches_(FP)" == lm_stats(agg.post_episode(ctx())).TFNP

    def test_L691_unknown_target_without_matches_is_TN(self, agg: RecognitionAggregator) -> None:
        """An unknown target and nothing matched: TN."""
        teach(agg, "g0", "bowl")
        step(matches=())

        assert "unknown_object_not_matched_(TN)" == lm_stats(agg.post_episode(ctx())).TFNP

    def test_L691_sources_and_means_over_the_label_map(self, agg: RecognitionAggregator) -> None:
        """possible_match_sources joins the sorted labels with '-'; the means read the map as
        it was before this episode."""
        teach(agg, "g0", "mug")
        teach(agg, "g1", "bowl")
        teach(agg, "g1", "cup")
        step(matches=("g1", "g0"))
        s = lm_stats(agg.post_episode(ctx("mug")))

        assert ("bowl-cup-mug", 1.5, 1.0) == (
            s.possible_match_sources, s.mean_objects_per_graph, s.mean_graphs_per_object
        )  # fmt: skip

    def test_L691_means_are_nan_for_an_empty_map(self, agg: RecognitionAggregator) -> None:
        """Before anything was learned the two means are NaN."""
        step()
        s = lm_stats(agg.post_episode(ctx(mode="eval")))

        assert (True, True) == (
            math.isnan(s.mean_objects_per_graph),
            math.isnan(s.mean_graphs_per_object),
        )

    def test_D5_unknown_graph_is_confused_not_an_error(self, agg: RecognitionAggregator) -> None:
        """A recognised graph with no labels is confused (Monty raises KeyError)."""
        step(matches=("ghost",))
        recognize(graph="ghost")
        s = lm_stats(agg.post_episode(ctx(mode="eval")))

        assert ("confused", "confused", "unknown_object_in_possible_matches_(FP)", "") == (
            s.primary_performance, s.individual_ts_performance, s.TFNP, s.possible_match_sources
        )  # fmt: skip


class TestEvidenceModules:
    def test_L788_most_likely_fields_from_last_hypothesis(self, agg: RecognitionAggregator) -> None:
        """The last hypothesis gives the most-likely object, location, Euler rotation, evidence."""
        reset(evidence=True)
        step()
        mlh(graph="g1", evidence=0.5)
        mlh(graph="g0", rotation=QUARTER_Z, evidence=2.5)
        s = lm_stats(agg.post_episode(ctx()))

        assert ("g0", (0.0, 0.0, 0.0), 2.5) == (
            s.most_likely_object, s.most_likely_location, s.highest_evidence
        )  # fmt: skip
        assert pytest.approx((0.0, 0.0, 90.0)) == s.most_likely_rotation

    def test_L788_no_hypothesis_defaults(self, agg: RecognitionAggregator) -> None:
        """An evidence module without a hypothesis reports Monty's reset values (its evidence
        the int 0, as Monty's, so the CSV writes it as pandas does)."""
        reset(evidence=True)
        s = lm_stats(agg.post_episode(ctx()))

        assert ("no_observations_yet", (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 0, int) == (
            s.most_likely_object, s.most_likely_location, s.most_likely_rotation, s.highest_evidence,
            type(s.highest_evidence),
        )  # fmt: skip

    def test_L794_episode_avg_prediction_error_mean(self, agg: RecognitionAggregator) -> None:
        """The mean of the hypotheses' prediction errors, those without one left out."""
        reset(evidence=True)
        step()
        mlh(error=0.25)
        mlh()
        mlh(error=0.75)

        assert 0.5 == lm_stats(agg.post_episode(ctx())).episode_avg_prediction_error

    def test_L794_episode_avg_prediction_error_nan_when_none(
        self, agg: RecognitionAggregator
    ) -> None:
        """Without prediction errors the average is NaN (numpy's mean of nothing)."""
        reset(evidence=True)
        step()
        mlh()
        s = lm_stats(agg.post_episode(ctx()))

        assert s.episode_avg_prediction_error is not None and math.isnan(
            s.episode_avg_prediction_error
        )

    @pytest.mark.parametrize("matches", [("g0", "g1"), ("g0",)], ids=["time_out", "pose_time_out"])
    def test_L838_time_out_with_labelled_hypothesis_is_correct_mlh(
        self, agg: RecognitionAggregator, matches: tuple[str, ...]
    ) -> None:
        """A time-out (or pose time-out) whose hypothesis carries the target is correct_mlh."""
        teach(agg, "g0", "mug")
        reset(evidence=True)
        step(matches=matches)
        mlh(graph="g0", rotation=QUARTER_Z)
        timeout(matches=matches)
        s = lm_stats(agg.post_episode(ctx()))

        assert ("correct_mlh", 90.0) == (s.primary_performance, s.rotation_error)

    def test_L840_time_out_with_other_hypothesis_is_confused_mlh(
        self, agg: RecognitionAggregator
    ) -> None:
        """A time-out whose hypothesis carries another label is confused_mlh."""
        teach(agg, "g1", "bowl")
        reset(evidence=True)
        step()
        mlh(graph="g1")
        timeout()

        assert "confused_mlh" == verdict(agg.post_episode(ctx("mug")))

    def test_L798_stepwise_mlh_uses_stepwise_label(self, agg: RecognitionAggregator) -> None:
        """The stepwise verdict of a time-out judges the hypothesis against the stepwise target."""
        teach(agg, "g1", "bowl")
        reset(evidence=True)
        step()
        mlh(graph="g1")
        timeout()
        s = lm_stats(agg.post_episode(ctx("mug", stepwise_target="bowl")))

        assert ("confused_mlh", "correct_mlh") == (s.primary_performance, s.stepwise_performance)

    def test_D2_evidence_module_without_hypothesis_keeps_time_out(
        self, agg: RecognitionAggregator
    ) -> None:
        """An evidence module that timed out without a hypothesis stays time_out (Monty raises)."""
        reset(evidence=True)
        step(exploring=True)
        timeout()
        s = lm_stats(agg.post_episode(ctx()))

        assert ("time_out", "time_out") == (s.primary_performance, s.stepwise_performance)

    def test_L813_confused_with_child_graph_id_is_consistent_child(
        self, agg: RecognitionAggregator
    ) -> None:
        """A confused recognition whose hypothesis graph id is a child name: consistent_child_obj."""
        teach(agg, "g0", "bowl")
        reset(evidence=True)
        step()
        mlh(graph="handle")
        recognize(graph="g0")

        assert "consistent_child_obj" == verdict(
            agg.post_episode(ctx("mug", consistent_child_labels=["handle"]))
        )

    def test_L813_confused_mlh_with_child_graph_id_is_consistent_child(
        self, agg: RecognitionAggregator
    ) -> None:
        """A confused_mlh whose hypothesis graph id is a child name: consistent_child_obj."""
        reset(evidence=True)
        step()
        mlh(graph="handle")
        timeout()

        assert "consistent_child_obj" == verdict(
            agg.post_episode(ctx("mug", consistent_child_labels=["handle"]))
        )

    def test_L815_empty_children_leave_confused(self, agg: RecognitionAggregator) -> None:
        """Without child labels a confused_mlh stays confused_mlh."""
        reset(evidence=True)
        step()
        mlh(graph="handle")
        timeout()

        assert "confused_mlh" == verdict(agg.post_episode(ctx("mug")))

    def test_L816_child_compared_by_graph_id_not_label(self, agg: RecognitionAggregator) -> None:
        """A hypothesis graph labelled with the child name, but named otherwise, stays confused."""
        teach(agg, "g2", "handle")
        reset(evidence=True)
        step()
        mlh(graph="g2")
        timeout()

        assert "confused_mlh" == verdict(
            agg.post_episode(ctx("mug", consistent_child_labels=["handle"]))
        )

    def test_L754_non_evidence_module_ignores_hypotheses(self, agg: RecognitionAggregator) -> None:
        """A module that is not evidence-based keeps time_out, and its confusion is no child."""
        teach(agg, "handle", "mug")
        reset(evidence=False)
        step()
        mlh(graph="handle")
        timeout()
        s = lm_stats(agg.post_episode(ctx("mug", consistent_child_labels=["handle"])))

        assert ("time_out", None) == (s.primary_performance, s.most_likely_object)


class TestPoseModules:
    def test_L711_pose_module_reports_possible_poses(self, agg: RecognitionAggregator) -> None:
        """A correct graph module reports the Euler angles and locations of its possible poses."""
        teach(agg, "g0", "mug")
        reset(evidence=False)
        step()
        recognize(
            graph="g0",
            possible_poses=(IDENTITY, QUARTER_Z),
            possible_locations=((1, 1, 1), (2, 2, 2)),
        )
        s = lm_stats(agg.post_episode(ctx()))

        assert (((0.0, 0.0, 0.0), (0.0, 0.0, 90.0)), ((1.0, 1.0, 1.0), (2.0, 2.0, 2.0))) == (
            s.possible_object_poses, s.possible_object_locations
        )  # fmt: skip

    def test_L732_pose_module_time_out_reports_nothing(self, agg: RecognitionAggregator) -> None:
        """A time_out (not a pose time-out) has no possible poses (NaN in Monty: empty)."""
        reset(evidence=False)
        step()
        timeout(possible_poses=(IDENTITY,), possible_locations=((0, 0, 0),))
        s = lm_stats(agg.post_episode(ctx()))

        assert (None, None) == (s.possible_object_poses, s.possible_object_locations)

    def test_evidence_module_has_no_pose_fields(self, agg: RecognitionAggregator) -> None:
        """An evidence module's possible-pose fields stay None, whatever the runtime sent."""
        teach(agg, "g0", "mug")
        reset(evidence=True)
        step()
        recognize(graph="g0", possible_poses=(IDENTITY,), possible_locations=((0, 0, 0),))

        assert lm_stats(agg.post_episode(ctx())).possible_object_poses is None


class TestPolicyAndSystem:
    def test_L774_goal_states_counted(self, agg: RecognitionAggregator) -> None:
        """Goal states attempted and achieved are counted."""
        step()
        goal(achieved=True)
        goal(achieved=False)
        goal(achieved=True)
        s = lm_stats(agg.post_episode(ctx()))

        assert (3, 2) == (s.goal_states_attempted, s.goal_state_achieved)

    def test_L779_no_goal_states_is_zero(self, agg: RecognitionAggregator) -> None:
        """Without goal states both counts are 0."""
        step()
        s = lm_stats(agg.post_episode(ctx()))

        assert (0, 0) == (s.goal_states_attempted, s.goal_state_achieved)

    def test_L761_monty_steps_and_matching_steps_from_system_steps(
        self, agg: RecognitionAggregator
    ) -> None:
        """Every system step counts; matching steps exclude exploring steps and steps that fed
        no module."""
        step()
        system_step(1, ("lm_0",))
        system_step(2, ())
        system_step(3, ("lm_0",), exploring=True)
        system_step(4, ("lm_0",))
        s = lm_stats(agg.post_episode(ctx()))

        assert (4, 2) == (s.monty_steps, s.monty_matching_steps)

    def test_L763_seed_and_target_fields_from_context(self, agg: RecognitionAggregator) -> None:
        """Seed, target object, position, rotation (Euler derived) and scale come from the context."""
        step()
        s = lm_stats(
            agg.post_episode(
                ctx(
                    "mug",
                    seed=7,
                    target_position=(1, 2, 3),
                    target_rotation=QUARTER_Z,
                    target_scale=0.5,
                )
            )
        )

        assert (7, "mug", (1.0, 2.0, 3.0), QUARTER_Z, 0.5) == (
            s.episode_seed, s.primary_target_object, s.primary_target_position,
            s.primary_target_rotation_quat, s.primary_target_scale,
        )  # fmt: skip
        assert pytest.approx((0.0, 0.0, 90.0)) == s.primary_target_rotation_euler

    def test_L763_stated_euler_angles_are_kept(self, agg: RecognitionAggregator) -> None:
        """Euler angles the experiment states are reported as given."""
        step()
        s = lm_stats(agg.post_episode(ctx(target_euler=(10, 20, 30))))

        assert (10.0, 20.0, 30.0) == s.primary_target_rotation_euler

    def test_L768_stepwise_target_no_label_fallback_and_none_without_input(
        self, agg: RecognitionAggregator
    ) -> None:
        """With no stepwise ground truth a module with input gets no_label; without input None."""
        step("lm_0")
        reset("lm_1")
        stats = agg.post_episode(ctx())

        assert ("no_label", None) == (
            lm_stats(stats, "lm_0").stepwise_target_object,
            lm_stats(stats, "lm_1").stepwise_target_object,
        )

    def test_stepwise_target_from_object_under_sensor(self) -> None:
        """ObjectUnderSensor gives each module the label its sensor saw at its last input."""
        agg = RecognitionAggregator(sensor_to_lm={"patch_0": "lm_0", "patch_1": "lm_1"}).subscribe()
        truth = get_telemetry(GROUND_TRUTH_STREAM)
        truth.emit(ObjectUnderSensor(sensor_id="patch_0", step=1, label="mug"))
        truth.emit(ObjectUnderSensor(sensor_id="patch_1", step=1, label="bowl"))
        step("lm_0")
        step("lm_1")
        truth.emit(
            ObjectUnderSensor(sensor_id="patch_0", step=2, label="bowl")
        )  # after lm_0's input
        stats = agg.post_episode(ctx("mug", stepwise_target="cup"))
        agg.close()

        assert ("mug", "bowl") == (
            lm_stats(stats, "lm_0").stepwise_target_object,
            lm_stats(stats, "lm_1").stepwise_target_object,
        )
